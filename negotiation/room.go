package negotiation

import (
	"encoding/json"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/gowebpki/jcs"

	"github.com/venuehq/venue/grants"
	"github.com/venuehq/venue/settlement"
	"github.com/venuehq/venue/wire"
)

// Entry is one transcript frame: its seq, the frame as stored and hashed, and
// the chain hash (PROTOCOL.md "Transcript, offer hash and chain hash").
type Entry struct {
	Seq   int64           `json:"seq"`
	Frame json.RawMessage `json:"frame"`
	Hash  string          `json:"hash"`
	At    time.Time       `json:"-"`
	Type  string          `json:"-"` // the frame's type
	From  string          `json:"-"` // negotiation_message: the sender
}

// Private is a frame for one agent alone (escalation_resolved): it has no
// seq and observers never see it.
type Private struct {
	To    string
	Frame json.RawMessage
}

// Outcome is what one step of the room produced. The store commits it
// atomically with the new state: Entries become transcript rows.
type Outcome struct {
	Entries []Entry         // new transcript frames, seq ascending
	Ack     json.RawMessage // message_ack for the sender, nil when none
	Replay  bool            // Ack repeats an earlier one (idempotent resend); nothing changed
	Private []Private       // frames for one agent alone
	// Declined is set when the step declined a pending request (the
	// bouncer's decline or a lapse); Lapsed when it was a lapse.
	Declined, Lapsed bool
	// Started is set when the step took a pending request live.
	Started bool
	// Pushes are lobby pushes the step makes (negotiation_accepted when it
	// took a request live): sent to each To's lobby after the commit and
	// kept in its event log with the step's other frames, ahead of them
	// (PROTOCOL.md "Without a socket": the log is what the sockets carry,
	// and a brand hears of its accepted request before its room starts).
	Pushes []Private
	// Ended is set when the step ended the negotiation.
	Ended bool
	// Reputation holds changes of agents' reputation (live negotiations only).
	Reputation map[string]int
	// EscalationID is the escalation opened by this step, if any.
	EscalationID string
	// Settlement is the instruction of a live deal (never in the arena),
	// which the store writes with the deal (PROTOCOL.md "Settlements").
	Settlement *settlement.Instruction
}

// Changed reports whether the step changed the state (and so must be stored).
func (o *Outcome) Changed() bool {
	return len(o.Entries) > 0 || o.Declined || o.Started || len(o.Private) > 0 || (o.Ack != nil && !o.Replay)
}

// Failure is one failed check of a binding frame (DELEGATION.md "The checks").
type Failure = grants.Failure

// Binding is what the grant check needs to know about a binding frame.
type Binding struct {
	NegotiationID string
	Agent         string // the sender
	Role          string // RoleBrand or RoleBouncer
	Counterparty  string
	FrameType     string
	Terms         Terms // for accept: the standing terms it would take
	Arena         bool
}

// Checker runs the grant checks on a binding frame and returns every failure
// (none: the frame may land). A nil Checker allows everything.
type Checker func(Binding) []Failure

// ScopeBlock is the refusal of a binding frame (DELEGATION.md "The checks"): sent to the
// sender alone; the frame does not land.
type ScopeBlock struct {
	Type      string    `json:"type"`
	Re        string    `json:"re,omitempty"`
	FrameType string    `json:"frame_type"`
	Checks    []Failure `json:"checks"`
	Message   string    `json:"message"`
}

// Error implements error.
func (b *ScopeBlock) Error() string { return "scope_block: " + b.Message }

// Reputation changes (PROTOCOL.md "Endings, reputation, arena").
const (
	ReputationDeal       = 1
	ReputationTurnMissed = -5
)

