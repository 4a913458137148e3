// Package connect is the terminal agent of `venue connect`: one agent
// played from lines of text, first in the lobby, then in a negotiation
// (PROTOCOL.md "Lobby socket", "Negotiation socket"), everything through
// package client. cmd/venue only parses its flags.
package connect

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/venuehq/venue/client"
	"github.com/venuehq/venue/grants"
	"github.com/venuehq/venue/negotiation"
)

// Options are what Run needs (the flags of `venue connect`).
type Options struct {
	// URL is the venue's base URL; Key the agent's api_key (required).
	URL, Key string
	// Negotiation, if set, joins that negotiation at once (else: the lobby).
	Negotiation string
	// JSON prints the frames as received, one JSON object a line.
	JSON bool
	// Arena makes the lobby's offers arena negotiations at first (the
	// lobby's `arena on|off` changes it).
	Arena bool
	// Since replays the transcript after this seq first (0: all of it,
	// client.NoReplay: none).
	Since int64
	// AckWait bounds the wait for the venue's answer to a line.
	AckWait time.Duration
	// ClientOptions are added to the client's (tests: a dialer).
	ClientOptions []client.Option
}

// Run plays the agent of o.Key from the lines of in until in ends (EOF),
// ctx is done or quit; what arrives goes to out, what the connection does
// (drops, reconnects, refused lines) to errOut. From the lobby, each
// negotiation that goes live with the agent as a party (its request
// accepted, a brief's quote awarded) is gone into, and each that ends (its
// receipt verified and printed) leads back to the lobby, whose socket
// stays open meanwhile; with o.Negotiation, Run ends with that
// negotiation.
func Run(ctx context.Context, o Options, in io.Reader, out, errOut io.Writer) error {
	if o.Key == "" {
		return errors.New("--key is required: the agent's api_key (or VENUE_API_KEY)")
	}
	if o.Since < client.NoReplay {
		return fmt.Errorf("--since %d: want a seq >= 0, or -1 for none", o.Since)
	}
	if o.AckWait <= 0 {
		o.AckWait = 30 * time.Second
	}
	errLine := &lineWriter{w: errOut}
	opts := append([]client.Option{client.WithAPIKey(o.Key), client.WithConnHook(func(e client.ConnEvent) {
		if e.Up {
			errLine.line(fmt.Sprintf("reconnected: the %s socket (%s) is back (reconnect %d)", e.Socket, e.ID, e.Reconnects))
		} else {
			errLine.line(fmt.Sprintf("connection dropped: the %s socket (%s): %v; reconnecting", e.Socket, e.ID, e.Err))
		}
	})}, o.ClientOptions...)
	c, err := client.New(o.URL, opts...)
	if err != nil {
		return err
	}
	me, err := c.Me(ctx)
	if err != nil {
		return fmt.Errorf("who am I (GET /v1/agents/me): %w", err)
	}
	lines := newLineReader(in)
	defer lines.stop()
	w := &lineWriter{w: out}
	if o.Negotiation != "" {
		_, err := runRoom(ctx, o, c, me, o.Negotiation, lines, w, errLine, nil)
		return err
	}
	lobby, err := openLobby(ctx, c, me, w, errLine, o.Arena, o.JSON)
	if err != nil {
		return err
	}
	defer lobby.close()
	for {
		negID, err := lobby.run(lines)
		if err != nil || negID == "" {
			return err
		}
		lobby.room = negID
		ended, err := runRoom(ctx, o, c, me, negID, lines, w, errLine, lobby)
		lobby.room = ""
		if err != nil || !ended {
			return err
		}
	}
}

// lineReader reads stdin one line at a time on its own goroutine, so that
// the lobby and then the room can wait for a line and for the venue at once.
type lineReader struct {
	lines chan string
	err   chan error // the reader's error once lines is closed
	done  chan struct{}
	once  sync.Once
}

// failed is the reader's error once lines is closed (nil at EOF).
func (l *lineReader) failed() error {
	if err := <-l.err; err != nil {
		l.err <- err // for whoever asks next
		return fmt.Errorf("read stdin: %w", err)
	}
	l.err <- nil
	return nil
}

func newLineReader(r io.Reader) *lineReader {
	l := &lineReader{lines: make(chan string), err: make(chan error, 1), done: make(chan struct{})}
	go func() {
		var err error
		defer func() { l.err <- err; close(l.lines) }()
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			select {
			case l.lines <- sc.Text():
			case <-l.done:
				return
			}
		}
		err = sc.Err()
	}()
	return l
}

// stop lets the reader return after its current line.
func (l *lineReader) stop() { l.once.Do(func() { close(l.done) }) }

