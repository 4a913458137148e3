package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/receipt"
	"github.com/venuehq/venue/store"
)

// TestReceiptOfAStepThatDidNotLand: a store that builds a step's event-log
// entries in its transaction signs the ending's receipt there
// (OutboundOf). When that transaction does not land and another step ends
// the negotiation over another head, the sockets, the receipt route and
// the receipt log must get the receipt of what landed, not of what was
// signed in the lost transaction. (The chaos run, with commits cut and
// their answers dropped, found a receipt over seq 2 naming another head
// than the stored seq 2's.)
func TestReceiptOfAStepThatDidNotLand(t *testing.T) {
	f := setup(t)
	ls := &losingStore{Store: f.store}
	f.hub.store = ls
	k, err := receipt.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	f.hub.SetReceipts(receipt.NewCache(k, 0))
	ctx := context.Background()
	st := f.live(t, "neg_lost")
	sub := newSink()
	defer f.hub.Subscribe(st.ID, &st, st.Brand.AgentID, -1, sub).Close()
	sub.next(t, negotiation.TypeNegotiationStarted)

	ls.lose.Store(true)
	var signed string
	_, _, err = f.hub.Update(ctx, st.ID, func(_ store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
		walk, werr := negotiation.DecodeFrame([]byte(`{"type":"walk"}`))
		if werr != nil {
			t.Fatal(werr)
		}
		out, err := st.Apply(st.Turn, walk, f.clock.Now().Add(time.Second), nil)
		if err != nil {
			t.Fatal(err)
		}
		e := out.Entries[len(out.Entries)-1]
		signed = receiptIn(t, f.hub.OutboundOf(st, e.Frame, e.Hash))
		return out, nil
	})
	ls.lose.Store(false)
	if !errors.Is(err, store.ErrUnavailable) || signed == "" {
		t.Fatalf("the lost step: err %v, receipt %q", err, signed)
	}

	// What lands: the other party walks later, over another head.
	f.clock.Advance(5 * time.Second)
	landed, _, err := f.hub.Update(ctx, st.ID, func(_ store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
		walk, _ := negotiation.DecodeFrame([]byte(`{"type":"walk"}`))
		return st.Apply(st.Turn, walk, f.clock.Now(), nil)
	})
	if err != nil || !landed.Ended() {
		t.Fatalf("the landed step: %v, status %s", err, landed.Status)
	}
	ended := sub.next(t, negotiation.TypeNegotiationEnded)
	tok, _ := ended["receipt"].(string)
	fromRoute, err := f.hub.Receipts().Receipt(&landed)
	if err != nil {
		t.Fatal(err)
	}
	jwks := receipt.JWKS(k)
	for what, tok := range map[string]string{"negotiation_ended": tok, "Cache.Receipt": fromRoute} {
		c, err := receipt.Verify(tok, jwks)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if c.LastSeq != landed.LastSeq || c.HeadHash != landed.HeadHash {
			t.Fatalf("%s: the receipt is over seq %d %s; what landed ends at seq %d %s (the lost step's receipt: %v)",
				what, c.LastSeq, c.HeadHash, landed.LastSeq, landed.HeadHash, tok == signed)
		}
	}
}

// losingStore runs a step and then, while lose is set, aborts its
// transaction (nothing kept, store.ErrUnavailable), as Postgres does when
// the commit fails after the step's events were built.
type losingStore struct {
	store.Store
	lose atomic.Bool
}

func (s *losingStore) Update(ctx context.Context, id string, step store.Step) (negotiation.State, negotiation.Outcome, error) {
	if !s.lose.Load() {
		return s.Store.Update(ctx, id, step)
	}
	st, err := s.Store.Negotiation(ctx, id)
	if err != nil {
		return st, negotiation.Outcome{}, err
	}
	work := st.Clone()
	if _, err := step(nil, &work); err != nil {
		return st, negotiation.Outcome{}, err
	}
	return st, negotiation.Outcome{}, fmt.Errorf("commit: %w", store.ErrUnavailable)
}

// receiptIn is the receipt member of an outbound frame.
func receiptIn(t *testing.T, frame []byte) string {
	t.Helper()
	var m struct {
		Receipt string `json:"receipt"`
	}
	if err := json.Unmarshal(frame, &m); err != nil {
		t.Fatal(err)
	}
	return m.Receipt
}