// Apply runs one party frame through the rules at time now (PROTOCOL.md "The eleven frames", "Clocks").
// Clocks that ran out by now are settled first (their entries are in the
// Outcome even when the frame is refused). A refused frame returns
// *wire.Error or *ScopeBlock and leaves the state as the clocks left it.
// from must be a party of the negotiation. Thinking frames do not come here
// (see Thinking).
func (s *State) Apply(from string, f Frame, now time.Time, check Checker) (Outcome, error) {
	var out Outcome
	if f.ID != "" {
		if ack, ok := s.Acks[ackKey(from, f.ID)]; ok {
			return Outcome{Ack: ack, Replay: true}, nil
		}
	}
	s.advance(now, &out)
	if !s.IsParty(from) {
		return out, wire.Errorf(wire.CodeForbidden, "%s is not a party of this negotiation", from)
	}
	if s.Status != StatusLive {
		return out, wire.Errorf(wire.CodeInvalidState, "the negotiation is %s", s.Status)
	}
	if werr := s.checkTranscriptCap(f); werr != nil {
		return out, werr
	}
	if err := s.apply(from, f, now, check, &out); err != nil {
		return out, err
	}
	return out, nil
}

// Tick settles every clock that ran out by now (PROTOCOL.md "Clocks"). Timers call it.
func (s *State) Tick(now time.Time) Outcome {
	var out Outcome
	s.advance(now, &out)
	return out
}

// Thinking checks a thinking frame and returns the agent_thinking frame to
// relay to the other party and observers. It is not stored and gets no seq;
// the caller limits it to once a second per sender.
func (s *State) Thinking(from string, now time.Time) (json.RawMessage, *wire.Error) {
	if !s.IsParty(from) {
		return nil, wire.Errorf(wire.CodeForbidden, "%s is not a party of this negotiation", from)
	}
	if s.Status != StatusLive || !now.Before(s.DeadlineAt) {
		return nil, wire.Errorf(wire.CodeInvalidState, "the negotiation is not live")
	}
	return marshal(map[string]any{"type": TypeAgentThinking, "from": from, "at": wire.Time(now)}), nil
}

// Start is the bouncer's accept of a pending request (PROTOCOL.md "Lobby socket", "Clocks"): the
// room goes live, the 8-minute deadline and the brand's first turn start now.
// Errors: CodeInvalidState when the request is not pending or has lapsed.
func (s *State) Start(now time.Time) (Outcome, error) {
	var out Outcome
	s.advance(now, &out)
	if s.Status != StatusPending {
		return out, wire.Errorf(wire.CodeInvalidState, "the negotiation is %s, not pending", s.statusText())
	}
	s.Status = StatusLive
	s.StartedAt = now
	s.DeadlineAt = now.Add(Deadline)
	s.Turn = s.Brand.AgentID
	s.TurnDeadlineAt = now.Add(TurnTime)
	out.Started = true
	return out, nil
}

// Decline is the bouncer's refusal of a pending request. Errors:
// CodeInvalidState when the request is not pending.
func (s *State) Decline(reason string, now time.Time) (Outcome, error) {
	var out Outcome
	s.advance(now, &out)
	if s.Status != StatusPending {
		return out, wire.Errorf(wire.CodeInvalidState, "the negotiation is %s, not pending", s.statusText())
	}
	s.Status = StatusDeclined
	s.Reason = reason
	s.EndedAt = now
	out.Declined = true
	return out, nil
}

// Resolve settles an open escalation with the principal's decision
// ("approve" or "deny"): the party gets escalation_resolved and its turn
// clock resumes with the time it had left (PROTOCOL.md "Clocks"; DELEGATION.md "The checks"). Errors:
// CodeNotFound for an unknown id, CodeInvalidState when the escalation
// lapsed or the negotiation ended (nothing changes then).
func (s *State) Resolve(escalationID, decision string, now time.Time) (Outcome, error) {
	var out Outcome
	s.advance(now, &out)
	e := s.Escalation(escalationID)
	if e == nil {
		if s.Ended() {
			return out, wire.Errorf(wire.CodeInvalidState, "the negotiation is %s", s.Status)
		}
		return out, wire.Errorf(wire.CodeInvalidState, "escalation %s is not open (lapsed or already decided)", escalationID)
	}
	s.closeEscalation(e.ID, decision, now, &out)
	return out, nil
}

func (s *State) statusText() string {
	if s.Status == StatusDeclined && s.Reason == "expired" {
		return "lapsed"
	}
	return s.Status
}

func ackKey(from, id string) string { return from + "\n" + id }

