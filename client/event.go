package client

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/venuehq/venue/grants"
	"github.com/venuehq/venue/negotiation"
)

// Frame types the venue sends on a negotiation socket (the names of
// package negotiation, the one set the venue has).
const (
	TypeNegotiationStarted = negotiation.TypeNegotiationStarted
	TypeNegotiationMessage = negotiation.TypeNegotiationMessage
	TypeMessageAck         = negotiation.TypeMessageAck
	TypeAgentThinking      = negotiation.TypeAgentThinking
	TypeProposalExpired    = negotiation.TypeProposalExpired
	TypeProposalWithdrawn  = negotiation.TypeProposalWithdrawn // the venue took a proposal off the table (Reason "grant_revoked")
	TypeScopeBlock         = negotiation.TypeScopeBlock
	TypeNegotiationEnded   = negotiation.TypeNegotiationEnded
	TypeEscalationResolved = negotiation.TypeEscalationResolved
	TypeError              = negotiation.TypeError
)

// Frame types a party sends (PROTOCOL.md "The eleven frames").
const (
	FrameMessage      = negotiation.TypeMessage
	FrameResearch     = negotiation.TypeResearch
	FrameThinking     = negotiation.TypeThinking
	FrameProposeTerms = negotiation.TypeProposeTerms
	FrameCounterTerms = negotiation.TypeCounterTerms
	FrameAccept       = negotiation.TypeAccept
	FrameReject       = negotiation.TypeReject
	FrameWithdraw     = negotiation.TypeWithdraw
	FrameEscalate     = negotiation.TypeEscalate
	FrameWalk         = negotiation.TypeWalk
	FrameClose        = negotiation.TypeClose
)