// runRoom plays negotiation negID from the lines of in until the
// negotiation ends (ended: its receipt is verified and printed) or in does
// (or ctx). The pushes of lobby (nil: none) are printed meanwhile.
func runRoom(ctx context.Context, o Options, c *client.Client, me client.Profile, negID string, in *lineReader, out, stderr *lineWriter, lobby *lobbySession) (ended bool, err error) {
	since := o.Since
	if o.Negotiation == "" {
		since = 0 // a room entered from the lobby: all of it
	}
	room, err := c.DialRoom(ctx, negID, client.RoomOptions{Since: since, AgentID: me.AgentID, IncludeOwn: true})
	if err != nil {
		return false, fmt.Errorf("join %s: %w", negID, err)
	}
	p := &roomPrinter{out: out, json: o.JSON, names: &partyNames{me: me.AgentID}, done: make(chan struct{})}
	// Closing the room closes Events: the printer is done before we return.
	defer func() { _ = room.Close(); <-p.done }()
	go p.print(room.Events())
	var pushes <-chan client.Push
	if lobby != nil {
		pushes = lobby.lobby.Pushes()
	}
	for {
		select {
		case push, ok := <-pushes:
			if !ok {
				pushes = nil // the lobby is gone: said when back there
				continue
			}
			lobby.onPush(push)
		case line, ok := <-in.lines:
			if !ok {
				return false, in.failed() // EOF: a clean end
			}
			if err := p.send(ctx, room, line, o.AckWait, stderr); err != nil {
				return false, err
			}
		case <-p.done:
			if err := room.Err(); err != nil {
				return false, err
			}
			if p.ended {
				printReceipt(ctx, c, negID, out, o.JSON)
			}
			return p.ended, nil // the negotiation ended
		case <-ctx.Done():
			return false, nil
		}
	}
}

// roomPrinter prints a room's events as they come, and the venue's answer
// to each line sent.
type roomPrinter struct {
	out   *lineWriter
	json  bool
	names *partyNames
	// sending is held while a line's frame waits for its answer: the
	// negotiation_ended it may cause is printed after that answer, as it
	// came (other events may print while a frame waits: each line has its
	// seq).
	sending sync.Mutex
	ended   bool          // set before done is closed
	done    chan struct{} // closed when the events end
}

// print prints events until they end.
func (p *roomPrinter) print(events <-chan client.Event) {
	defer close(p.done)
	for ev := range events {
		if ev.Type == client.TypeNegotiationStarted && ev.Context != nil {
			p.names.set(ev.Context)
		}
		line := FormatEvent(ev, p.names.label)
		if p.json {
			line = string(compactJSON(ev.Raw))
		}
		if ev.Type == client.TypeNegotiationEnded {
			p.ended = true
			p.sending.Lock()
			p.out.line(line)
			p.sending.Unlock()
			continue
		}
		p.out.line(line)
	}
}

// send sends the frame of one line and prints the venue's answer; a line
// refused here goes to stderr. It fails when the room is gone.
func (p *roomPrinter) send(ctx context.Context, room *client.Room, line string, ackWait time.Duration, stderr *lineWriter) error {
	f, err := parseConnectorLine(line)
	if err != nil {
		stderr.line(fmt.Sprintf("refused, nothing sent: %v", err))
		return nil
	}
	if f == nil {
		return nil
	}
	p.sending.Lock()
	defer p.sending.Unlock()
	sctx, cancel := context.WithTimeout(ctx, ackWait)
	ack, err := room.Send(sctx, *f)
	cancel()
	p.out.line(formatReply(*f, ack, err, p.json))
	if err != nil && (errors.Is(err, client.ErrClosed) || errors.Is(err, context.DeadlineExceeded)) {
		return fmt.Errorf("%s: %w", f.Type, err)
	}
	return nil
}

// printReceipt fetches the receipt of an ended negotiation, verifies it
// with the venue's keys and the transcript, and prints what it says.
func printReceipt(ctx context.Context, c *client.Client, negID string, out *lineWriter, asJSON bool) {
	claims, tr, err := c.VerifyReceipt(ctx, negID)
	if asJSON {
		m := map[string]any{"type": "receipt", "negotiation_id": negID, "verified": err == nil}
		if err != nil {
			m["error"] = err.Error()
		} else {
			m["status"], m["transcript_frames"], m["head_hash"] = claims.Status, len(tr.Entries), tr.HeadHash
		}
		b, _ := json.Marshal(m)
		out.line(string(b))
		return
	}
	if err != nil {
		out.line(fmt.Sprintf("receipt  NOT verified: %v", err))
		return
	}
	out.line(fmt.Sprintf("receipt  verified: %s, %d transcript frames, head hash %s, signed by the venue (GET /v1/negotiations/%s/receipt)",
		claims.Status, len(tr.Entries), tr.HeadHash, negID))
}