// landing is what a party frame that passed its checks puts on the wire:
// the negotiation_message for everyone and the message_ack for its sender,
// built by the rule of its frame type; passTurn is whether it ends the
// sender's turn.
type landing struct {
	msg, ack map[string]any
	passTurn bool
}

// apply runs a frame on a live negotiation (PROTOCOL.md "The eleven
// frames"): the rule of its type validates everything before changing
// anything, so an error leaves s as it was; then the frame lands.
func (s *State) apply(from string, f Frame, now time.Time, check Checker, out *Outcome) error {
	l := landing{msg: map[string]any{"frame_type": f.Type}, ack: map[string]any{"frame_type": f.Type}, passTurn: true}
	if f.HasContent && f.Type != TypeEscalate {
		l.msg["content"] = f.Content
	}
	var err error
	switch f.Type {
	case TypeMessage, TypeResearch:
	case TypeProposeTerms, TypeCounterTerms:
		err = s.applyTerms(from, f, now, check, &l)
	case TypeAccept:
		err = s.applyAccept(from, f, check, &l)
	case TypeReject, TypeWithdraw:
		err = s.applyRetract(from, f, &l)
	case TypeEscalate:
		err = s.applyEscalate(from, f, now, &l, out)
	case TypeWalk, TypeClose:
		l.passTurn = false
	default:
		err = wire.Errorf(wire.CodeUnknownType, "unknown frame type %q", f.Type)
	}
	if err != nil {
		return err
	}
	s.land(from, f, now, l, out)
	return nil
}

// applyTerms is propose_terms and counter_terms: the grant check, then the
// terms in RFC 8785 form become the standing proposal with its offer hash
// and expiry (PROTOCOL.md "Transcript, offer hash and chain hash", "Clocks").
func (s *State) applyTerms(from string, f Frame, now time.Time, check Checker, l *landing) error {
	if f.Type == TypeProposeTerms && s.Standing != nil && s.Standing.By != from {
		return wire.Errorf(wire.CodeInvalidState, "the other side's proposal %s is on the table: counter_terms, accept or reject it", s.Standing.ID)
	}
	if f.Type == TypeCounterTerms && (s.Standing == nil || s.Standing.By == from) {
		return wire.Errorf(wire.CodeInvalidState, "counter_terms needs the other side's proposal on the table; use propose_terms")
	}
	if fails := s.runCheck(check, from, f.Type, *f.Terms); len(fails) > 0 {
		return newScopeBlock(f, fails)
	}
	canon, err := jcs.Transform(f.Terms.Raw)
	if err != nil {
		return wire.Errorf(wire.CodeInvalidArgument, "terms cannot be canonicalised: %v", err)
	}
	seq := s.LastSeq + 1
	p := &Proposal{
		ID: fmt.Sprintf("%s.p%d", s.ID, seq), By: from, Terms: canon, // kept and relayed in RFC 8785 form
		AmountCents: f.Terms.AmountCents, Category: f.Terms.Category, Sends: f.Terms.Sends,
		OfferHash: hashCanonical(canon), Seq: seq,
	}
	if f.TTLSeconds > 0 {
		p.ExpiresAt = now.Add(time.Duration(f.TTLSeconds) * time.Second)
	}
	if s.Standing != nil {
		l.msg["replaces"] = s.Standing.ID
	}
	s.Standing = p
	for _, m := range []map[string]any{l.msg, l.ack} {
		m["proposal_id"], m["offer_hash"] = p.ID, p.OfferHash
		if !p.ExpiresAt.IsZero() {
			m["expires_at"] = wire.Time(p.ExpiresAt)
		}
	}
	l.msg["terms"] = p.Terms
	return nil
}

// applyAccept is accept: the other side's standing proposal, the grant
// check on its terms, and whatever the accept names must match it. The deal
// itself is made when the frame lands.
func (s *State) applyAccept(from string, f Frame, check Checker, l *landing) error {
	st := s.Standing
	if st == nil {
		return wire.Errorf(wire.CodeInvalidState, "nothing stands on the table to accept")
	}
	if st.By == from {
		return wire.Errorf(wire.CodeInvalidState, "proposal %s is your own; it needs the other side's accept", st.ID)
	}
	fails := s.runCheck(check, from, f.Type, st.ReadTerms())
	if fl := matchStanding(f, st); fl != nil {
		fails = append(fails, *fl)
	}
	if len(fails) > 0 {
		return newScopeBlock(f, fails)
	}
	for _, m := range []map[string]any{l.msg, l.ack} {
		m["proposal_id"], m["offer_hash"] = st.ID, st.OfferHash
	}
	l.msg["terms"] = st.Terms
	l.passTurn = false
	return nil
}

