package connect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/venuehq/venue/client"
	"github.com/venuehq/venue/grants"
	"github.com/venuehq/venue/negotiation"
)

// lobbyCommand is one line typed in the lobby (see `venue connect --help`).
type lobbyCommand struct {
	verb        string // a key of lobbyVerbs
	query       string // browse: the text to look for
	agentID     string // profile; offer: the bouncer
	cents       int64  // offer: the opening amount
	title       string // offer
	negotiation string // accept (may be empty), decline
	reason      string // decline
	mode        string // arena: "on", "off", or "" to ask
}

// lobbyVerb is one entry of the lobby's command table: how its line is
// read (args are the words after the verb, rest joins them from a word
// on), who may use it and what it does. Help and the unknown-command error
// derive from the table.
type lobbyVerb struct {
	usage string
	// role is the one role the verb is for (negotiation.RoleBrand or
	// RoleBouncer; "" any): the venue refuses the others (PROTOCOL.md
	// "Lobby socket"), so connect neither lists nor sends it for them.
	role  string
	parse func(c *lobbyCommand, args []string, rest func(int) string) error
	do    func(s *lobbySession, c *lobbyCommand) (string, error) // nil: help
}

// lobbyOrder is the order the verbs are listed in.
var lobbyOrder = []string{"browse", "profile", "offer", "requests", "accept", "decline", "arena", "help", "quit"}

// lobbyVerbs is the lobby's command table.
var lobbyVerbs = map[string]lobbyVerb{
	"browse": {usage: "browse [TEXT]", do: (*lobbySession).browse,
		parse: func(c *lobbyCommand, _ []string, rest func(int) string) error { c.query = rest(0); return nil }},
	"profile": {usage: "profile AGENT_ID", do: (*lobbySession).profile,
		parse: func(c *lobbyCommand, args []string, _ func(int) string) error {
			if len(args) != 1 {
				return errors.New("profile AGENT_ID")
			}
			c.agentID = args[0]
			return nil
		}},
	"offer":    {usage: "offer BOUNCER_ID AMOUNT TITLE", role: negotiation.RoleBrand, do: (*lobbySession).offer, parse: parseOffer},
	"requests": {usage: "requests", role: negotiation.RoleBouncer, do: (*lobbySession).requests, parse: noArgs("requests")},
	"accept": {usage: "accept [NEGOTIATION_ID]", role: negotiation.RoleBouncer, do: (*lobbySession).accept,
		parse: func(c *lobbyCommand, args []string, _ func(int) string) error {
			if len(args) > 1 {
				return errors.New("accept [NEGOTIATION_ID]")
			}
			if len(args) == 1 {
				c.negotiation = args[0]
			}
			return nil
		}},
	"decline": {usage: "decline NEGOTIATION_ID [WHY]", role: negotiation.RoleBouncer, do: (*lobbySession).decline,
		parse: func(c *lobbyCommand, args []string, rest func(int) string) error {
			if len(args) < 1 {
				return errors.New("decline NEGOTIATION_ID [WHY]")
			}
			c.negotiation, c.reason = args[0], rest(1)
			if n := len([]rune(c.reason)); n > 500 {
				return fmt.Errorf("decline: a reason is at most 500 characters, this one has %d", n)
			}
			return nil
		}},
	"arena": {usage: "arena [on|off]", role: negotiation.RoleBrand, do: (*lobbySession).arena,
		parse: func(c *lobbyCommand, args []string, _ func(int) string) error {
			if len(args) > 1 || (len(args) == 1 && args[0] != "on" && args[0] != "off") {
				return errors.New("arena on, arena off, or arena to see which")
			}
			if len(args) == 1 {
				c.mode = args[0]
			}
			return nil
		}},
	"help": {usage: "help", parse: noArgs("help")}, // onLine answers it from the table
	"quit": {usage: "quit", do: func(*lobbySession, *lobbyCommand) (string, error) { return "", nil }, parse: noArgs("quit")},
}

func noArgs(verb string) func(*lobbyCommand, []string, func(int) string) error {
	return func(_ *lobbyCommand, args []string, _ func(int) string) error {
		if len(args) != 0 {
			return fmt.Errorf("%s takes nothing after it", verb)
		}
		return nil
	}
}