// connectorPrefixes are the prefixes of the published connector and the frames
// they become.
var connectorPrefixes = map[string]string{
	"TERMS":   client.FrameProposeTerms,
	"COUNTER": client.FrameCounterTerms,
	"ACCEPT":  client.FrameAccept,
	"WALK":    client.FrameWalk,
	"REJECT":  client.FrameReject,
	// Beyond the published five:
	"WITHDRAW": client.FrameWithdraw,
	"ESCALATE": client.FrameEscalate,
}

// maxContentChars is the venue's limit on `content`.
const maxContentChars = 4000

// parseConnectorLine turns one line of an agent's output into the frame the
// connector sends: nil (and no error) for a blank line. A known prefix with
// a bad payload is an error and nothing must be sent; a bracketed word that
// is not a known prefix is a message like any other text.
func parseConnectorLine(line string) (*client.Frame, error) {
	text := strings.TrimSpace(line)
	if text == "" {
		return nil, nil
	}
	if strings.HasPrefix(text, "[") {
		if end := strings.IndexByte(text, ']'); end > 1 {
			name, rest := text[1:end], strings.TrimSpace(text[end+1:])
			typ, known := connectorPrefixes[name]
			if !known {
				if _, lower := connectorPrefixes[strings.ToUpper(name)]; lower {
					return nil, fmt.Errorf("[%s]: prefixes are written in capitals, [%s]", name, strings.ToUpper(name))
				}
				return message(text)
			}
			switch typ {
			case client.FrameProposeTerms, client.FrameCounterTerms:
				terms, err := connectorTerms(rest)
				if err != nil {
					return nil, fmt.Errorf("[%s]: %w", name, err)
				}
				return &client.Frame{Type: typ, Terms: terms}, nil
			case client.FrameEscalate:
				if rest == "" {
					return nil, fmt.Errorf("[%s] needs what you ask your principal after it", name)
				}
				f, err := message(rest)
				if err != nil {
					return nil, fmt.Errorf("[%s]: %w", name, err)
				}
				f.Type = typ
				return f, nil
			default:
				if rest != "" {
					return nil, fmt.Errorf("[%s] takes nothing after it, got %q", name, shorten(rest))
				}
				return &client.Frame{Type: typ}, nil
			}
		}
	}
	return message(text)
}

func message(text string) (*client.Frame, error) {
	if n := utf8.RuneCountInString(text); n > maxContentChars {
		return nil, fmt.Errorf("a message is at most %d characters, this one has %d", maxContentChars, n)
	}
	if !utf8.ValidString(text) {
		return nil, errors.New("the line is not valid UTF-8")
	}
	return &client.Frame{Type: client.FrameMessage, Content: text}, nil
}

// connectorTerms checks the payload of [TERMS] and [COUNTER]: exactly one
// JSON object, with amount_usd a number.
func connectorTerms(payload string) (json.RawMessage, error) {
	if payload == "" {
		return nil, errors.New(`terms are missing: write the JSON object right after the prefix, e.g. {"amount_usd":3200}`)
	}
	dec := json.NewDecoder(strings.NewReader(payload))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("terms are not valid JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("terms must be one JSON object with nothing after it")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("terms must be a JSON object, got %s", jsonKind(v))
	}
	amount, ok := obj["amount_usd"]
	if !ok {
		return nil, errors.New("terms need amount_usd (a number of dollars)")
	}
	if _, ok := amount.(json.Number); !ok {
		return nil, fmt.Errorf("amount_usd must be a number, got %s", jsonKind(amount))
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(payload)); err != nil {
		return nil, fmt.Errorf("terms are not valid JSON: %v", err)
	}
	return buf.Bytes(), nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	default:
		return "an object"
	}
}

func shorten(s string) string {
	if utf8.RuneCountInString(s) > 40 {
		return string([]rune(s)[:40]) + "..."
	}
	return s
}

// lineWriter writes whole lines from several goroutines.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) line(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintln(l.w, s)
}

// partyNames labels agent ids by role and name once negotiation_started
// told them.
type partyNames struct {
	mu      sync.Mutex
	me      string
	byAgent map[string]string
}

func (p *partyNames) set(c *client.RoomContext) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.byAgent = map[string]string{c.Brand.AgentID: "brand", c.Bouncer.AgentID: "bouncer"}
}

