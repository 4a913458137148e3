package negotiation

import (
	"encoding/json"
	"github.com/venuehq/venue/wire"
	"time"
)

// Durations of the clocks (PROTOCOL.md "Lobby socket", "Clocks").
const (
	RequestLapse    = 2 * time.Minute // a negotiation request not accepted lapses
	Deadline        = 8 * time.Minute // the whole negotiation, from the bouncer's accept
	TurnTime        = time.Minute     // one turn
	EscalationLapse = 5 * time.Minute // an escalation pauses the turn clock at most this long
)

// AckWindow is how many acks of frames sent with a client `id` a
// negotiation keeps for idempotent resends (PROTOCOL.md "Limits and close codes"): a frame resent
// with one of the last AckWindow ids gets its original ack again. The window
// keeps the state (read and written by every frame) small.
const AckWindow = 32

// Status of a negotiation. pending and declined belong to the lobby; live is
// the room; the last four are the endings of negotiation_ended.
const (
	StatusPending    = "pending"
	StatusDeclined   = "declined"
	StatusLive       = "live"
	StatusDeal       = "deal"
	StatusWalked     = "walked"
	StatusTurnMissed = "turn_missed"
	StatusExpired    = "expired"
)

// Roles of agents.
const (
	RoleBrand   = "brand"
	RoleBouncer = "bouncer"
)

// Party is one side of a negotiation as the other side and observers see it.
type Party struct {
	AgentID    string `json:"agent_id"`
	Name       string `json:"name"`
	Reputation int    `json:"reputation"`
}

// Proposal is the terms standing on the table.
type Proposal struct {
	ID          string          `json:"proposal_id"`
	By          string          `json:"by"` // agent_id of the proposer
	Terms       json.RawMessage `json:"terms"`
	AmountCents int64           `json:"amount_cents"`
	Category    string          `json:"category,omitempty"`
	Sends       int             `json:"sends,omitempty"`
	OfferHash   string          `json:"offer_hash"`
	Seq         int64           `json:"seq"`
	ExpiresAt   time.Time       `json:"expires_at,omitzero"` // zero: stands until replaced
}

// Escalation is an open request of a party to its principal (PROTOCOL.md "The eleven frames", "Clocks"; DELEGATION.md "The checks").
type Escalation struct {
	ID       string          `json:"escalation_id"`
	By       string          `json:"by"`
	OpenedAt time.Time       `json:"opened_at"`
	LapsesAt time.Time       `json:"lapses_at"`
	Content  string          `json:"content"`
	Terms    json.RawMessage `json:"terms,omitempty"`
}

// State is everything the venue knows about one negotiation, from the brand's
// request in the lobby to its ending. It is plain data, serialisable as JSON,
// so every store keeps it the same way; the rules are methods on it that take
// `now` and never do I/O.
type State struct {
	ID      string          `json:"negotiation_id"`
	OfferID string          `json:"offer_id"`
	Offer   json.RawMessage `json:"offer"`
	Brand   Party           `json:"brand"`
	Bouncer Party           `json:"bouncer"`
	Arena   bool            `json:"arena"`
	Status  string          `json:"status"`

	CreatedAt        time.Time `json:"created_at"`
	RequestExpiresAt time.Time `json:"request_expires_at"`
	StartedAt        time.Time `json:"started_at,omitzero"`
	DeadlineAt       time.Time `json:"deadline_at,omitzero"`

	Turn           string                     `json:"turn,omitempty"`            // agent_id on turn
	TurnDeadlineAt time.Time                  `json:"turn_deadline_at,omitzero"` // zero while paused
	TurnPaused     bool                       `json:"turn_paused,omitempty"`     // an escalation holds the clock
	TurnLeft       time.Duration              `json:"turn_left_ns,omitempty"`    // time left when paused
	Standing       *Proposal                  `json:"standing,omitempty"`        // the table
	Escalations    []Escalation               `json:"escalations,omitempty"`     // open ones, at most one a party
	Acks           map[string]json.RawMessage `json:"acks,omitempty"`            // sender+"\n"+client id -> ack
	AckOrder       []string                   `json:"ack_order,omitempty"`       // keys of Acks, oldest first (at most AckWindow)

	LastSeq  int64     `json:"last_seq"`
	HeadHash string    `json:"head_hash,omitempty"`
	LastAt   time.Time `json:"last_at,omitzero"` // when the last transcript entry was made

	EndedAt         time.Time       `json:"ended_at,omitzero"`
	EndedBy         string          `json:"ended_by,omitempty"`
	Reason          string          `json:"reason,omitempty"`
	DealTerms       json.RawMessage `json:"deal_terms,omitempty"`
	DealOfferHash   string          `json:"deal_offer_hash,omitempty"`
	DealAmountCents int64           `json:"deal_amount_cents,omitempty"`
}

