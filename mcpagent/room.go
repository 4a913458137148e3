package mcpagent

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/venuehq/venue/client"
	"github.com/venuehq/venue/negotiation"
)

// roomState is one negotiation socket and what it has told: the room as
// negotiation_started showed it, updated by every event and own ack, and
// the feed of its events that wait_events reads.
type roomState struct {
	a      *Agent
	me     string
	room   *client.Room
	events *feed[EventView]
	ready  chan struct{} // closed once negotiation_started arrived
	ended  chan struct{} // closed once negotiation_ended arrived or the socket closed

	mu      sync.Mutex
	ctx     client.RoomContext // current: turn, clocks, standing, status
	known   bool               // ctx was set by negotiation_started
	replay  int64              // ctx.LastSeq at negotiation_started: what it already shows
	turnSeq int64              // the seq the turn fields are from
	tabSeq  int64              // the seq the table (standing) is from
	offer   json.RawMessage
	ending  *client.Event
	closed  bool // Events is closed
	lastErr error
}

// room returns the socket of negotiation id, joining it the first time
// (the whole transcript is replayed into wait_events, less this agent's own
// frames).
func (a *Agent) room(ctx context.Context, id string) (*roomState, error) {
	me, err := a.whoami(ctx)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return nil, client.ErrClosed
	}
	if r, ok := a.rooms[id]; ok {
		a.mu.Unlock()
		return r, r.waitReady(ctx)
	}
	a.mu.Unlock()
	room, err := a.c.DialRoom(ctx, id, client.RoomOptions{Since: 0, AgentID: me.AgentID})
	if err != nil {
		return nil, err
	}
	r := &roomState{a: a, me: me.AgentID, room: room, events: newFeed[EventView](0), ready: make(chan struct{}), ended: make(chan struct{})}
	a.mu.Lock()
	if other, ok := a.rooms[id]; ok || a.closed { // a concurrent call won
		a.mu.Unlock()
		_ = room.Close()
		if ok {
			return other, other.waitReady(ctx)
		}
		return nil, client.ErrClosed
	}
	a.rooms[id] = r
	a.wg.Add(1)
	a.mu.Unlock()
	go func() { defer a.wg.Done(); r.pump() }()
	return r, r.waitReady(ctx)
}

