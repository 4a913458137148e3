package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/venuehq/venue/client"
	"github.com/venuehq/venue/connect"
	"github.com/venuehq/venue/receipt"
)

// demoOutcome is what one socket saw end the negotiation.
type demoOutcome struct {
	ended   client.Event
	lastAck *client.Ack // the party's last binding frame's ack
}

// demoPlay is one negotiation of the demo: the observer's socket and the
// two parties'.
type demoPlay struct {
	negID          string
	brand, bouncer demoAgent
	obs            *client.Room
	parties        [2]*demoParty // the brand, the bouncer
	who            func(string) string
}

// demoRoom plays negotiation negID to its end, printing what an observer
// sees, then checks the deal and verifies the receipt.
func demoRoom(ctx context.Context, o Options, out io.Writer, c *client.Client, negID string, brand, bouncer demoAgent) error {
	p := &demoPlay{negID: negID, brand: brand, bouncer: bouncer}
	labels := map[string]string{brand.id: "brand", bouncer.id: "bouncer"}
	p.who = func(id string) string {
		if l, ok := labels[id]; ok {
			return l
		}
		if id == "" {
			return "venue"
		}
		return id
	}
	defer p.close()
	if err := p.open(ctx, o, out, c); err != nil {
		return err
	}
	watched, lastSeq, outs, err := p.play(ctx, out)
	if err != nil {
		return err
	}
	end := watched.ended
	fmt.Fprintln(out)
	if err := p.checkDeal(end, outs); err != nil {
		return err
	}
	return p.checkReceipt(ctx, out, c, end, lastSeq)
}

// open joins the observer (and prints its negotiation_started), then the
// parties.
func (p *demoPlay) open(ctx context.Context, o Options, out io.Writer, c *client.Client) error {
	obs, err := c.DialRoom(ctx, p.negID, client.RoomOptions{Observe: true})
	if err != nil {
		return fmt.Errorf("observe: %w", err)
	}
	p.obs = obs
	fmt.Fprintln(out, "transcript, as an observer sees it:")
	// The observer is subscribed once it has its negotiation_started: from
	// then on it sees everything live, agent_thinking included (which no
	// replay can give).
	select {
	case ev, ok := <-obs.Events():
		if !ok || ev.Type != client.TypeNegotiationStarted {
			return fmt.Errorf("observer: want negotiation_started first, got %s (%v)", ev.Raw, obs.Err())
		}
		fmt.Fprintln(out, "  "+connect.FormatEvent(ev, p.who))
	case <-ctx.Done():
		return fmt.Errorf("observer: no negotiation_started: %w", ctx.Err())
	}
	kr, err := p.bouncer.c.DialRoom(ctx, p.negID, client.RoomOptions{})
	if err != nil {
		return fmt.Errorf("bouncer room: %w", err)
	}
	p.parties[1] = &demoParty{role: "bouncer", me: p.bouncer.id, room: kr, open: demoBouncerAsk, limit: demoFloor, ackWait: o.AckWait, pace: o.Pace}
	br, err := p.brand.c.DialRoom(ctx, p.negID, client.RoomOptions{})
	if err != nil {
		return fmt.Errorf("brand room: %w", err)
	}
	p.parties[0] = &demoParty{role: "brand", me: p.brand.id, room: br, first: true, open: demoBrandOpen, limit: demoCeiling, ackWait: o.AckWait, pace: o.Pace}
	return nil
}

// close closes the sockets open has opened.
func (p *demoPlay) close() {
	if p.obs != nil {
		_ = p.obs.Close()
	}
	for _, party := range p.parties {
		if party != nil {
			_ = party.room.Close()
		}
	}
}

// play runs the observer and both parties until the end; the first
// failure stops all three.
func (p *demoPlay) play(ctx context.Context, out io.Writer) (watched demoOutcome, lastSeq int64, outs [2]demoOutcome, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	run := func(f func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(); err != nil {
				errs <- err
				cancel()
			}
		}()
	}
	run(func() (err error) { watched, lastSeq, err = demoWatch(ctx, p.obs, out, p.who); return })
	for i, party := range p.parties {
		run(func() (err error) { outs[i], err = party.play(ctx); return })
	}
	wg.Wait()
	close(errs)
	if err, failed := <-errs; failed {
		return watched, lastSeq, outs, err // the first failure; the others are its echo (context canceled)
	}
	return watched, lastSeq, outs, nil
}