// NewRequest returns the state of a negotiation a brand has just requested
// (PROTOCOL.md "Lobby socket"): pending, lapsing RequestLapse after now.
func NewRequest(id, offerID string, offer json.RawMessage, brand, bouncer Party, arena bool, now time.Time) State {
	return State{
		ID: id, OfferID: offerID, Offer: offer, Brand: brand, Bouncer: bouncer, Arena: arena,
		Status: StatusPending, CreatedAt: now, RequestExpiresAt: now.Add(RequestLapse),
	}
}

// Ended reports whether the negotiation is over (or never started).
func (s *State) Ended() bool {
	return s.Status != StatusPending && s.Status != StatusLive
}

// IsParty reports whether agentID is the brand or the bouncer.
func (s *State) IsParty(agentID string) bool {
	return agentID == s.Brand.AgentID || agentID == s.Bouncer.AgentID
}

// Other returns the agent_id of the other party.
func (s *State) Other(agentID string) string {
	if agentID == s.Brand.AgentID {
		return s.Bouncer.AgentID
	}
	return s.Brand.AgentID
}

// RoleOf returns RoleBrand or RoleBouncer for a party, "" otherwise.
func (s *State) RoleOf(agentID string) string {
	switch agentID {
	case s.Brand.AgentID:
		return RoleBrand
	case s.Bouncer.AgentID:
		return RoleBouncer
	}
	return ""
}

// Escalation returns the open escalation with that id, or nil.
func (s *State) Escalation(id string) *Escalation {
	for i := range s.Escalations {
		if s.Escalations[i].ID == id {
			return &s.Escalations[i]
		}
	}
	return nil
}

func (s *State) escalationOf(agentID string) *Escalation {
	for i := range s.Escalations {
		if s.Escalations[i].By == agentID {
			return &s.Escalations[i]
		}
	}
	return nil
}

// NextWake returns the earliest moment a clock of this negotiation runs out
// (request lapse, proposal expiry, escalation lapse, turn, deadline), or the
// zero time when none can. Timers wake the venue then; the rules compare
// times themselves, so a late or early wake changes nothing.
func (s *State) NextWake() time.Time {
	at, _ := s.nextDue()
	return at
}

// StandingView is the standing proposal as negotiation_started shows it.
func (s *State) standingView() map[string]any {
	p := s.Standing
	if p == nil {
		return nil
	}
	v := map[string]any{"proposal_id": p.ID, "by": p.By, "terms": p.Terms, "offer_hash": p.OfferHash, "seq": p.Seq}
	if !p.ExpiresAt.IsZero() {
		v["expires_at"] = wire.Time(p.ExpiresAt)
	}
	return v
}

// StartedFrame is negotiation_started (PROTOCOL.md "Negotiation socket"), sent to each side (and
// observer) when it connects: the offer and the context of the room now.
func (s *State) StartedFrame() json.RawMessage {
	ctx := map[string]any{
		"brand": s.Brand, "bouncer": s.Bouncer, "arena": s.Arena, "status": s.Status,
		"started_at": wire.Time(s.StartedAt), "deadline_at": wire.Time(s.DeadlineAt),
		"standing": s.standingView(), "last_seq": s.LastSeq,
	}
	if s.Status == StatusLive {
		s.turnFields(ctx)
	} else {
		ctx["turn"], ctx["turn_deadline_at"] = nil, nil
	}
	return marshal(map[string]any{
		"type": TypeNegotiationStarted, "negotiation_id": s.ID, "offer": s.Offer, "context": ctx,
	})
}
