package mcpagent

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/venuehq/venue/client"
	"github.com/venuehq/venue/grants"
	"github.com/venuehq/venue/wire"
)

type termsIn struct {
	NegotiationID string `json:"negotiation_id" jsonschema:"the negotiation's id"`
	AmountCents   int64  `json:"amount_cents" jsonschema:"the amount in integer cents (320000 is $3,200.00), 0 to 1,000,000,000; your grant may allow less"`
	Category      string `json:"category,omitempty" jsonschema:"the category, at most 64 characters; leave out for none"`
	Sends         *int   `json:"sends,omitempty" jsonschema:"the number of sends, 1-1,000; leave out for none"`
	TTLSeconds    *int   `json:"ttl_seconds,omitempty" jsonschema:"how long the proposal stands, 10-300 seconds; leave out to let it stand until replaced"`
	Content       string `json:"content,omitempty" jsonschema:"what you say with it, at most 4,000 characters"`
	deliveryTermsIn
}

// deliveryTermsIn are the terms beyond the amount (DELEGATION.md "What the
// venue reads in `terms`"); each left out when not given.
type deliveryTermsIn struct {
	FlightStart           string   `json:"flight_start,omitempty" jsonschema:"when the sends start, YYYY-MM-DD (needs flight_end)"`
	FlightEnd             string   `json:"flight_end,omitempty" jsonschema:"when the sends end, YYYY-MM-DD, at most 366 days after flight_start"`
	UsageRightsDays       *int     `json:"usage_rights_days,omitempty" jsonschema:"how long the brand may reuse the content, 0-3,650 days"`
	ExclusivityCategories []string `json:"exclusivity_categories,omitempty" jsonschema:"sponsor categories the creator stays away from, 1-20 (needs exclusivity_days)"`
	ExclusivityDays       *int     `json:"exclusivity_days,omitempty" jsonschema:"for how many days, 1-365 (needs exclusivity_categories)"`
}

// terms are the client terms of amount, category, sends and d.
func (d deliveryTermsIn) terms(cents int64, category string, sends int) client.Terms {
	t := client.Terms{AmountCents: cents, Category: category, Sends: sends, UsageRightsDays: d.UsageRightsDays}
	if d.FlightStart != "" || d.FlightEnd != "" {
		t.Flight = &client.Flight{Start: d.FlightStart, End: d.FlightEnd}
	}
	if d.ExclusivityCategories != nil || d.ExclusivityDays != nil {
		t.Exclusivity = &client.Exclusivity{Categories: d.ExclusivityCategories, Days: deref(d.ExclusivityDays)}
	}
	return t
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
	Sends         *int   `json:"sends,omitempty" jsonschema:"the sends of those terms, 1-1,000"`
}

type waitEventsIn struct {
	NegotiationID  string `json:"negotiation_id" jsonschema:"the negotiation's id"`
	TimeoutSeconds *int   `json:"timeout_seconds,omitempty" jsonschema:"how long to wait for the first new event, 0-120 seconds (default 20; 0 returns at once). Without a progressToken on the call the wait is at most 20 s and the answer says so; with one it waits up to 120 s, sending notifications/progress every 10 s"`
	Cursor         *int64 `json:"cursor,omitempty" jsonschema:"read from this position (the cursor of an earlier answer) instead of this session's own; leave out to get what this session has not had yet"`
}

// SendView is what a frame that landed returns: the venue's ack and the
// room after it (for a frame that ends the negotiation, with its ending).
type SendView struct {
	Landed     string     `json:"landed"` // the frame type
	Seq        int64      `json:"seq"`
	ProposalID string     `json:"proposal_id,omitempty"`
	OfferHash  string     `json:"offer_hash,omitempty"`
	ExpiresAt  string     `json:"expires_at,omitempty"`
	Escalation string     `json:"escalation_id,omitempty"`
	State      *StateView `json:"state"`
	Note       string     `json:"note,omitempty"`
}

// WaitEventsView is what wait_events returns.
type WaitEventsView struct {
	Events []EventView `json:"events"`
	Cursor int64       `json:"cursor"` // pass it back as cursor to read on from here
	Note   string      `json:"note,omitempty"`
	State  StateView   `json:"state"`
}

// VerifyView is what verify_receipt returns.
type VerifyView struct {
	Verified         bool            `json:"verified"`
	NegotiationID    string          `json:"negotiation_id"`
	Status           string          `json:"status"`
	Arena            bool            `json:"arena"`
	TranscriptFrames int             `json:"transcript_frames"`
	HeadHash         string          `json:"head_hash"`
	Claims           json.RawMessage `json:"claims"`
}