func parseOffer(c *lobbyCommand, args []string, rest func(int) string) error {
	if len(args) < 3 {
		return errors.New("offer BOUNCER_ID AMOUNT TITLE (AMOUNT in dollars: 3200 or 3200.50)")
	}
	amount := strings.ReplaceAll(strings.TrimPrefix(args[1], "$"), ",", "")
	cents, err := grants.ParseUSD([]byte(amount))
	if err != nil {
		return fmt.Errorf("offer: the amount %q: %w", args[1], err)
	}
	c.agentID, c.cents, c.title = args[0], cents, rest(2)
	if n := len([]rune(c.title)); n > 200 {
		return fmt.Errorf("offer: a title is at most 200 characters, this one has %d", n)
	}
	return nil
}

// parseLobbyLine reads one lobby line of an agent of role: nil (and no
// error) for a blank line. A bad line, or a verb for the other role, is an
// error saying why; nothing is sent.
func parseLobbyLine(line, role string) (*lobbyCommand, error) {
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return nil, nil
	}
	verb, args := strings.ToLower(fields[0]), fields[1:]
	if verb == "exit" {
		verb = "quit"
	}
	v, ok := lobbyVerbs[verb]
	if !ok {
		return nil, fmt.Errorf("unknown command %q: %s", fields[0], strings.Join(verbsFor(role), ", "))
	}
	if !v.isFor(role) {
		return nil, fmt.Errorf("%s is for %ss; you are a %s", verb, v.role, role)
	}
	c := &lobbyCommand{verb: verb}
	if err := v.parse(c, args, func(from int) string { return strings.Join(args[from:], " ") }); err != nil {
		return nil, err
	}
	return c, nil
}

// isFor says whether an agent of role may use the verb; an agent of a role
// connect does not know may use all of them (the venue decides).
func (v lobbyVerb) isFor(role string) bool {
	return v.role == "" || v.role == role || (role != negotiation.RoleBrand && role != negotiation.RoleBouncer)
}

// verbsFor is the verbs of the table an agent of role may use, in order.
func verbsFor(role string) []string {
	return slices.DeleteFunc(slices.Clone(lobbyOrder), func(v string) bool { return !lobbyVerbs[v].isFor(role) })
}

// lobbyHelp lists the commands of the table an agent of role may use.
func lobbyHelp(role string) string {
	var usages []string
	for _, v := range verbsFor(role) {
		usages = append(usages, lobbyVerbs[v].usage)
	}
	return "lobby: " + strings.Join(usages, " · ")
}

// lobbySession is the lobby of one Run: its socket, open from the start to
// the end, also while a negotiation is played (so a push that comes then,
// such as the brief_closed that follows an award, is printed too); the
// requests waiting (to a bouncer), the negotiations asked for (by a
// brand), the briefs received (by a bouncer), and the negotiations that
// went live with this agent as a party, to go into.
type lobbySession struct {
	ctx         context.Context
	me          client.Profile
	lobby       *client.Lobby
	out, stderr *lineWriter
	arenaOn     bool // offers are arena negotiations; `arena on|off` changes it
	json        bool
	pending     []client.Push          // requests to this bouncer, oldest first
	mine        map[string]bool        // negotiations this brand asked for here
	briefs      map[string]client.Push // brief_received by offer_id, until its brief_closed
	room        string                 // the negotiation being played ("": none)
	live        []liveNegotiation      // gone live for this agent, not entered yet, oldest first
	entered     map[string]bool        // negotiations gone into, or in live
	greeted     bool                   // the lobby's first line was printed
}

// liveNegotiation is a negotiation that went live for this agent, to go
// into: during is the one played when it did ("": none).
type liveNegotiation struct{ negotiation, during string }

// openLobby opens the lobby socket of me for the life of a Run (close
// closes it); arena is how offers start (--arena).
func openLobby(ctx context.Context, c *client.Client, me client.Profile, out, stderr *lineWriter, arena, asJSON bool) (*lobbySession, error) {
	lobby, err := c.DialLobby(ctx, me.AgentID)
	if err != nil {
		return nil, fmt.Errorf("lobby: %w", err)
	}
	return &lobbySession{ctx: ctx, me: me, lobby: lobby, out: out, stderr: stderr, arenaOn: arena, json: asJSON,
		mine: map[string]bool{}, briefs: map[string]client.Push{}, entered: map[string]bool{}}, nil
}

