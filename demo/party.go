package demo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/venuehq/venue/client"
	"github.com/venuehq/venue/connect"
)

// demoParty is a scripted agent: it opens at open, and answers each of the
// other side's offers by accepting it when it is within demoCloseGap of its
// own last offer, else by countering halfway (in $25 steps), never past its
// principal's limit.
type demoParty struct {
	role    string
	me      string
	room    *client.Room
	first   bool  // opens the negotiation (the brand: on turn first)
	open    int64 // opening amount, cents
	limit   int64 // the grant's ceiling (brand) or floor (bouncer), cents
	ackWait time.Duration
	pace    time.Duration // the pause before each frame

	mine    int64 // the last amount (cents) this side put on the table; 0: none yet
	lastAck *client.Ack
	talked  bool
}

func (p *demoParty) terms(amount int64) client.Terms {
	return client.Terms{AmountCents: amount, Category: demoCategory, Sends: demoSends}
}

// send sends one frame and checks its ack.
func (p *demoParty) send(ctx context.Context, f client.Frame) (*client.Ack, error) {
	if err := pause(ctx, p.pace); err != nil {
		return nil, fmt.Errorf("%s: %w", p.role, err)
	}
	sctx, cancel := context.WithTimeout(ctx, p.ackWait)
	defer cancel()
	ack, err := p.room.Send(sctx, f)
	var sb *client.ScopeBlock
	switch {
	case errors.As(err, &sb):
		return nil, fmt.Errorf("%s: %s got a scope_block: %w", p.role, f.Type, err)
	case errors.Is(err, context.DeadlineExceeded):
		return nil, fmt.Errorf("%s: no message_ack for %s within %s", p.role, f.Type, p.ackWait)
	case err != nil:
		return nil, fmt.Errorf("%s: %s: %w", p.role, f.Type, err)
	case ack.Seq <= 0 || ack.FrameType != f.Type || ack.ID == "":
		return nil, fmt.Errorf("%s: a malformed message_ack for %s: %s", p.role, f.Type, ack.Raw)
	case (f.Type == client.FrameProposeTerms || f.Type == client.FrameCounterTerms) && (ack.ProposalID == "" || ack.OfferHash == ""):
		return nil, fmt.Errorf("%s: the ack of %s lacks proposal_id or offer_hash: %s", p.role, f.Type, ack.Raw)
	}
	return ack, nil
}

func (p *demoParty) offer(ctx context.Context, typ string, amount int64, content string) error {
	ack, err := p.send(ctx, client.Frame{Type: typ, Terms: p.terms(amount), Content: content})
	if err != nil {
		return err
	}
	p.mine, p.lastAck = amount, ack
	return nil
}

// play runs the script on the room's events until negotiation_ended.
func (p *demoParty) play(ctx context.Context) (demoOutcome, error) {
	for {
		var ev client.Event
		select {
		case <-ctx.Done():
			return demoOutcome{}, fmt.Errorf("%s: %w", p.role, ctx.Err())
		case e, ok := <-p.room.Events():
			if !ok {
				return demoOutcome{}, fmt.Errorf("%s: the socket ended before negotiation_ended: %v", p.role, p.room.Err())
			}
			ev = e
		}
		switch ev.Type {
		case client.TypeNegotiationStarted:
			if ev.Context == nil || ev.Context.Status != "live" {
				return demoOutcome{}, fmt.Errorf("%s: negotiation_started without a live context: %s", p.role, ev.Raw)
			}
			if p.first {
				if ev.Context.Turn != p.me {
					return demoOutcome{}, fmt.Errorf("%s: expected to be on turn first: %s", p.role, ev.Raw)
				}
				if _, err := p.send(ctx, client.Frame{Type: client.FrameMessage, Content: "Hello! We'd love two sends in your primary slot this spring."}); err != nil {
					return demoOutcome{}, err
				}
				if err := p.offer(ctx, client.FrameProposeTerms, p.open, "Two sends, primary slot: we can do "+connect.FormatUSD(p.open)+"."); err != nil {
					return demoOutcome{}, err
				}
			}
		case client.TypeAgentThinking:
		case client.TypeNegotiationMessage:
			if ev.From == p.me {
				continue // our own frame, replayed after a reconnect
			}
			if err := p.answer(ctx, ev); err != nil {
				return demoOutcome{}, err
			}
		case client.TypeNegotiationEnded:
			return demoOutcome{ended: ev, lastAck: p.lastAck}, nil
		default:
			return demoOutcome{}, fmt.Errorf("%s: unexpected frame %s", p.role, ev.Raw)
		}
	}
}

// answer reacts to the other side's frame.
func (p *demoParty) answer(ctx context.Context, ev client.Event) error {
	switch ev.FrameType {
	case client.FrameMessage, client.FrameResearch, client.FrameAccept:
		return nil // talk; an accept is followed by negotiation_ended
	case client.FrameProposeTerms, client.FrameCounterTerms:
	default:
		return fmt.Errorf("%s: the other side sent %s, not in the script", p.role, ev.FrameType)
	}
	t, err := client.ParseTerms(ev.Terms)
	if err != nil {
		return fmt.Errorf("%s: %w", p.role, err)
	}
	theirs := t.AmountCents
	if p.mine == 0 { // the bouncer's first answer: look, think, ask high
		if !p.talked {
			p.talked = true
			if _, err := p.send(ctx, client.Frame{Type: client.FrameResearch, Content: "Looking up the brand's past campaigns and our open rates."}); err != nil {
				return err
			}
			if err := p.room.Thinking(ctx); err != nil {
				return err
			}
		}
		return p.offer(ctx, client.FrameCounterTerms, p.open, "Our primary slot goes for "+connect.FormatUSD(p.open)+" for two sends.")
	}
	if gap := theirs - p.mine; gap <= demoCloseGap && -gap <= demoCloseGap && p.within(theirs) {
		_, err := p.send(ctx, client.Frame{Type: client.FrameAccept}) // bare: takes what stands
		return err
	}
	// Halfway, to the nearest step (half a step rounds up).
	next := (p.mine + theirs + demoStep) / (2 * demoStep) * demoStep
	if !p.within(next) {
		next = p.limit
	}
	return p.offer(ctx, client.FrameCounterTerms, next, "Meet me at "+connect.FormatUSD(next)+"?")
}

// within reports whether the principal's grant allows amount.
func (p *demoParty) within(amount int64) bool {
	if p.role == "brand" {
		return amount <= p.limit
	}
	return amount >= p.limit
}
