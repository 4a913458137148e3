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
)

// lobbyCommand is one line typed in the lobby (see `venue connect --help`).
type lobbyCommand struct {
	verb        string // browse, profile, offer, requests, accept, decline, help, quit
	query       string // browse: the text to look for
	agentID     string // profile; offer: the bouncer
	cents       int64  // offer: the opening amount
	title       string // offer
	negotiation string // accept (may be empty), decline
	reason      string // decline
}

// parseLobbyLine reads one lobby line: nil (and no error) for a blank line.
// A bad line is an error saying how to write it; nothing is sent.
func parseLobbyLine(line string) (*lobbyCommand, error) {
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return nil, nil
	}
	verb, args := strings.ToLower(fields[0]), fields[1:]
	rest := func(from int) string { return strings.Join(args[from:], " ") }
	c := &lobbyCommand{verb: verb}
	switch verb {
	case "browse":
		c.query = rest(0)
	case "profile":
		if len(args) != 1 {
			return nil, errors.New("profile AGENT_ID")
		}
		c.agentID = args[0]
	case "offer":
		if len(args) < 3 {
			return nil, errors.New("offer BOUNCER_ID AMOUNT TITLE (AMOUNT in dollars: 3200 or 3200.50)")
		}
		amount := strings.ReplaceAll(strings.TrimPrefix(args[1], "$"), ",", "")
		cents, err := grants.ParseUSD([]byte(amount))
		if err != nil {
			return nil, fmt.Errorf("offer: the amount %q: %w", args[1], err)
		}
		c.agentID, c.cents, c.title = args[0], cents, rest(2)
		if n := len([]rune(c.title)); n > 200 {
			return nil, fmt.Errorf("offer: a title is at most 200 characters, this one has %d", n)
		}
	case "requests", "help", "quit", "exit":
		if len(args) != 0 {
			return nil, fmt.Errorf("%s takes nothing after it", verb)
		}
		if verb == "exit" {
			c.verb = "quit"
		}
	case "accept":
		if len(args) > 1 {
			return nil, errors.New("accept [NEGOTIATION_ID]")
		}
		if len(args) == 1 {
			c.negotiation = args[0]
		}
	case "decline":
		if len(args) < 1 {
			return nil, errors.New("decline NEGOTIATION_ID [WHY]")
		}
		c.negotiation, c.reason = args[0], rest(1)
		if n := len([]rune(c.reason)); n > 500 {
			return nil, fmt.Errorf("decline: a reason is at most 500 characters, this one has %d", n)
		}
	default:
		return nil, fmt.Errorf("unknown command %q: browse, profile, offer, requests, accept, decline, help or quit", fields[0])
	}
	return c, nil
}

const lobbyHelp = `lobby: browse [TEXT] · profile AGENT_ID · offer BOUNCER_ID AMOUNT TITLE · requests · accept [NEGOTIATION_ID] · decline NEGOTIATION_ID [WHY] · quit`

type lobbyOptions struct {
	arena bool
	json  bool
}

// runLobby runs the lobby from the lines of in until a negotiation goes
// live for this agent (its id is returned), in ends or quit ("").
func runLobby(ctx context.Context, c *client.Client, me client.Profile, in *lineReader, out, stderr *lineWriter, o lobbyOptions) (string, error) {
	lobby, err := c.DialLobby(ctx, me.AgentID)
	if err != nil {
		return "", fmt.Errorf("lobby: %w", err)
	}
	defer func() { _ = lobby.Close() }()
	out.line(fmt.Sprintf("lobby    you are %s (%s, %s). %s", me.Name, me.Role, me.AgentID, lobbyHelp))
	var pending []client.Push // requests to this bouncer, oldest first
	mine := map[string]bool{} // negotiations this brand asked for
	for {
		select {
		case line, ok := <-in.lines:
			if !ok {
				if err := <-in.err; err != nil {
					return "", fmt.Errorf("read stdin: %w", err)
				}
				return "", nil
			}
			cmd, err := parseLobbyLine(line)
			if err != nil {
				stderr.line(fmt.Sprintf("refused, nothing sent: %v", err))
				continue
			}
			if cmd == nil {
				continue
			}
			negID, err := lobbyDo(ctx, lobby, cmd, &pending, mine, out, o)
			if err != nil {
				out.line(lobbyRefusal(cmd.verb, err))
				if errors.Is(err, client.ErrClosed) {
					return "", err
				}
				continue
			}
			if negID != "" || cmd.verb == "quit" {
				return negID, nil
			}
		case p, ok := <-lobby.Pushes():
			if !ok {
				return "", fmt.Errorf("lobby: %w", lobby.Err())
			}
			if o.json {
				out.line(string(compactJSON(p.Raw)))
			}
			switch p.Type {
			case "negotiation_requested":
				pending = append(pending, p)
				if !o.json {
					out.line("request  " + describeRequest(p) + ` (type "accept ` + p.NegotiationID + `" or "decline ` + p.NegotiationID + `")`)
				}
			case "negotiation_accepted":
				if !o.json {
					out.line(fmt.Sprintf("accepted %s: %s took your request; the room is live until %s", p.NegotiationID, partyName(p.Bouncer), p.DeadlineAt))
				}
				if mine[p.NegotiationID] {
					return p.NegotiationID, nil
				}
			case "negotiation_declined":
				pending = slices.DeleteFunc(pending, func(q client.Push) bool { return q.NegotiationID == p.NegotiationID })
				if !o.json {
					out.line(fmt.Sprintf("declined %s: %s", p.NegotiationID, p.Reason))
				}
			default:
				if !o.json && p.Err != nil {
					out.line(fmt.Sprintf("error %s: %s", p.Err.Code, p.Err.Message))
				}
			}
		case <-ctx.Done():
			return "", nil
		}
	}
}