func (s *lobbySession) close() { _ = s.lobby.Close() }

// run runs the lobby from the lines of in until a negotiation goes live
// for this agent (its id is returned: the room to go into), in ends or
// quit (""). A negotiation that went live while another was played is
// returned at once.
func (s *lobbySession) run(in *lineReader) (string, error) {
	if !s.greeted {
		s.greeted = true
		s.out.line(fmt.Sprintf("lobby    you are %s (%s, %s); %s. %s", s.me.Name, s.me.Role, s.me.AgentID, s.applies(), lobbyHelp(s.me.Role)))
	} else {
		s.out.line(fmt.Sprintf("lobby    back in the lobby as %s; %s (help: the commands)", s.me.Name, s.applies()))
	}
	for {
		if negID := s.next(); negID != "" {
			return negID, nil
		}
		select {
		case line, ok := <-in.lines:
			if !ok {
				return "", in.failed()
			}
			negID, done, err := s.onLine(line)
			if done || err != nil {
				if negID != "" { // accepted here
					s.entered[negID] = true
				}
				return negID, err
			}
		case p, ok := <-s.lobby.Pushes():
			if !ok {
				return "", fmt.Errorf("lobby: %w", s.lobby.Err())
			}
			s.onPush(p)
		case <-s.ctx.Done():
			return "", nil
		}
	}
}

// next takes the negotiation to go into next off the queue ("": none); one
// that went live while another was played is said.
func (s *lobbySession) next() string {
	if len(s.live) == 0 {
		return ""
	}
	negID, since := s.live[0].negotiation, s.live[0].during
	s.live = s.live[1:]
	if since != "" {
		s.out.line(fmt.Sprintf("lobby    on into %s, live since you were in %s", negID, since))
	}
	return negID
}

// goLive notes that negotiation negID went live with this agent as a
// party: it is gone into next, unless it already was or is queued.
func (s *lobbySession) goLive(negID string) {
	if negID == "" || s.entered[negID] {
		return
	}
	s.entered[negID] = true
	s.live = append(s.live, liveNegotiation{negotiation: negID, during: s.room})
}

// applies says what the lobby does for this agent's role: a bouncer is
// sent requests and briefs; a brand's offers ask for live or arena
// negotiations.
func (s *lobbySession) applies() string {
	if s.me.Role == negotiation.RoleBouncer {
		return "requests and briefs to you are printed as they come"
	}
	return "offers are " + s.mode()
}

// mode says which negotiations the lobby's offers ask for.
func (s *lobbySession) mode() string {
	if s.arenaOn {
		return "arena practice (arena off: live)"
	}
	return "live (arena on: practice)"
}

// onLine carries out one line: done when the lobby is left (for negID, or
// by quit); err when the lobby's socket is gone.
func (s *lobbySession) onLine(line string) (negID string, done bool, err error) {
	cmd, err := parseLobbyLine(line, s.me.Role)
	if err != nil {
		s.stderr.line(fmt.Sprintf("refused, nothing sent: %v", err))
		return "", false, nil
	}
	if cmd == nil {
		return "", false, nil
	}
	if cmd.verb == "help" {
		s.out.line(lobbyHelp(s.me.Role))
		return "", false, nil
	}
	negID, err = lobbyVerbs[cmd.verb].do(s, cmd)
	if err != nil {
		s.out.line(lobbyRefusal(cmd.verb, err))
		if errors.Is(err, client.ErrClosed) {
			return "", true, err
		}
		return "", false, nil
	}
	return negID, negID != "" || cmd.verb == "quit", nil
}

func (s *lobbySession) dropPending(negID string) {
	s.pending = slices.DeleteFunc(s.pending, func(q client.Push) bool { return q.NegotiationID == negID })
}

// show prints v as JSON (--json) or text.
func (s *lobbySession) show(v any, text string) {
	if s.json {
		b, _ := json.Marshal(v)
		s.out.line(string(b))
		return
	}
	s.out.line(text)
}