var (
	maxCents   = float64(grants.MaxAmountCents)
	termLimits = map[string]limit{"amount_cents": between(0, maxCents), "category": chars(0, 64), "sends": between(1, 1000),
		"ttl_seconds": between(10, 300), "content": chars(0, 4000), "usage_rights_days": between(0, 3650), "exclusivity_days": between(1, 365),
		"flight_start": chars(0, 10), "flight_end": chars(0, 10)}
)

func (a *Agent) addRoomTools() {
	tool(a, toolSpec{name: "room_state", title: "The negotiation now", effect: reads,
		desc: "The negotiation now: status, your role, whose turn and the seconds left on it (60 s a turn), the seconds left to the 8-minute deadline, the standing proposal (amount in cents, by you or them, its offer_hash and expiry; absent when the table is empty), the ending once it ended, and how many events this session has not had from wait_events."},
		func(c *call, in negotiationIn) (StateView, error) {
			r, err := a.room(c.ctx, in.NegotiationID)
			if err != nil {
				return StateView{}, err
			}
			return r.state(c.reader), nil
		})
	tool(a, toolSpec{name: "wait_events", title: "Wait for the negotiation", effect: reads,
		desc:   "Return the negotiation's events this MCP session has not had yet (the other side's frames, expiries, the ending, escalation decisions), waiting up to timeout_seconds for the first. The first call also returns what happened before you joined. An event counts as had only once an answer carrying it was delivered: a call you abandon or cancel takes nothing away.",
		limits: map[string]limit{"timeout_seconds": between(0, MaxWaitSeconds), "cursor": atLeast(0)}},
		func(c *call, in waitEventsIn) (WaitEventsView, error) {
			r, err := a.room(c.ctx, in.NegotiationID)
			if err != nil {
				return WaitEventsView{}, err
			}
			seconds, note := waitSeconds(in.TimeoutSeconds, c.progress)
			from := r.events.cursor(c.reader)
			if in.Cursor != nil {
				from = *in.Cursor
			}
			p, err := waitPage(a, c, r.events, from, seconds, "the other side")
			if err != nil {
				return WaitEventsView{}, err
			}
			if in.Cursor == nil {
				before := r.events.cursor(c.reader)
				c.onDelivered(func() { r.events.commit(c.reader, p.next) }, func() { r.events.uncommit(c.reader, before, p.next) })
			}
			out := WaitEventsView{Events: nonNil(p.items), Cursor: p.next, Note: note, State: r.state(c.reader)}
			// The events handed over count as had in the state shown with them.
			out.State.UnreadEvents = max(0, out.State.UnreadEvents-len(p.items))
			if len(p.items) == 0 {
				out.Note = joinNotes("nothing new", note)
			}
			return out, nil
		})
	termsTool := func(name, title, frame, desc string) {
		tool(a, toolSpec{name: name, title: title, desc: desc, limits: termLimits, effect: destructive},
			func(c *call, in termsIn) (SendView, error) {
				return a.send(c, in.NegotiationID, client.Frame{Type: frame, Content: in.Content, TTLSeconds: deref(in.TTLSeconds),
					Terms: in.terms(in.AmountCents, in.Category, deref(in.Sends))})
			})
	}
	termsTool("propose", "Propose terms", client.FrameProposeTerms, "Put terms on the table (propose_terms); the table must be empty or hold your own proposal, which this replaces. Binding: checked against your principal's grant. Passes the turn.")
	termsTool("counter", "Counter their proposal", client.FrameCounterTerms, "Replace the other side's standing proposal with yours (counter_terms). Binding: checked against your principal's grant. Passes the turn.")
	tool(a, toolSpec{name: "accept", title: "Accept their proposal", effect: destructive,
		desc:   "Take the other side's standing proposal: a deal, the negotiation ends (the answer's state carries the ending). Binding: checked against your grant. Give offer_hash to be sure you take the terms you read.",
		limits: map[string]limit{"content": chars(0, 4000)}},
		func(c *call, in acceptIn) (SendView, error) {
			return a.send(c, in.NegotiationID, client.Frame{Type: client.FrameAccept, OfferHash: in.OfferHash, Content: in.Content})
		})
	sayTool := func(name, title, frame, desc string) {
		tool(a, toolSpec{name: name, title: title, desc: desc, limits: map[string]limit{"content": chars(0, 4000)}, effect: destructive},
			func(c *call, in sayIn) (SendView, error) {
				return a.send(c, in.NegotiationID, client.Frame{Type: frame, Content: in.Content})
			})
	}
	sayTool("reject", "Reject their proposal", client.FrameReject, "Refuse the other side's standing proposal; the table is cleared. Passes the turn.")
	sayTool("withdraw", "Withdraw your proposal", client.FrameWithdraw, "Take your own standing proposal off the table. Passes the turn.")
	sayTool("walk", "Walk away", client.FrameWalk, "Leave the negotiation: it ends, walked, with no deal (the answer's state carries the ending).")
	tool(a, toolSpec{name: "send_message", title: "Say something", effect: adds,
		desc:   "Say something to the other side; it binds nobody. Passes the turn if it is yours.",
		limits: map[string]limit{"content": chars(1, 4000)}},
		func(c *call, in messageIn) (SendView, error) {
			return a.send(c, in.NegotiationID, client.Frame{Type: client.FrameMessage, Content: in.Content})
		})
	tool(a, toolSpec{name: "escalate", title: "Ask your principal", effect: adds,
		desc:   "Ask your principal for authority beyond your grant. Your turn clock pauses (up to 5 minutes) until the principal decides; wait_events brings escalation_resolved (approve, deny or lapsed). The other side sees that you escalated, not what.",
		limits: map[string]limit{"content": chars(1, 4000), "amount_cents": between(0, maxCents), "category": chars(0, 64), "sends": between(1, 1000)}},
		func(c *call, in escalateIn) (SendView, error) {
			f := client.Frame{Type: client.FrameEscalate, Content: in.Content}
			if in.AmountCents != nil {
				f.Terms = client.Terms{AmountCents: *in.AmountCents, Category: in.Category, Sends: deref(in.Sends)}
			} else if in.Category != "" || in.Sends != nil {
				return SendView{}, wire.Errorf(wire.CodeInvalidArgument, "the terms you escalate need amount_cents")
			}
			return a.send(c, in.NegotiationID, f)
		})
	tool(a, toolSpec{name: "verify_receipt", title: "Verify the receipt", effect: reads,
		desc: "After the end: fetch the venue-signed receipt, the venue's keys and the transcript, and check they agree (signature, and the transcript's chain hash is the one the receipt commits to). Returns what the receipt says."},
		func(c *call, in negotiationIn) (VerifyView, error) {
			claims, tr, err := a.c.VerifyReceipt(c.ctx, in.NegotiationID)
			if err != nil {
				return VerifyView{}, err
			}
			cb, err := json.Marshal(claims)
			if err != nil {
				return VerifyView{}, err
			}
			return VerifyView{Verified: true, NegotiationID: claims.NegotiationID, Status: claims.Status,
				Arena: claims.Arena, TranscriptFrames: len(tr.Entries), HeadHash: tr.HeadHash, Claims: cb}, nil
		})
}