// applyRetract is reject (the other side's proposal) and withdraw (one's
// own): the table is cleared.
func (s *State) applyRetract(from string, f Frame, l *landing) error {
	st := s.Standing
	if st == nil {
		return wire.Errorf(wire.CodeInvalidState, "nothing stands on the table to %s", f.Type)
	}
	if f.Type == TypeReject && st.By == from {
		return wire.Errorf(wire.CodeInvalidState, "proposal %s is your own: withdraw it instead", st.ID)
	}
	if f.Type == TypeWithdraw && st.By != from {
		return wire.Errorf(wire.CodeInvalidState, "proposal %s is the other side's: reject it instead", st.ID)
	}
	l.msg["proposal_id"], l.ack["proposal_id"] = st.ID, st.ID
	s.Standing = nil
	return nil
}

// applyEscalate opens an escalation to the sender's principal and pauses
// its turn clock (DELEGATION.md "Escalation end to end"); the content stays private.
func (s *State) applyEscalate(from string, f Frame, now time.Time, l *landing, out *Outcome) error {
	if s.escalationOf(from) != nil {
		return wire.Errorf(wire.CodeInvalidState, "you already have an open escalation")
	}
	id := fmt.Sprintf("%s.e%d", s.ID, s.LastSeq+1)
	e := Escalation{ID: id, By: from, OpenedAt: now, LapsesAt: now.Add(EscalationLapse), Content: f.Content}
	if f.Terms != nil {
		e.Terms = f.Terms.Raw
	}
	s.Escalations = append(s.Escalations, e)
	if s.Turn == from && !s.TurnPaused {
		s.TurnPaused = true
		s.TurnLeft = s.TurnDeadlineAt.Sub(now)
		s.TurnDeadlineAt = time.Time{}
	}
	l.ack["escalation_id"] = id
	out.EscalationID = id
	l.passTurn = false
	return nil
}

// land commits a checked frame: the turn passes if it should, the
// negotiation_message gets its seq and hash, the sender's ack is built and
// remembered for idempotent resends, and accept, walk and close end the
// negotiation.
func (s *State) land(from string, f Frame, now time.Time, l landing, out *Outcome) {
	if other := s.Other(from); l.passTurn && s.Turn == from {
		s.Turn = other
		s.TurnPaused, s.TurnLeft = false, 0
		s.TurnDeadlineAt = now.Add(TurnTime)
		if s.escalationOf(other) != nil {
			s.TurnPaused, s.TurnLeft, s.TurnDeadlineAt = true, TurnTime, time.Time{}
		}
	}
	l.msg["type"] = TypeNegotiationMessage
	l.msg["from"] = from
	e := s.appendEntry(l.msg, now, out)
	ack := l.ack
	ack["type"] = TypeMessageAck
	ack["id"] = s.ID + ".m" + strconv.FormatInt(e.Seq, 10)
	ack["seq"] = e.Seq
	ack["at"] = l.msg["at"] // the entry's wire.Time(now), formatted once
	if f.ID != "" {
		ack["re"] = f.ID
	}
	copyTurnFields(ack, l.msg) // turnFields(ack): the same state, formatted once

	switch f.Type {
	case TypeAccept:
		st := s.Standing
		s.Standing = nil
		s.DealTerms, s.DealOfferHash, s.DealAmountCents = st.Terms, st.OfferHash, st.AmountCents
		s.end(StatusDeal, "", "", now, out)
	case TypeWalk, TypeClose:
		s.end(StatusWalked, from, "", now, out)
	}
	out.Ack = marshal(ack)
	if f.ID != "" {
		s.rememberAck(ackKey(from, f.ID), out.Ack)
	}
}