func (s *lobbySession) arena(cmd *lobbyCommand) (string, error) {
	if cmd.mode != "" {
		s.arenaOn = cmd.mode == "on"
	}
	s.show(map[string]any{"type": "arena", "arena": s.arenaOn}, "arena    offers are "+s.mode())
	return "", nil
}

func (s *lobbySession) browse(cmd *lobbyCommand) (string, error) {
	list, err := s.lobby.BrowseBouncers(s.ctx, client.BrowseQuery{Q: cmd.query})
	if err != nil {
		return "", err
	}
	lines := []string{fmt.Sprintf("bouncers %d of %d", len(list.Items), list.Total)}
	for _, p := range list.Items {
		lines = append(lines, fmt.Sprintf("  %s  %s  reputation %d  %s  %s", p.AgentID, p.Name, p.Reputation, strings.Join(p.Categories, ","), shorten(p.Description)))
	}
	s.show(list, strings.Join(lines, "\n"))
	return "", nil
}

func (s *lobbySession) profile(cmd *lobbyCommand) (string, error) {
	p, err := s.lobby.GetProfile(s.ctx, cmd.agentID)
	if err != nil {
		return "", err
	}
	s.show(p, fmt.Sprintf("profile  %s  %s (%s)  reputation %d  categories %s  %q", p.AgentID, p.Name, p.Role, p.Reputation, strings.Join(p.Categories, ","), p.Description))
	return "", nil
}

func (s *lobbySession) offer(cmd *lobbyCommand) (string, error) {
	off, err := s.lobby.SubmitOffer(s.ctx, cmd.agentID, client.Offer{Title: cmd.title, Terms: client.Terms{AmountCents: cmd.cents}}, s.arenaOn)
	if err != nil {
		return "", err
	}
	kind := "live"
	if s.arenaOn {
		kind = "arena"
	}
	s.show(off, fmt.Sprintf("offered  %s to %s: %q at %s (%s)", off.OfferID, off.To, cmd.title, FormatUSD(cmd.cents), kind))
	created, err := s.lobby.CreateNegotiation(s.ctx, off.OfferID)
	if err != nil {
		return "", err
	}
	s.mine[created.NegotiationID] = true
	s.show(created, fmt.Sprintf("asked    %s: waiting for the bouncer until %s", created.NegotiationID, created.ExpiresAt))
	return "", nil
}

func (s *lobbySession) requests(*lobbyCommand) (string, error) {
	if len(s.pending) == 0 {
		s.out.line("requests none")
	}
	for _, p := range s.pending {
		s.out.line("request  " + describeRequest(p))
	}
	return "", nil
}

func (s *lobbySession) accept(cmd *lobbyCommand) (string, error) {
	id := cmd.negotiation
	if id == "" {
		if len(s.pending) != 1 {
			return "", fmt.Errorf("%d requests are waiting: say which (accept NEGOTIATION_ID)", len(s.pending))
		}
		id = s.pending[0].NegotiationID
	}
	acc, err := s.lobby.AcceptNegotiation(s.ctx, id)
	if err != nil {
		return "", err
	}
	s.dropPending(id)
	s.show(acc, fmt.Sprintf("accepted %s with %s; the room is live until %s", acc.NegotiationID, acc.Brand.Name, acc.DeadlineAt))
	return acc.NegotiationID, nil
}

func (s *lobbySession) decline(cmd *lobbyCommand) (string, error) {
	d, err := s.lobby.DeclineNegotiation(s.ctx, cmd.negotiation, cmd.reason)
	if err != nil {
		return "", err
	}
	s.dropPending(d.NegotiationID)
	s.show(d, fmt.Sprintf("declined %s: %s", d.NegotiationID, d.Reason))
	return "", nil
}

// lobbyRefusal is the line for a lobby command the venue (or the
// connection) refused.
func lobbyRefusal(verb string, err error) string {
	var ve *client.Error
	if errors.As(err, &ve) {
		return fmt.Sprintf("error %s: %s was refused: %s", ve.Code, verb, ve.Message)
	}
	return fmt.Sprintf("error: %s: %v", verb, err)
}