// ackWait bounds how long a frame waits for the venue's answer; endWait how
// long a frame that ends the negotiation waits for negotiation_ended after
// its ack.
const (
	ackWait = 30 * time.Second
	endWait = 10 * time.Second
)

// ends reports whether a landed frame of this type ends the negotiation.
func ends(frameType string) bool {
	return frameType == client.FrameAccept || frameType == client.FrameWalk
}

// send sends one frame on the negotiation's socket and returns its ack and
// the room after it; after a frame that ends the negotiation, the room
// with its ending.
func (a *Agent) send(c *call, negotiationID string, f client.Frame) (SendView, error) {
	r, err := a.room(c.ctx, negotiationID)
	if err != nil {
		return SendView{}, err
	}
	sctx, cancel := context.WithTimeout(c.ctx, ackWait)
	defer cancel()
	ack, err := r.room.Send(sctx, f)
	if err != nil {
		return SendView{}, err
	}
	if ack == nil {
		return SendView{}, fmt.Errorf("%s: no answer", f.Type)
	}
	r.acked(f, ack)
	out := SendView{Landed: ack.FrameType, Seq: ack.Seq, ProposalID: ack.ProposalID, OfferHash: ack.OfferHash,
		ExpiresAt: ack.ExpiresAt, Escalation: ack.EscalationID}
	if ends(ack.FrameType) {
		t := a.clk.NewTimer(endWait)
		select {
		case <-r.ended:
		case <-t.C():
			out.Note = "the negotiation ended; its negotiation_ended has not arrived yet: call room_state for the ending"
		case <-c.ctx.Done():
		}
		t.Stop()
	}
	st := r.state(c.reader)
	out.State = &st
	return out, nil
}
