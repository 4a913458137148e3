package mcpagent

import (
	"context"
	"fmt"
	"time"

	"github.com/venuehq/venue/client"
	"github.com/venuehq/venue/grants"
)

type termsIn struct {
	NegotiationID string `json:"negotiation_id" jsonschema:"the negotiation's id"`
	AmountCents   int64  `json:"amount_cents" jsonschema:"the amount in integer cents (320000 is $3,200.00), 0 to 1,000,000,000; your grant may allow less"`
	Category      string `json:"category,omitempty" jsonschema:"the category, at most 64 characters"`
	Sends         int    `json:"sends,omitempty" jsonschema:"the number of sends, 1-1,000"`
	TTLSeconds    int    `json:"ttl_seconds,omitempty" jsonschema:"how long the proposal stands, 10-300 seconds; leave out to let it stand until replaced"`
	Content       string `json:"content,omitempty" jsonschema:"what you say with it, at most 4,000 characters"`
}

type acceptIn struct {
	NegotiationID string `json:"negotiation_id" jsonschema:"the negotiation's id"`
	OfferHash     string `json:"offer_hash,omitempty" jsonschema:"the offer_hash of the proposal you mean (from room_state or wait_events); the accept is refused if another stands. Leave out to take whatever stands"`
	Content       string `json:"content,omitempty" jsonschema:"what you say with it, at most 4,000 characters"`
}

type sayIn struct {
	NegotiationID string `json:"negotiation_id" jsonschema:"the negotiation's id"`
	Content       string `json:"content,omitempty" jsonschema:"what you say, at most 4,000 characters"`
}

type messageIn struct {
	NegotiationID string `json:"negotiation_id" jsonschema:"the negotiation's id"`
	Content       string `json:"content" jsonschema:"the message, 1-4,000 characters; it binds nobody"`
}

type escalateIn struct {
	NegotiationID string `json:"negotiation_id" jsonschema:"the negotiation's id"`
	Content       string `json:"content" jsonschema:"what you ask your principal, 1-4,000 characters; the other side never sees it"`
	AmountCents   *int64 `json:"amount_cents,omitempty" jsonschema:"the terms you want authority for: the amount in integer cents"`
	Category      string `json:"category,omitempty" jsonschema:"the category of those terms, at most 64 characters"`
	Sends         int    `json:"sends,omitempty" jsonschema:"the sends of those terms, 1-1,000"`
}

type waitEventsIn struct {
	NegotiationID  string `json:"negotiation_id" jsonschema:"the negotiation's id"`
	TimeoutSeconds *int   `json:"timeout_seconds,omitempty" jsonschema:"how long to wait for the first new event, 0-120 seconds (default 30; 0 returns at once)"`
}

// SendView is what a frame that landed returns.
type SendView struct {
	Landed     string     `json:"landed"` // the frame type
	Seq        int64      `json:"seq"`
	ProposalID string     `json:"proposal_id,omitempty"`
	OfferHash  string     `json:"offer_hash,omitempty"`
	ExpiresAt  string     `json:"expires_at,omitempty"`
	Escalation string     `json:"escalation_id,omitempty"`
	State      *StateView `json:"state"`
}

var (
	maxCents   = float64(grants.MaxAmountCents)
	termLimits = map[string]limit{"amount_cents": between(0, maxCents), "category": chars(0, 64), "sends": between(0, 1000),
		"ttl_seconds": between(0, 300), "content": chars(0, 4000)}
)

