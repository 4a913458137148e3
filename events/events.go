// Package events is the per-agent event log (PROTOCOL.md "Without a
// socket"): every frame an agent would be pushed on a socket (its lobby
// pushes, the frames of its negotiations) is also appended here, in the
// order it happened, under an opaque id "evt_<hex>". GET /v1/events reads
// it from an id onward, so an agent that holds no socket, or was away,
// catches up; webhooks deliver from it. Events are kept at least Retention.
package events

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

	"github.com/venuehq/venue/wire"
)

// Retention is how long an event is kept at least.
const Retention = 72 * time.Hour

// MaxLimit is the most events one read returns.
const MaxLimit = 100

// Event is one event of one agent. Data is the frame exactly as the
// agent's socket carries it.
type Event struct {
	ID            string
	AgentID       string
	Type          string // the frame's type
	NegotiationID string // "" for none
	CreatedAt     time.Time
	Data          json.RawMessage
}

// MarshalJSON is the event as served: {"id","type","created_at",
// "negotiation_id"?,"data"}.
func (e Event) MarshalJSON() ([]byte, error) {
	m := struct {
		ID            string          `json:"id"`
		Type          string          `json:"type"`
		CreatedAt     string          `json:"created_at"`
		NegotiationID string          `json:"negotiation_id,omitempty"`
		Data          json.RawMessage `json:"data"`
	}{e.ID, e.Type, wire.Time(e.CreatedAt), e.NegotiationID, e.Data}
	return json.Marshal(m)
}

// New returns an event of agentID carrying frame, with a fresh id; its type
// is read from the frame, and its negotiation too when negID is "".
func New(agentID, negID string, frame json.RawMessage, at time.Time) Event {
	var h struct {
		Type string `json:"type"`
		Neg  string `json:"negotiation_id"`
	}
	_ = json.Unmarshal(frame, &h)
	if negID == "" {
		negID = h.Neg
	}
	return NewTyped(agentID, negID, h.Type, frame, at)
}

// NewTyped is New for a caller that knows the frame's type and negotiation
// (the committing hub does): the frame is not parsed. It runs for every
// event of every committed step.
func NewTyped(agentID, negID, typ string, frame json.RawMessage, at time.Time) Event {
	var b [12]byte
	_, _ = rand.Read(b[:])
	var id [4 + 2*len(b)]byte
	copy(id[:], "evt_")
	hex.Encode(id[4:], b[:])
	return Event{ID: string(id[:]), AgentID: agentID, Type: typ, NegotiationID: negID, CreatedAt: at.UTC(), Data: frame}
}

// Types are the types of the events an agent's log holds, which are all a
// webhook can be sent (PROTOCOL.md "Event types"): the lobby pushes, the
// sealed briefs' pushes (PROTOCOL.md "Sealed briefs"), the frames of the
// agent's negotiations, the handshake pushes (PROTOCOL.md "Handshake
// pushes") and the changes of its deals' settlements and deliveries.
// agent_thinking is not an event. A frame the venue starts pushing to
// agents must be added here, or no webhook can pick it by name (a webhook
// that names no type gets every event anyway).
var Types = []string{
	// Lobby pushes.
	"negotiation_requested", "negotiation_accepted", "negotiation_declined",
	"brief_received", "quotes_ready", "brief_closed",
	// A negotiation's frames, to its parties.
	"negotiation_started", "negotiation_message", "proposal_expired", "proposal_withdrawn",
	"negotiation_ended", "escalation_resolved",
	// Handshake pushes.
	"contact_requested", "contact_updated", "agreement_updated", "message_received",
	"task_received", "task_updated",
	// The deal after the deal (no socket frame).
	TypeSettlementUpdated, "delivery_updated",
}

// ErrUnknownAfter is returned by After for an id that is not the agent's
// (or no longer kept).
var ErrUnknownAfter = errors.New("events: unknown event id")

// Store keeps the events. Append keeps each agent's events in the order
// of the calls that committed them: a reader never sees a later event
// before an earlier one. Safe for concurrent use.
type Store interface {
	// Append adds events (any agents').
	Append(ctx context.Context, evs ...Event) error
	// After returns up to limit events of agentID after the event afterID
	// ("" : from the oldest kept), oldest first. ErrUnknownAfter when
	// afterID is not one of the agent's kept events.
	After(ctx context.Context, agentID, afterID string, limit int) ([]Event, error)
	// Purge drops the events created before t; it returns how many.
	Purge(ctx context.Context, before time.Time) (int, error)
}

// TypeSettlementUpdated is the event of a settlement's status change
// (PROTOCOL.md "Without a socket"): it has no socket frame.
const TypeSettlementUpdated = "settlement_updated"

// SettlementUpdated returns the events of one settlement's status change,
// one for the payer and one for the payee (one when they are the same),
// of type TypeSettlementUpdated with data {"type":"settlement_updated",
// "negotiation_id","settlement":item}, item being the settlement as
// GET /v1/settlements lists it (PROTOCOL.md "Settlements").
func SettlementUpdated(payer, payee, negotiationID string, item any, at time.Time) []Event {
	frame, _ := json.Marshal(map[string]any{"type": TypeSettlementUpdated, "negotiation_id": negotiationID, "settlement": item})
	evs := []Event{New(payer, negotiationID, frame, at)}
	if payee != payer {
		evs = append(evs, New(payee, negotiationID, frame, at))
	}
	return evs
}

// Pusher pushes a lobby frame to an agent's sockets (hub.Hub,
// pircan.BusEvents).
type Pusher interface {
	Push(ctx context.Context, agentID string, frame json.RawMessage)
}

// Recording returns p that also appends each pushed frame to st as an
// event of its agent, stamped now(): for a process that pushes without a
// venue node's hub (`venue pircan`'s handshake), whose Pushed hook does
// that on the nodes. An append that fails is logged; the push goes out.
func Recording(p Pusher, st Store, now func() time.Time, log *slog.Logger) Pusher {
	return recording{p, st, now, log}
}

type recording struct {
	p   Pusher
	st  Store
	now func() time.Time
	log *slog.Logger
}

func (r recording) Push(ctx context.Context, agentID string, frame json.RawMessage) {
	r.p.Push(ctx, agentID, frame)
	if err := r.st.Append(ctx, New(agentID, "", frame, r.now())); err != nil && r.log != nil {
		r.log.Error("event log: append a push", "agent_id", agentID, "err", err)
	}
}