// rememberAck keeps an ack for idempotent resends, the last AckWindow. It
// replaces Acks and AckOrder with new ones rather than changing them: a
// state shares both with its clones (Clone).
func (s *State) rememberAck(key string, ack json.RawMessage) {
	acks := make(map[string]json.RawMessage, len(s.Acks)+1)
	maps.Copy(acks, s.Acks)
	acks[key] = ack
	order := s.AckOrder
	if len(order) >= AckWindow {
		delete(acks, order[0])
		order = order[1:]
	}
	s.Acks = acks
	s.AckOrder = append(append(make([]string, 0, len(order)+1), order...), key)
}

func (s *State) runCheck(check Checker, from, frameType string, t Terms) []Failure {
	if check == nil {
		return nil
	}
	return check(Binding{
		NegotiationID: s.ID, Agent: from, Role: s.RoleOf(from), Counterparty: s.Other(from),
		FrameType: frameType, Terms: t, Arena: s.Arena,
	})
}

// matchStanding checks what an accept names against the standing proposal:
// terms (by offer hash), offer_hash or proposal_id, whichever it carries.
func matchStanding(f Frame, st *Proposal) *Failure {
	got := ""
	switch {
	case f.OfferHash != "" && f.OfferHash != st.OfferHash:
		got = f.OfferHash
	case f.ProposalID != "" && f.ProposalID != st.ID:
		got = "proposal " + f.ProposalID
	case f.Terms != nil:
		if h, err := OfferHash(f.Terms.Raw); err != nil {
			got = "terms that cannot be canonicalised"
		} else if h != st.OfferHash {
			got = h
		}
	}
	if got == "" {
		return nil
	}
	return &Failure{
		Check: "offer_hash", Limit: st.OfferHash, Got: got,
		Message: "the accept names terms that are not the ones standing (" + st.ID + "); a bare accept takes what stands",
	}
}

func newScopeBlock(f Frame, fails []Failure) *ScopeBlock {
	names := make([]string, len(fails))
	msgs := make([]string, len(fails))
	for i, fl := range fails {
		names[i], msgs[i] = fl.Check, fl.Message
	}
	return &ScopeBlock{
		Type: TypeScopeBlock, Re: f.ID, FrameType: f.Type, Checks: fails,
		Message: fmt.Sprintf("%s did not land, nothing was sent to anyone (failed: %s): %s",
			f.Type, strings.Join(names, ", "), strings.Join(msgs, "; ")),
	}
}

// turnFields adds turn and turn_deadline_at to a frame.
func (s *State) turnFields(m map[string]any) {
	if s.Status != StatusLive {
		return
	}
	m["turn"] = s.Turn
	if s.TurnPaused {
		m["turn_deadline_at"] = nil
		m["turn_paused"] = true
	} else {
		m["turn_deadline_at"] = wire.Time(s.TurnDeadlineAt)
	}
}

// copyTurnFields gives m the members turnFields wrote into from.
func copyTurnFields(m, from map[string]any) {
	for _, k := range [...]string{"turn", "turn_deadline_at", "turn_paused"} {
		if v, ok := from[k]; ok {
			m[k] = v
		}
	}
}

// appendEntry gives a public frame the next seq and its chain hash.
func (s *State) appendEntry(m map[string]any, at time.Time, out *Outcome) Entry {
	s.LastSeq++
	m["seq"] = s.LastSeq
	m["at"] = wire.Time(at)
	if m["type"] == TypeNegotiationMessage {
		s.turnFields(m)
	}
	frame := marshal(m)
	h, err := chainHashOwn(s.HeadHash, frame)
	if err != nil {
		panic(fmt.Sprintf("negotiation: hash of a frame the venue built: %v", err))
	}
	s.HeadHash = h
	s.LastAt = at
	e := Entry{Seq: s.LastSeq, Frame: frame, Hash: h, At: at}
	e.Type, _ = m["type"].(string)
	if e.Type == TypeNegotiationMessage {
		e.From, _ = m["from"].(string)
	}
	out.Entries = append(out.Entries, e)
	return e
}