// checkDeal checks that every socket saw the same deal, the one accepted,
// within both grants, and prints it.
func (p *demoPlay) checkDeal(end client.Event, outs [2]demoOutcome) error {
	if end.Status != "deal" {
		return fmt.Errorf("the negotiation ended %s, not in a deal", end.Status)
	}
	for i, po := range outs {
		if po.ended.Seq != end.Seq || po.ended.Status != end.Status || po.ended.OfferHash != end.OfferHash || po.ended.Receipt != end.Receipt {
			return fmt.Errorf("the %s saw another ending than the observer: %s", p.parties[i].role, po.ended.Raw)
		}
	}
	terms, err := client.ParseTerms(end.Terms)
	if err != nil {
		return fmt.Errorf("the deal's terms: %w", err)
	}
	// The bouncer's accept took the brand's last counter.
	if a := outs[0].lastAck; a == nil || a.OfferHash != end.OfferHash {
		return fmt.Errorf("the deal's offer_hash %s is not the brand's last proposal's", end.OfferHash)
	}
	if terms.AmountCents > demoCeiling || terms.AmountCents < demoFloor {
		return fmt.Errorf("the deal at %s is outside the grants (%s-%s)", connect.FormatUSD(terms.AmountCents), connect.FormatUSD(demoFloor), connect.FormatUSD(demoCeiling))
	}
	return nil
}

// checkReceipt verifies the receipt: the one in negotiation_ended, the one
// served, the JWKS and the transcript all agree with what the observer
// saw.
func (p *demoPlay) checkReceipt(ctx context.Context, out io.Writer, c *client.Client, end client.Event, lastSeq int64) error {
	terms, _ := client.ParseTerms(end.Terms) // checkDeal parsed them
	fmt.Fprintf(out, "outcome  DEAL at %s, %s, %d sends (offer_hash %s)\n", connect.FormatUSD(terms.AmountCents), terms.Category, terms.Sends, end.OfferHash)
	claims, tr, err := c.VerifyReceipt(ctx, p.negID)
	if err != nil {
		return fmt.Errorf("receipt: %w", err)
	}
	served, err := c.Receipt(ctx, p.negID)
	if err != nil {
		return err
	}
	if served != end.Receipt {
		return errors.New("the receipt served differs from the one in negotiation_ended")
	}
	jwks, err := c.JWKS(ctx)
	if err != nil {
		return err
	}
	if _, err := receipt.Verify(end.Receipt, jwks); err != nil {
		return fmt.Errorf("the receipt of negotiation_ended: %w", err)
	}
	switch {
	case claims.Status != "deal" || claims.OfferHash != end.OfferHash:
		return fmt.Errorf("the receipt says %s %s, the room %s %s", claims.Status, claims.OfferHash, end.Status, end.OfferHash)
	case claims.Brand != p.brand.id || claims.Bouncer != p.bouncer.id || !claims.Arena:
		return fmt.Errorf("the receipt names %s and %s (arena %v)", claims.Brand, claims.Bouncer, claims.Arena)
	case claims.LastSeq != lastSeq || tr.HeadHash != claims.HeadHash || end.Hash != claims.HeadHash:
		return fmt.Errorf("the receipt commits to seq %d head %s; the observer saw seq %d head %s", claims.LastSeq, claims.HeadHash, lastSeq, end.Hash)
	}
	fmt.Fprintf(out, "receipt  OK: signed by the venue's key, %s, arena %v, %s to %s\n", claims.Status, claims.Arena, claims.StartedAt, claims.EndedAt)
	fmt.Fprintf(out, "transcript OK: %d entries re-hashed, head %s\n", len(tr.Entries), claims.HeadHash)
	return nil
}

// demoWatch prints what the observer sees after its negotiation_started,
// checking that it is what the protocol promises: seqs 1, 2, 3, ... without
// a gap, only the frames a negotiation to a deal has.
func demoWatch(ctx context.Context, obs *client.Room, out io.Writer, who func(string) string) (demoOutcome, int64, error) {
	var last int64
	for {
		select {
		case <-ctx.Done():
			return demoOutcome{}, last, fmt.Errorf("observer: %w", ctx.Err())
		case ev, ok := <-obs.Events():
			if !ok {
				return demoOutcome{}, last, fmt.Errorf("the observer's socket ended before negotiation_ended: %v", obs.Err())
			}
			switch ev.Type {
			case client.TypeAgentThinking:
				fmt.Fprintln(out, "  "+connect.FormatEvent(ev, who))
				continue
			case client.TypeNegotiationMessage, client.TypeNegotiationEnded:
			default:
				return demoOutcome{}, last, fmt.Errorf("observer: unexpected frame %s", ev.Raw)
			}
			if ev.Seq != last+1 {
				return demoOutcome{}, last, fmt.Errorf("observer: seq %d after seq %d: a gap", ev.Seq, last)
			}
			last = ev.Seq
			fmt.Fprintln(out, "  "+connect.FormatEvent(ev, who))
			if ev.Type == client.TypeNegotiationEnded {
				return demoOutcome{ended: ev}, last, nil
			}
		}
	}
}