// Event is one frame the venue sent on a negotiation socket, other than the
// replies to this Room's own frames: negotiation_started,
// negotiation_message, agent_thinking, proposal_expired, proposal_withdrawn,
// negotiation_ended, escalation_resolved, and an `error` or `scope_block` that answers no
// pending frame. Fields a type does not carry are zero; Raw is the frame as
// received.
type Event struct {
	Type string `json:"type"`
	// Transcript frames (negotiation_message, proposal_expired,
	// proposal_withdrawn, negotiation_ended) carry Seq and the chain Hash.
	Seq  int64  `json:"seq,omitempty"`
	Hash string `json:"hash,omitempty"`
	At   string `json:"at,omitempty"`

	// negotiation_message: who sent what. For an escalate the other side
	// sees neither content nor terms.
	From string `json:"from,omitempty"`
	// Own is true for the party's own frame in a replay, delivered only
	// with RoomOptions.IncludeOwn. It is not on the wire.
	Own        bool            `json:"-"`
	FrameType  string          `json:"frame_type,omitempty"`
	Content    string          `json:"content,omitempty"`
	Terms      json.RawMessage `json:"terms,omitempty"`
	ProposalID string          `json:"proposal_id,omitempty"`
	OfferHash  string          `json:"offer_hash,omitempty"`
	ExpiresAt  string          `json:"expires_at,omitempty"`
	Replaces   string          `json:"replaces,omitempty"` // the proposal a propose/counter replaced

	// The turn after this frame (negotiation_message, escalation_resolved).
	Turn           string `json:"turn,omitempty"`
	TurnDeadlineAt string `json:"turn_deadline_at,omitempty"`
	TurnPaused     bool   `json:"turn_paused,omitempty"`

	// proposal_expired, proposal_withdrawn, negotiation_ended (walked,
	// turn_missed): whose.
	By string `json:"by,omitempty"`
	// negotiation_ended: deal, walked, turn_missed or expired; Terms and
	// OfferHash on a deal; the venue-signed Receipt (a JWT).
	Status  string `json:"status,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Receipt string `json:"receipt,omitempty"`

	// escalation_resolved: approve, deny or lapsed.
	EscalationID string `json:"escalation_id,omitempty"`
	Decision     string `json:"decision,omitempty"`

	// negotiation_started.
	NegotiationID string          `json:"negotiation_id,omitempty"`
	Offer         json.RawMessage `json:"offer,omitempty"`
	Context       *RoomContext    `json:"context,omitempty"`

	// error and scope_block that answer no pending frame.
	Code    string  `json:"code,omitempty"`
	Message string  `json:"message,omitempty"`
	Re      string  `json:"re,omitempty"`
	Checks  []Check `json:"checks,omitempty"`

	Raw json.RawMessage `json:"-"`
}

// RoomContext is the context of negotiation_started: the room as it is when
// the socket connects.
type RoomContext struct {
	Brand          Party     `json:"brand"`
	Bouncer        Party     `json:"bouncer"`
	Arena          bool      `json:"arena"`
	Status         string    `json:"status"`
	StartedAt      string    `json:"started_at"`
	DeadlineAt     string    `json:"deadline_at"`
	Turn           string    `json:"turn"`
	TurnDeadlineAt string    `json:"turn_deadline_at"`
	TurnPaused     bool      `json:"turn_paused"`
	Standing       *Standing `json:"standing"`
	LastSeq        int64     `json:"last_seq"`
}

// Standing is the proposal on the table.
type Standing struct {
	ProposalID string          `json:"proposal_id"`
	By         string          `json:"by"`
	Terms      json.RawMessage `json:"terms"`
	OfferHash  string          `json:"offer_hash"`
	Seq        int64           `json:"seq"`
	ExpiresAt  string          `json:"expires_at,omitempty"`
}

// Ack is message_ack: the frame landed as transcript seq Seq. ID is the
// venue's message id, Re this Room's client id.
type Ack struct {
	ID             string          `json:"id"`
	Re             string          `json:"re"`
	Seq            int64           `json:"seq"`
	At             string          `json:"at"`
	FrameType      string          `json:"frame_type"`
	ProposalID     string          `json:"proposal_id,omitempty"`
	OfferHash      string          `json:"offer_hash,omitempty"`
	ExpiresAt      string          `json:"expires_at,omitempty"`
	EscalationID   string          `json:"escalation_id,omitempty"`
	Turn           string          `json:"turn,omitempty"`
	TurnDeadlineAt string          `json:"turn_deadline_at,omitempty"`
	TurnPaused     bool            `json:"turn_paused,omitempty"`
	Raw            json.RawMessage `json:"-"`
}

// Check is one failed check of a scope_block (DELEGATION.md "The checks"): its name
// (grant, amount_usd, category, sends, counterparty, arena_only, budget,
// offer_hash), the grant's limit, what the frame carried, and why.
type Check struct {
	Check   string `json:"check"`
	Limit   string `json:"limit"`
	Got     string `json:"got"`
	Message string `json:"message"`
}

// ScopeBlock is the venue's refusal of a binding frame that reaches past
// the sender's grant. The frame did not land: nobody else saw it, no seq was
// used, the turn clock keeps running.
type ScopeBlock struct {
	Re        string          `json:"re"`
	FrameType string          `json:"frame_type"`
	Checks    []Check         `json:"checks"`
	Message   string          `json:"message"`
	Raw       json.RawMessage `json:"-"`
}

// Error implements error.
func (b *ScopeBlock) Error() string {
	names := make([]string, len(b.Checks))
	for i, c := range b.Checks {
		names[i] = c.Check
	}
	return fmt.Sprintf("venue: scope_block on %s (failed: %s): %s", b.FrameType, strings.Join(names, ", "), b.Message)
}

// Failed reports whether the named check failed.
func (b *ScopeBlock) Failed(check string) bool {
	for _, c := range b.Checks {
		if c.Check == check {
			return true
		}
	}
	return false
}

// Terms are the fields of `terms` the venue reads (DELEGATION.md "What the
// venue reads in `terms`"). Money is integer cents, as package grants keeps
// it: AmountCents 320000 goes on the wire as "amount_usd":3200 and
// "amount_usd":3200.5 reads back as 320050, exactly (never a float64, whose
// 3200*1.1 is 3520.0000000000005, which the venue refuses). Any other value
// that marshals to a JSON object may be sent instead, to carry opaque keys
// too.
type Terms struct {
	AmountCents int64  // amount_usd in cents, 0 to grants.MaxAmountCents
	Category    string // at most 64 characters; "" is left out
	Sends       int    // 1 to 1,000; 0 is left out
	// Flight, UsageRightsDays and Exclusivity are left out when nil.
	Flight          *Flight      // when the sends run
	UsageRightsDays *int         // 0 to 3,650: how long the brand may reuse the content
	Exclusivity     *Exclusivity // no sponsor of these categories for Days days
}

// Flight is terms.flight: dates YYYY-MM-DD, Start <= End, at most 366 days
// apart.
type Flight struct {
	Start string `json:"start"`
	End   string `json:"end"`
}

// Exclusivity is terms.exclusivity: 1-20 categories of 1-64 characters,
// Days 1-365.
type Exclusivity struct {
	Categories []string `json:"categories"`
	Days       int      `json:"days"`
}

// Dollars returns n whole dollars in cents: Dollars(3200) is 320000.
func Dollars(n int64) int64 { return n * 100 }

// termsWire is Terms as JSON.
type termsWire struct {
	AmountUSD       json.RawMessage `json:"amount_usd"`
	Category        string          `json:"category,omitempty"`
	Sends           int             `json:"sends,omitempty"`
	Flight          *Flight         `json:"flight,omitempty"`
	UsageRightsDays *int            `json:"usage_rights_days,omitempty"`
	Exclusivity     *Exclusivity    `json:"exclusivity,omitempty"`
}

// MarshalJSON writes amount_usd as a JSON number of dollars with at most
// two decimals.
func (t Terms) MarshalJSON() ([]byte, error) {
	return json.Marshal(termsWire{AmountUSD: grants.USDJSON(t.AmountCents), Category: t.Category, Sends: t.Sends,
		Flight: t.Flight, UsageRightsDays: t.UsageRightsDays, Exclusivity: t.Exclusivity})
}

// UnmarshalJSON reads amount_usd exactly into cents; a quoted, negative or
// over-precise amount is an error wrapping grants.ErrBadAmount.
func (t *Terms) UnmarshalJSON(b []byte) error {
	var w termsWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	var c int64
	if len(w.AmountUSD) > 0 && string(w.AmountUSD) != "null" {
		var err error
		if c, err = grants.ParseUSD(w.AmountUSD); err != nil {
			return fmt.Errorf("amount_usd: %w", err)
		}
	}
	*t = Terms{AmountCents: c, Category: w.Category, Sends: w.Sends,
		Flight: w.Flight, UsageRightsDays: w.UsageRightsDays, Exclusivity: w.Exclusivity}
	return nil
}

// ParseTerms reads the venue's fields out of a terms object.
func ParseTerms(raw json.RawMessage) (Terms, error) {
	var t Terms
	if len(raw) == 0 {
		return t, fmt.Errorf("client: no terms")
	}
	if err := json.Unmarshal(raw, &t); err != nil {
		return t, fmt.Errorf("client: terms %s: %w", raw, err)
	}
	return t, nil
}