// end closes the negotiation with negotiation_ended (PROTOCOL.md "Transcript, offer hash and chain hash").
func (s *State) end(status, by, reason string, at time.Time, out *Outcome) {
	s.Status = status
	s.EndedAt, s.EndedBy, s.Reason = at, by, reason
	s.Standing = nil
	s.Escalations = nil
	s.TurnPaused, s.TurnLeft = false, 0
	m := map[string]any{"type": TypeNegotiationEnded, "status": status}
	if by != "" {
		m["by"] = by
	}
	if reason != "" {
		m["reason"] = reason
	}
	if status == StatusDeal {
		m["terms"] = s.DealTerms
		m["offer_hash"] = s.DealOfferHash
	}
	s.appendEntry(m, at, out)
	out.Ended = true
	if !s.Arena {
		switch status {
		case StatusDeal:
			out.Reputation = map[string]int{s.Brand.AgentID: ReputationDeal, s.Bouncer.AgentID: ReputationDeal}
			in, err := settlement.New(s.ID, s.Brand.AgentID, s.Bouncer.AgentID, s.DealAmountCents, at)
			if err != nil { // terms stop at $10,000,000: cannot happen
				panic(fmt.Sprintf("negotiation: settlement of %s: %v", s.ID, err))
			}
			out.Settlement = &in
		case StatusTurnMissed:
			out.Reputation = map[string]int{by: ReputationTurnMissed}
		}
	}
}

func (s *State) closeEscalation(id, decision string, now time.Time, out *Outcome) {
	var e Escalation
	for i := range s.Escalations {
		if s.Escalations[i].ID == id {
			e = s.Escalations[i]
			s.Escalations = append(s.Escalations[:i], s.Escalations[i+1:]...)
			break
		}
	}
	if s.Turn == e.By && s.TurnPaused {
		s.TurnPaused = false
		s.TurnDeadlineAt = now.Add(s.TurnLeft)
		s.TurnLeft = 0
	}
	m := map[string]any{"type": TypeEscalationResolved, "escalation_id": e.ID, "decision": decision, "at": wire.Time(now)}
	s.turnFields(m)
	out.Private = append(out.Private, Private{To: e.By, Frame: marshal(m)})
}

// Kinds of due clocks, in the order they settle when due at the same moment.
const (
	dueNone = iota
	dueRequest
	dueProposal
	dueEscalation
	dueDeadline
	dueTurn
)

// nextDue returns the earliest running clock and its kind.
func (s *State) nextDue() (time.Time, int) {
	var at time.Time
	kind := dueNone
	consider := func(t time.Time, k int) {
		if t.IsZero() {
			return
		}
		if kind == dueNone || t.Before(at) {
			at, kind = t, k
		}
	}
	switch s.Status {
	case StatusPending:
		consider(s.RequestExpiresAt, dueRequest)
	case StatusLive:
		if s.Standing != nil {
			consider(s.Standing.ExpiresAt, dueProposal)
		}
		for _, e := range s.Escalations {
			consider(e.LapsesAt, dueEscalation)
		}
		consider(s.DeadlineAt, dueDeadline)
		if !s.TurnPaused {
			consider(s.TurnDeadlineAt, dueTurn)
		}
	}
	return at, kind
}

// advance settles, in time order, every clock due at or before now. Each
// settles at its own due time, so the transcript reads as it happened.
func (s *State) advance(now time.Time, out *Outcome) {
	for {
		at, kind := s.nextDue()
		if kind == dueNone || at.After(now) {
			return
		}
		switch kind {
		case dueRequest:
			s.Status = StatusDeclined
			s.Reason = "expired"
			s.EndedAt = at
			out.Declined, out.Lapsed = true, true
		case dueProposal:
			p := s.Standing
			s.Standing = nil
			s.appendEntry(map[string]any{"type": TypeProposalExpired, "proposal_id": p.ID, "by": p.By, "offer_hash": p.OfferHash}, at, out)
		case dueEscalation:
			var id string
			for _, e := range s.Escalations {
				if e.LapsesAt.Equal(at) {
					id = e.ID
					break
				}
			}
			s.closeEscalation(id, "lapsed", at, out)
		case dueDeadline:
			s.end(StatusExpired, "", "deadline", at, out)
		case dueTurn:
			s.end(StatusTurnMissed, s.Turn, "turn_missed", at, out)
		}
	}
}