func (p *partyNames) label(agentID string) string {
	if agentID == "" {
		return "venue"
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	l, ok := p.byAgent[agentID]
	if !ok {
		l = agentID
	}
	if agentID == p.me {
		l += " (you)"
	}
	return l
}

func compactJSON(raw []byte) []byte {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return raw
	}
	return buf.Bytes()
}

// formatReply is the line for the venue's answer to one of our frames.
func formatReply(f client.Frame, ack *client.Ack, err error, asJSON bool) string {
	var sb *client.ScopeBlock
	var ve *client.Error
	switch {
	case errors.As(err, &sb):
		if asJSON {
			return string(compactJSON(sb.Raw))
		}
		return describeScopeBlock(sb)
	case errors.As(err, &ve):
		if asJSON {
			b, _ := json.Marshal(map[string]string{"type": "error", "code": ve.Code, "message": ve.Message})
			return string(b)
		}
		return fmt.Sprintf("error %s: your %s did not land: %s", ve.Code, f.Type, ve.Message)
	case err != nil:
		if asJSON {
			b, _ := json.Marshal(map[string]string{"type": "error", "code": "client", "message": err.Error()})
			return string(b)
		}
		return fmt.Sprintf("error: your %s: %v", f.Type, err)
	}
	if ack == nil { // thinking: nothing comes back
		return "sent " + f.Type
	}
	if asJSON {
		return string(compactJSON(ack.Raw))
	}
	ev := client.Event{
		Type: client.TypeNegotiationMessage, Seq: ack.Seq, At: ack.At, FrameType: ack.FrameType, From: "you",
		Content: f.Content, ProposalID: ack.ProposalID, OfferHash: ack.OfferHash, ExpiresAt: ack.ExpiresAt,
		EscalationID: ack.EscalationID,
	}
	if raw, ok := f.Terms.(json.RawMessage); ok {
		ev.Terms = raw
	}
	return FormatEvent(ev, func(string) string { return "you" }) + "  (landed)"
}

