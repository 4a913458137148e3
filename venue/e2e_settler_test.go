package venue_test

import (
	"context"
	"testing"

	"github.com/venuehq/venue/settlement"
	"github.com/venuehq/venue/venue"
)

// blockingSettler blocks every Settle until release closes, after telling
// entered which instruction it holds.
type blockingSettler struct {
	entered chan settlement.Instruction
	release chan struct{}
}

func (s blockingSettler) Settle(ctx context.Context, in settlement.Instruction) error {
	s.entered <- in
	<-s.release
	return nil
}

// TestE2ESettlerOffTheSendersPath: a settler that blocks delays neither the
// accepting party's message_ack nor the room's negotiation_ended; it still
// hears of the deal (ARCHITECTURE.md "One frame's way").
func TestE2ESettlerOffTheSendersPath(t *testing.T) {
	t.Parallel()
	st := blockingSettler{entered: make(chan settlement.Instruction, 1), release: make(chan struct{})}
	v := newE2E(t, func(c *venue.Config) { c.Settler = st })
	t.Cleanup(func() { close(st.release) }) // before the server stops
	_, _, negID, b, k := v.live(false)      // a live deal: not the arena
	b.send(`{"type":"message","id":"b1","content":"Two sends?"}`)
	b.expect("message_ack")
	k.expect("negotiation_message")
	k.send(`{"type":"propose_terms","id":"p1","content":"Two sends, $3,200.","terms":{"amount_usd":3200,"sends":2}}`)
	k.expect("message_ack")
	b.expect("negotiation_message")
	b.send(`{"type":"accept","id":"acc"}`)
	if ack := b.expect("message_ack"); ack["re"] != "acc" {
		t.Fatalf("ack: %v", ack)
	}
	k.expect("negotiation_message")
	for _, c := range []*e2eConn{b, k} {
		if end := c.expect("negotiation_ended"); end["status"] != "deal" {
			t.Fatalf("ended: %v", end)
		}
	}
	// The settler got the deal, and is still blocked on it.
	if in := <-st.entered; in.NegotiationID != negID {
		t.Fatalf("settled %+v, want negotiation %s", in, negID)
	}
}