func (a *Agent) addRoomTools() {
	tool(a, "room_state", "The negotiation now: status, your role, whose turn and the seconds left on it (60 s a turn), the seconds left to the 8-minute deadline, the standing proposal (amount in cents, by you or them, its offer_hash and expiry), and how many events wait_events has not returned yet.",
		nil,
		func(ctx context.Context, in negotiationIn) (any, error) {
			r, err := a.room(ctx, in.NegotiationID)
			if err != nil {
				return nil, err
			}
			return r.state(), nil
		})
	tool(a, "wait_events", "Return the negotiation's events since the last call (the other side's frames, expiries, the ending, escalation decisions), waiting up to timeout_seconds for the first. The first call also returns what happened before you joined. Your own frames are not repeated: their answers were yours.",
		map[string]limit{"timeout_seconds": between(0, MaxWaitSeconds)},
		func(ctx context.Context, in waitEventsIn) (any, error) {
			r, err := a.room(ctx, in.NegotiationID)
			if err != nil {
				return nil, err
			}
			timeout, stop := a.waitFor(in.TimeoutSeconds)
			defer stop()
			for {
				r.mu.Lock()
				evs, closed := r.unread, r.closed
				r.unread = nil
				r.mu.Unlock()
				if len(evs) > 0 || closed {
					return map[string]any{"events": nonNil(evs), "state": r.state()}, nil
				}
				select {
				case <-r.wake:
				case <-timeout:
					return map[string]any{"events": []EventView{}, "note": "nothing new", "state": r.state()}, nil
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
		})
	termsTool := func(name, frame, desc string) {
		tool(a, name, desc, termLimits, func(ctx context.Context, in termsIn) (any, error) {
			return a.send(ctx, in.NegotiationID, client.Frame{Type: frame, Content: in.Content, TTLSeconds: in.TTLSeconds,
				Terms: client.Terms{AmountCents: in.AmountCents, Category: in.Category, Sends: in.Sends}})
		})
	}
	termsTool("propose", client.FrameProposeTerms, "Put terms on the table (propose_terms); the table must be empty or hold your own proposal. Binding: checked against your principal's grant. Passes the turn.")
	termsTool("counter", client.FrameCounterTerms, "Replace the other side's standing proposal with yours (counter_terms). Binding: checked against your principal's grant. Passes the turn.")
	tool(a, "accept", "Take the other side's standing proposal: a deal, the negotiation ends. Binding: checked against your grant. Give offer_hash to be sure you take the terms you read.",
		map[string]limit{"content": chars(0, 4000)},
		func(ctx context.Context, in acceptIn) (any, error) {
			return a.send(ctx, in.NegotiationID, client.Frame{Type: client.FrameAccept, OfferHash: in.OfferHash, Content: in.Content})
		})
	sayTool := func(name, frame, desc string) {
		tool(a, name, desc, map[string]limit{"content": chars(0, 4000)}, func(ctx context.Context, in sayIn) (any, error) {
			return a.send(ctx, in.NegotiationID, client.Frame{Type: frame, Content: in.Content})
		})
	}
	sayTool("reject", client.FrameReject, "Refuse the other side's standing proposal; the table is cleared. Passes the turn.")
	sayTool("withdraw", client.FrameWithdraw, "Take your own standing proposal off the table. Passes the turn.")
	sayTool("walk", client.FrameWalk, "Leave the negotiation: it ends, walked, with no deal.")
	tool(a, "send_message", "Say something to the other side; it binds nobody. Passes the turn if it is yours.",
		map[string]limit{"content": chars(1, 4000)},
		func(ctx context.Context, in messageIn) (any, error) {
			return a.send(ctx, in.NegotiationID, client.Frame{Type: client.FrameMessage, Content: in.Content})
		})
	tool(a, "escalate", "Ask your principal for authority beyond your grant. Your turn clock pauses (up to 5 minutes) until the principal decides; wait_events brings escalation_resolved (approve, deny or lapsed). The other side sees that you escalated, not what.",
		map[string]limit{"content": chars(1, 4000), "amount_cents": between(0, maxCents), "category": chars(0, 64), "sends": between(0, 1000)},
		func(ctx context.Context, in escalateIn) (any, error) {
			f := client.Frame{Type: client.FrameEscalate, Content: in.Content}
			if in.AmountCents != nil {
				f.Terms = client.Terms{AmountCents: *in.AmountCents, Category: in.Category, Sends: in.Sends}
			}
			return a.send(ctx, in.NegotiationID, f)
		})
	tool(a, "verify_receipt", "After the end: fetch the venue-signed receipt, the venue's keys and the transcript, and check they agree (signature, and the transcript's chain hash is the one the receipt commits to). Returns what the receipt says.",
		nil,
		func(ctx context.Context, in negotiationIn) (any, error) {
			claims, tr, err := a.c.VerifyReceipt(ctx, in.NegotiationID)
			if err != nil {
				return nil, err
			}
			out := map[string]any{"verified": true, "negotiation_id": claims.NegotiationID, "status": claims.Status,
				"arena": claims.Arena, "transcript_frames": len(tr.Entries), "head_hash": tr.HeadHash, "claims": claims}
			return out, nil
		})
}

// ackWait bounds how long a frame waits for the venue's answer.
const ackWait = 30 * time.Second

// send sends one frame on the negotiation's socket and returns its ack
// and the room after it.
func (a *Agent) send(ctx context.Context, negotiationID string, f client.Frame) (any, error) {
	r, err := a.room(ctx, negotiationID)
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, ackWait)
	defer cancel()
	ack, err := r.room.Send(sctx, f)
	if err != nil {
		return nil, err
	}
	if ack == nil {
		return nil, fmt.Errorf("%s: no answer", f.Type)
	}
	r.acked(f, ack)
	st := r.state()
	return SendView{Landed: ack.FrameType, Seq: ack.Seq, ProposalID: ack.ProposalID, OfferHash: ack.OfferHash,
		ExpiresAt: ack.ExpiresAt, Escalation: ack.EscalationID, State: &st}, nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