// describeScopeBlock says once what a scope_block refused and why: each
// failed check's own message, which names the limit and the value (the
// block's message sums up the same checks, so it is not repeated); a check
// without one by its name, limit and value.
func describeScopeBlock(sb *client.ScopeBlock) string {
	why := make([]string, 0, len(sb.Checks))
	for _, c := range sb.Checks {
		if c.Message != "" {
			why = append(why, c.Message)
			continue
		}
		why = append(why, fmt.Sprintf("%s (limit %s, got %s)", c.Check, orNone(c.Limit), orNone(c.Got)))
	}
	if len(why) == 0 {
		why = append(why, sb.Message)
	}
	return fmt.Sprintf("scope_block: your %s did not land, nobody saw it: %s", sb.FrameType, strings.Join(why, "; "))
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// FormatEvent renders one event for people: time, seq, who, frame, what.
func FormatEvent(ev client.Event, who func(string) string) string {
	at := "            "
	if t, err := time.Parse(time.RFC3339Nano, ev.At); err == nil {
		at = t.UTC().Format("15:04:05.000")
	}
	seq := "    "
	if ev.Seq > 0 {
		seq = fmt.Sprintf("#%-3d", ev.Seq)
	}
	frame, from := ev.Type, ""
	var what []string
	switch ev.Type {
	case client.TypeNegotiationStarted:
		if c := ev.Context; c != nil {
			if t, err := time.Parse(time.RFC3339Nano, c.StartedAt); err == nil {
				at = t.UTC().Format("15:04:05.000")
			}
			what = describeStart(ev.NegotiationID, c, who)
		}
	case client.TypeNegotiationMessage:
		frame, from, what = ev.FrameType, ev.From, describeMessage(ev)
	case client.TypeAgentThinking:
		from, what = ev.From, []string{"…"}
	default:
		what = describeOther(ev, who)
	}
	label := "venue"
	if from != "" {
		label = who(from)
	}
	return strings.TrimRight(fmt.Sprintf("%s %s %-14s %-14s %s", at, seq, label, frame, strings.Join(what, "  ")), " ")
}

// describeStart is what negotiation_started says: who, arena, turn,
// deadline, what stands, the last seq.
func describeStart(negID string, c *client.RoomContext, who func(string) string) []string {
	what := []string{fmt.Sprintf("negotiation %s: brand %s, bouncer %s", negID, c.Brand.Name, c.Bouncer.Name)}
	if c.Arena {
		what = append(what, "arena")
	}
	if c.Turn != "" {
		what = append(what, "turn: "+who(c.Turn))
	}
	what = append(what, "deadline "+c.DeadlineAt)
	if c.Standing != nil {
		what = append(what, "standing: "+describeTerms(c.Standing.Terms)+" by "+who(c.Standing.By))
	}
	return append(what, fmt.Sprintf("last seq %d", c.LastSeq))
}

// describeMessage is what a party's frame carries.
func describeMessage(ev client.Event) []string {
	var what []string
	if len(ev.Terms) > 0 {
		what = append(what, describeTerms(ev.Terms))
	}
	if ev.Content != "" {
		what = append(what, fmt.Sprintf("%q", ev.Content))
	}
	if ev.ProposalID != "" {
		p := "proposal " + ev.ProposalID
		if ev.ExpiresAt != "" {
			p += " until " + ev.ExpiresAt
		}
		what = append(what, "["+p+"]")
	}
	if ev.EscalationID != "" {
		what = append(what, "[escalation "+ev.EscalationID+"]")
	}
	return what
}

// describeOther is what the venue's own frames say (PROTOCOL.md "What
// everyone else gets", "Private frames"); a type it does not know is shown
// as it came.
func describeOther(ev client.Event, who func(string) string) []string {
	switch ev.Type {
	case client.TypeProposalExpired:
		return []string{fmt.Sprintf("proposal %s by %s expired", ev.ProposalID, who(ev.By))}
	case client.TypeProposalWithdrawn:
		return []string{describeWithdrawn(ev, who)}
	case client.TypeNegotiationEnded:
		what := []string{strings.ToUpper(ev.Status)}
		if ev.By != "" {
			what = append(what, "by "+who(ev.By))
		}
		if len(ev.Terms) > 0 {
			what = append(what, describeTerms(ev.Terms))
		}
		if ev.Reason != "" && ev.Reason != ev.Status {
			what = append(what, "("+ev.Reason+")")
		}
		return what
	case client.TypeEscalationResolved:
		return []string{fmt.Sprintf("escalation %s: %s", ev.EscalationID, ev.Decision)}
	case client.TypeError:
		return []string{ev.Code + ": " + ev.Message}
	case client.TypeScopeBlock:
		return []string{ev.Message}
	default:
		return []string{string(compactJSON(ev.Raw))}
	}
}

// describeWithdrawn is proposal_withdrawn: the venue took a standing
// proposal off the table, on its own account, because the proposer's
// principal revoked the grant it stood on (reason "grant_revoked",
// DELEGATION.md "Revoking without the agent"); the turn does not change.
func describeWithdrawn(ev client.Event, who func(string) string) string {
	why := " (" + ev.Reason + ")"
	switch ev.Reason {
	case negotiation.ReasonGrantRevoked:
		why = ": the proposer's principal revoked the grant it stood on (" + ev.Reason + ")"
	case "":
		why = ""
	}
	return fmt.Sprintf("proposal %s by %s withdrawn by the venue%s; it can no longer be accepted", ev.ProposalID, who(ev.By), why)
}

// describeTerms renders the fields the venue reads: $3,200.00 · primary_slot
// · 2 sends · flight 2026-06-01 to 2026-06-30 · usage rights 90 days ·
// exclusive of fintech for 30 days; other keys are shown as they are.
func describeTerms(raw json.RawMessage) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return string(raw)
	}
	var parts []string
	if t, err := client.ParseTerms(raw); err == nil {
		if _, ok := m["amount_usd"]; ok {
			parts = append(parts, FormatUSD(t.AmountCents))
		}
		if t.Category != "" {
			parts = append(parts, t.Category)
		}
		if t.Sends > 0 {
			parts = append(parts, fmt.Sprintf("%d sends", t.Sends))
		}
		if t.Flight != nil {
			parts = append(parts, "flight "+t.Flight.Start+" to "+t.Flight.End)
		}
		if t.UsageRightsDays != nil {
			parts = append(parts, fmt.Sprintf("usage rights %d days", *t.UsageRightsDays))
		}
		if e := t.Exclusivity; e != nil {
			parts = append(parts, fmt.Sprintf("exclusive of %s for %d days", strings.Join(e.Categories, ", "), e.Days))
		}
	}
	read := []string{"amount_usd", "category", "sends", "flight", "usage_rights_days", "exclusivity"}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !slices.Contains(read, k) {
			parts = append(parts, k+"="+string(compactJSON(m[k])))
		}
	}
	return strings.Join(parts, " · ")
}

// FormatUSD renders cents as $3,200.00 (grants.FormatDollars).
func FormatUSD(cents int64) string { return grants.FormatDollars(cents) }