func (r *roomState) waitReady(ctx context.Context) error {
	select {
	case <-r.ready:
		// Joined after the end: the replay brings the ending (and its
		// receipt), which the state should show from the first call.
		r.mu.Lock()
		over := r.ctx.Status != negotiation.StatusPending && r.ctx.Status != negotiation.StatusLive
		r.mu.Unlock()
		if over {
			select {
			case <-r.ended:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	case <-r.room.Done():
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.known {
			return nil
		}
		if err := r.room.Err(); err != nil {
			return err
		}
		return client.ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// pump moves the room's events into the state and the feed. The feed is
// appended under r.mu, so the feed's order is the order applied.
func (r *roomState) pump() {
	for ev := range r.room.Events() {
		r.mu.Lock()
		wasEnded := r.ending != nil
		r.apply(ev)
		if ev.Type != client.TypeNegotiationStarted {
			r.events.add(r.view(ev))
		}
		if !wasEnded && r.ending != nil {
			close(r.ended)
		}
		r.mu.Unlock()
	}
	r.mu.Lock()
	r.closed = true
	r.lastErr = r.room.Err()
	if !r.known {
		close(r.ready)
		r.known = true
	}
	if r.ending == nil {
		close(r.ended)
	}
	r.mu.Unlock()
	r.events.close()
}

// note adds a line about the connection to the events.
func (r *roomState) note(text string) {
	r.events.add(EventView{Type: "connection", Note: text})
}

// apply updates the room as the event says (under r.mu).
func (r *roomState) apply(ev client.Event) {
	switch ev.Type {
	case client.TypeNegotiationStarted:
		if ev.Context != nil {
			r.ctx = *ev.Context
			r.replay, r.turnSeq, r.tabSeq = r.ctx.LastSeq, r.ctx.LastSeq, r.ctx.LastSeq
		}
		r.offer = ev.Offer
		if !r.known {
			r.known = true
			close(r.ready)
		}
		return
	case client.TypeEscalationResolved:
		if r.ending == nil {
			r.setTurn(ev.Turn, ev.TurnDeadlineAt, ev.TurnPaused)
		}
		return
	}
	if ev.Seq <= r.replay && ev.Type != client.TypeNegotiationEnded { // replayed: the context already shows it
		return
	}
	r.ctx.LastSeq = max(r.ctx.LastSeq, ev.Seq)
	switch ev.Type {
	case client.TypeNegotiationMessage:
		r.step(ev.Seq, ev.Turn, ev.TurnDeadlineAt, ev.TurnPaused, ev.FrameType,
			&client.Standing{ProposalID: ev.ProposalID, By: ev.From, Terms: ev.Terms, OfferHash: ev.OfferHash, Seq: ev.Seq, ExpiresAt: ev.ExpiresAt})
	case client.TypeProposalExpired, client.TypeProposalWithdrawn:
		if ev.Seq > r.tabSeq && r.ctx.Standing != nil && r.ctx.Standing.ProposalID == ev.ProposalID {
			r.ctx.Standing, r.tabSeq = nil, ev.Seq
		}
	case client.TypeNegotiationEnded:
		// Also when replayed (a session that joins after the end): the
		// context shows the status, only the event carries the ending and
		// its receipt.
		e := ev
		r.ending = &e
		r.ctx.Status = ev.Status
		r.ctx.Turn, r.ctx.TurnDeadlineAt, r.ctx.TurnPaused = "", "", false
	}
}

// step applies a landed frame of seq (an event or an own ack): the turn
// after it and what it did to the table, each unless something later was
// already applied (an ack may be read before an earlier event).
func (r *roomState) step(seq int64, turn, deadline string, paused bool, frameType string, proposal *client.Standing) {
	if seq > r.turnSeq && r.ending == nil { // after the end nobody is on turn
		r.setTurn(turn, deadline, paused)
		r.turnSeq = seq
	}
	if seq <= r.tabSeq {
		return
	}
	switch frameType {
	case client.FrameProposeTerms, client.FrameCounterTerms:
		r.ctx.Standing, r.tabSeq = proposal, seq
	case client.FrameAccept, client.FrameReject, client.FrameWithdraw:
		r.ctx.Standing, r.tabSeq = nil, seq
	}
}

func (r *roomState) setTurn(turn, deadline string, paused bool) {
	if turn != "" {
		r.ctx.Turn = turn
	}
	r.ctx.TurnDeadlineAt, r.ctx.TurnPaused = deadline, paused
}

// acked updates the room with the ack of this agent's own frame f.
func (r *roomState) acked(f client.Frame, ack *client.Ack) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ctx.LastSeq = max(r.ctx.LastSeq, ack.Seq)
	terms, _ := json.Marshal(f.Terms)
	r.step(ack.Seq, ack.Turn, ack.TurnDeadlineAt, ack.TurnPaused, ack.FrameType,
		&client.Standing{ProposalID: ack.ProposalID, By: r.me, Terms: terms, OfferHash: ack.OfferHash, Seq: ack.Seq, ExpiresAt: ack.ExpiresAt})
}

// who names an agent id from this agent's side: "you", "them" or "venue".
func (r *roomState) who(id string) string {
	switch id {
	case "":
		return "venue"
	case r.me:
		return "you"
	}
	return "them"
}

// EventView is one event as wait_events shows it: who did what, money in
// cents, the turn after it. What a party said with its frame is in Said,
// labelled with whose words they are.
type EventView struct {
	Type         string          `json:"type"` // negotiation_message, proposal_expired, negotiation_ended, escalation_resolved, agent_thinking, error, connection
	Seq          int64           `json:"seq,omitempty"`
	At           string          `json:"at,omitempty"`
	From         string          `json:"from,omitempty"` // you, them, venue
	FrameType    string          `json:"frame_type,omitempty"`
	Said         *Quoted         `json:"said,omitempty"`
	AmountCents  *int64          `json:"amount_cents,omitempty"`
	Terms        json.RawMessage `json:"terms,omitempty"`
	ProposalID   string          `json:"proposal_id,omitempty"`
	OfferHash    string          `json:"offer_hash,omitempty"`
	ExpiresAt    string          `json:"expires_at,omitempty"`
	Turn         string          `json:"turn,omitempty"` // you, them
	Status       string          `json:"status,omitempty"`
	By           string          `json:"by,omitempty"`
	Reason       string          `json:"reason,omitempty"`
	EscalationID string          `json:"escalation_id,omitempty"`
	Decision     string          `json:"decision,omitempty"`
	Code         string          `json:"code,omitempty"`
	Note         string          `json:"note,omitempty"`
}

func (r *roomState) view(ev client.Event) EventView {
	v := EventView{Type: ev.Type, Seq: ev.Seq, At: ev.At, FrameType: ev.FrameType, Terms: ev.Terms,
		ProposalID: ev.ProposalID, OfferHash: ev.OfferHash, ExpiresAt: ev.ExpiresAt, Status: ev.Status, Reason: ev.Reason,
		EscalationID: ev.EscalationID, Decision: ev.Decision, Code: ev.Code}
	if ev.From != "" {
		v.From = r.who(ev.From)
	}
	if ev.Content != "" {
		who := v.From
		if who == "" || who == "venue" {
			who = "them"
		}
		v.Said = quote(who, ev.Content)
	}
	if ev.By != "" {
		v.By = r.who(ev.By)
	}
	if ev.Turn != "" {
		v.Turn = r.who(ev.Turn)
	}
	if len(ev.Terms) > 0 {
		if t, err := client.ParseTerms(ev.Terms); err == nil {
			v.AmountCents = &t.AmountCents
		}
	}
	if ev.Type == client.TypeError || ev.Type == client.TypeScopeBlock {
		v.Note = ev.Message
	}
	return v
}

// StateView is what room_state returns.
type StateView struct {
	NegotiationID       string        `json:"negotiation_id"`
	Status              string        `json:"status"` // live, deal, walked, turn_missed, expired
	You                 string        `json:"you"`    // brand or bouncer
	Brand               client.Party  `json:"brand"`
	Bouncer             client.Party  `json:"bouncer"`
	Arena               bool          `json:"arena"`
	Offer               *OfferView    `json:"offer,omitempty"`
	Turn                string        `json:"turn,omitempty"` // you, them
	TurnDeadlineAt      string        `json:"turn_deadline_at,omitempty"`
	TurnSecondsLeft     *int64        `json:"turn_seconds_left,omitempty"`
	TurnPaused          bool          `json:"turn_paused,omitempty"`
	DeadlineAt          string        `json:"deadline_at"`
	DeadlineSecondsLeft *int64        `json:"deadline_seconds_left,omitempty"`
	Standing            *StandingView `json:"standing,omitempty"` // absent: the table is empty
	LastSeq             int64         `json:"last_seq"`
	UnreadEvents        int           `json:"unread_events"` // events this MCP session has not had from wait_events
	Ending              *EventView    `json:"ending,omitempty"`
	Receipt             string        `json:"receipt,omitempty"`
	ConnectionLost      string        `json:"connection_lost,omitempty"`
}

// StandingView is the proposal on the table.
type StandingView struct {
	ProposalID       string          `json:"proposal_id"`
	By               string          `json:"by"` // you, them
	AmountCents      *int64          `json:"amount_cents,omitempty"`
	Terms            json.RawMessage `json:"terms"`
	OfferHash        string          `json:"offer_hash"`
	ExpiresAt        string          `json:"expires_at,omitempty"`
	ExpiresInSeconds *int64          `json:"expires_in_seconds,omitempty"`
}

// state is the room now, as reader (an MCP session) sees it.
func (r *roomState) state(reader string) StateView {
	now := r.a.clk.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.ctx
	v := StateView{NegotiationID: r.room.NegotiationID(), Status: c.Status, Brand: c.Brand, Bouncer: c.Bouncer, Arena: c.Arena,
		TurnDeadlineAt: c.TurnDeadlineAt, TurnPaused: c.TurnPaused, DeadlineAt: c.DeadlineAt,
		LastSeq: c.LastSeq, UnreadEvents: r.events.unread(reader)}
	v.You = "bouncer"
	offerFrom := "them"
	if c.Brand.AgentID == r.me {
		v.You, offerFrom = "brand", "you"
	}
	v.Offer = offerView(r.offer, offerFrom)
	if c.Turn != "" {
		v.Turn = r.who(c.Turn)
	}
	v.TurnSecondsLeft = secondsLeft(now, c.TurnDeadlineAt)
	if c.Status == "live" {
		v.DeadlineSecondsLeft = secondsLeft(now, c.DeadlineAt)
	}
	if s := c.Standing; s != nil {
		sv := &StandingView{ProposalID: s.ProposalID, By: r.who(s.By), Terms: s.Terms, OfferHash: s.OfferHash, ExpiresAt: s.ExpiresAt,
			ExpiresInSeconds: secondsLeft(now, s.ExpiresAt)}
		if t, err := client.ParseTerms(s.Terms); err == nil {
			sv.AmountCents = &t.AmountCents
		}
		v.Standing = sv
	}
	if r.ending != nil {
		e := r.view(*r.ending)
		v.Ending = &e
		v.Receipt = r.ending.Receipt
		v.Turn, v.TurnDeadlineAt, v.TurnSecondsLeft, v.TurnPaused = "", "", nil, false
	}
	if r.closed && r.lastErr != nil {
		v.ConnectionLost = r.lastErr.Error()
	}
	return v
}

// secondsLeft is the whole seconds from now to an RFC 3339 time, at least
// 0; nil for no time.
func secondsLeft(now time.Time, at string) *int64 {
	t, err := time.Parse(time.RFC3339Nano, at)
	if err != nil {
		return nil
	}
	n := int64(max(t.Sub(now), 0) / time.Second)
	return &n
}