// lobbyDo carries out one command; it returns the negotiation to go into,
// if any.
func lobbyDo(ctx context.Context, lobby *client.Lobby, cmd *lobbyCommand, pending *[]client.Push, mine map[string]bool, out *lineWriter, o lobbyOptions) (string, error) {
	show := func(v any, text string) {
		if o.json {
			b, _ := json.Marshal(v)
			out.line(string(b))
			return
		}
		out.line(text)
	}
	switch cmd.verb {
	case "help":
		out.line(lobbyHelp)
	case "quit":
	case "browse":
		list, err := lobby.BrowseBouncers(ctx, client.BrowseQuery{Q: cmd.query})
		if err != nil {
			return "", err
		}
		lines := []string{fmt.Sprintf("bouncers %d of %d", len(list.Items), list.Total)}
		for _, p := range list.Items {
			lines = append(lines, fmt.Sprintf("  %s  %s  reputation %d  %s  %s", p.AgentID, p.Name, p.Reputation, strings.Join(p.Categories, ","), shorten(p.Description)))
		}
		show(list, strings.Join(lines, "\n"))
	case "profile":
		p, err := lobby.GetProfile(ctx, cmd.agentID)
		if err != nil {
			return "", err
		}
		show(p, fmt.Sprintf("profile  %s  %s (%s)  reputation %d  categories %s  %q", p.AgentID, p.Name, p.Role, p.Reputation, strings.Join(p.Categories, ","), p.Description))
	case "offer":
		off, err := lobby.SubmitOffer(ctx, cmd.agentID, client.Offer{Title: cmd.title, Terms: client.Terms{AmountCents: cmd.cents}}, o.arena)
		if err != nil {
			return "", err
		}
		show(off, fmt.Sprintf("offered  %s to %s: %q at %s", off.OfferID, off.To, cmd.title, FormatUSD(cmd.cents)))
		created, err := lobby.CreateNegotiation(ctx, off.OfferID)
		if err != nil {
			return "", err
		}
		mine[created.NegotiationID] = true
		show(created, fmt.Sprintf("asked    %s: waiting for the bouncer until %s", created.NegotiationID, created.ExpiresAt))
	case "requests":
		if len(*pending) == 0 {
			out.line("requests none")
		}
		for _, p := range *pending {
			out.line("request  " + describeRequest(p))
		}
	case "accept":
		id := cmd.negotiation
		if id == "" {
			if len(*pending) != 1 {
				return "", fmt.Errorf("%d requests are waiting: say which (accept NEGOTIATION_ID)", len(*pending))
			}
			id = (*pending)[0].NegotiationID
		}
		acc, err := lobby.AcceptNegotiation(ctx, id)
		if err != nil {
			return "", err
		}
		show(acc, fmt.Sprintf("accepted %s with %s; the room is live until %s", acc.NegotiationID, acc.Brand.Name, acc.DeadlineAt))
		return acc.NegotiationID, nil
	case "decline":
		d, err := lobby.DeclineNegotiation(ctx, cmd.negotiation, cmd.reason)
		if err != nil {
			return "", err
		}
		*pending = slices.DeleteFunc(*pending, func(q client.Push) bool { return q.NegotiationID == d.NegotiationID })
		show(d, fmt.Sprintf("declined %s: %s", d.NegotiationID, d.Reason))
	}
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

func describeRequest(p client.Push) string {
	var offer struct {
		Title string          `json:"title"`
		Terms json.RawMessage `json:"terms"`
	}
	_ = json.Unmarshal(p.Offer, &offer)
	s := fmt.Sprintf("%s from %s: %q", p.NegotiationID, partyName(p.Brand), offer.Title)
	if len(offer.Terms) > 0 {
		s += " " + describeTerms(offer.Terms)
	}
	if p.Arena {
		s += " (arena)"
	}
	return s + ", lapses " + p.ExpiresAt
}

func partyName(p *client.Party) string {
	if p == nil {
		return "?"
	}
	return fmt.Sprintf("%s (%s, reputation %d)", p.Name, p.AgentID, p.Reputation)
}
