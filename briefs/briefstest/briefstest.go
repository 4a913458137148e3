// Package briefstest is the contract suite every briefs.Store passes
// (PROTOCOL.md "Sealed briefs"): the collection window closes quotes and
// declines, a later quote replaces the earlier one, quotes_ready is marked
// once however many callers race, one award a brief, and the briefs not
// yet ready are found for their wakes.
package briefstest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/venuehq/venue/briefs"
	"github.com/venuehq/venue/negotiation"
)

var start = time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)

var n atomic.Int64

func id(prefix string) string { return fmt.Sprintf("%s_%024x", prefix, n.Add(1)) }

func newBrief(brand string, at time.Time, collect time.Duration, bouncers ...string) briefs.Brief {
	b := briefs.Brief{ID: id("brf"), Brand: negotiation.Party{AgentID: brand, Name: "Acme"}, Offer: json.RawMessage(`{"title":"t"}`),
		CreatedAt: at, CollectUntil: at.Add(collect)}
	for _, k := range bouncers {
		b.Offers = append(b.Offers, briefs.Addressed{OfferID: id("off"), To: k})
	}
	return b
}

func quote(b briefs.Brief, i int, amount int, at time.Time) briefs.Quote {
	return briefs.Quote{ID: id("quo"), BriefID: b.ID, OfferID: b.Offers[i].OfferID, From: b.Offers[i].To,
		Terms: json.RawMessage(fmt.Sprintf(`{"amount_usd":%d}`, amount)), OfferHash: "sha256:x", At: at}
}

// Run runs the suite on the stores newStore makes (a fresh, empty one per
// call).
func Run(t *testing.T, newStore func(t *testing.T) briefs.Store) {
	t.Run("window", func(t *testing.T) { testWindow(t, newStore(t)) })
	t.Run("ready once", func(t *testing.T) { testReadyOnce(t, newStore(t)) })
	t.Run("award once", func(t *testing.T) { testAwardOnce(t, newStore(t)) })
	t.Run("open and counts", func(t *testing.T) { testOpenAndCounts(t, newStore(t)) })
}

func testWindow(t *testing.T, s briefs.Store) {
	ctx := context.Background()
	b := newBrief("agt_brand", start, time.Minute, "agt_a", "agt_b", "agt_c")
	if err := s.CreateBrief(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateBrief(ctx, b); !errors.Is(err, briefs.ErrConflict) {
		t.Fatalf("a second create: %v", err)
	}
	got, err := s.Brief(ctx, b.ID)
	if err != nil || len(got.Offers) != 3 || got.Offers[1].To != "agt_b" || !got.CollectUntil.Equal(b.CollectUntil) || got.Brand.Name != "Acme" {
		t.Fatalf("brief: %+v %v", got, err)
	}
	if of, err := s.BriefOfOffer(ctx, b.Offers[2].OfferID); err != nil || of.ID != b.ID {
		t.Fatalf("brief of offer: %+v %v", of, err)
	}
	if _, err := s.BriefOfOffer(ctx, "off_none"); !errors.Is(err, briefs.ErrNotFound) {
		t.Fatalf("unknown offer: %v", err)
	}
	q1 := quote(b, 0, 100, start)
	q2 := quote(b, 0, 90, start.Add(time.Second))
	for _, q := range []briefs.Quote{q1, q2} {
		if err := s.PutQuote(ctx, q, q.At); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Quote(ctx, q1.ID); !errors.Is(err, briefs.ErrNotFound) {
		t.Fatalf("a replaced quote: %v", err)
	}
	if err := s.PutQuote(ctx, quote(b, 1, 50, start), start); err != nil {
		t.Fatal(err)
	}
	if err := s.Decline(ctx, b.Offers[1].OfferID, "booked", start.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := s.PutQuote(ctx, quote(b, 1, 40, start), start.Add(3*time.Second)); !errors.Is(err, briefs.ErrClosed) {
		t.Fatalf("a quote after a decline: %v", err)
	}
	if err := s.PutQuote(ctx, quote(b, 2, 40, start), b.CollectUntil); !errors.Is(err, briefs.ErrClosed) {
		t.Fatalf("a quote at collect_until: %v", err)
	}
	if err := s.Decline(ctx, b.Offers[2].OfferID, "", b.CollectUntil); !errors.Is(err, briefs.ErrClosed) {
		t.Fatalf("a decline at collect_until: %v", err)
	}
	qs, err := s.Quotes(ctx, b.ID)
	if err != nil || len(qs) != 1 || qs[0].ID != q2.ID || string(qs[0].Terms) != `{"amount_usd":90}` || qs[0].From != "agt_a" {
		t.Fatalf("quotes: %+v %v", qs, err)
	}
	got, _ = s.Brief(ctx, b.ID)
	if got.Offers[1].DeclinedAt.IsZero() || got.Offers[1].Reason != "booked" {
		t.Fatalf("declined offer: %+v", got.Offers[1])
	}
}

func testReadyOnce(t *testing.T, s briefs.Store) {
	ctx := context.Background()
	b := newBrief("agt_brand", start, time.Minute, "agt_a", "agt_b")
	if err := s.CreateBrief(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := s.PutQuote(ctx, quote(b, 1, 70, start), start); err != nil {
		t.Fatal(err)
	}
	due, err := s.Unready(ctx, time.Time{}, 0)
	if err != nil || len(due) != 1 || due[0].ID != b.ID || !due[0].At.Equal(b.CollectUntil) {
		t.Fatalf("unready: %+v %v", due, err)
	}
	if due, _ := s.Unready(ctx, b.CollectUntil, 10); len(due) != 0 {
		t.Fatalf("overdue before collect_until: %+v", due)
	}
	var wins atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			qs, won, err := s.MarkReady(ctx, b.ID, b.CollectUntil)
			if err != nil {
				t.Error(err)
			}
			if won {
				wins.Add(1)
				if len(qs) != 1 || qs[0].OfferID != b.Offers[1].OfferID {
					t.Errorf("quotes of the win: %+v", qs)
				}
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d callers marked it ready", wins.Load())
	}
	if err := s.PutQuote(ctx, quote(b, 0, 10, start), start.Add(time.Second)); !errors.Is(err, briefs.ErrClosed) {
		t.Fatalf("a quote after quotes_ready (by a clock behind): %v", err)
	}
	if due, _ := s.Unready(ctx, time.Time{}, 0); len(due) != 0 {
		t.Fatalf("unready after ready: %+v", due)
	}
	if _, _, err := s.MarkReady(ctx, "brf_none", start); !errors.Is(err, briefs.ErrNotFound) {
		t.Fatalf("unknown brief: %v", err)
	}
}

func testAwardOnce(t *testing.T, s briefs.Store) {
	ctx := context.Background()
	b := newBrief("agt_brand", start, time.Minute, "agt_a", "agt_b")
	if err := s.CreateBrief(ctx, b); err != nil {
		t.Fatal(err)
	}
	q := quote(b, 0, 70, start)
	if err := s.PutQuote(ctx, q, start); err != nil {
		t.Fatal(err)
	}
	at := b.CollectUntil.Add(time.Minute)
	if won, err := s.Award(ctx, b.ID, q.ID, "neg_1", at); err != nil || !won {
		t.Fatalf("award: %v %v", won, err)
	}
	if won, err := s.Award(ctx, b.ID, q.ID, "neg_2", at); err != nil || won {
		t.Fatalf("a second award: %v %v", won, err)
	}
	got, _ := s.Brief(ctx, b.ID)
	if got.AwardedQuote != q.ID || got.NegotiationID != "neg_1" || !got.AwardedAt.Equal(at) {
		t.Fatalf("awarded: %+v", got)
	}
	if err := s.Unaward(ctx, b.ID, "quo_other"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Brief(ctx, b.ID); got.AwardedQuote != q.ID {
		t.Fatalf("unaward of another quote took it back: %+v", got)
	}
	if err := s.Unaward(ctx, b.ID, q.ID); err != nil {
		t.Fatal(err)
	}
	if won, err := s.Award(ctx, b.ID, q.ID, "neg_3", at); err != nil || !won {
		t.Fatalf("award after unaward: %v %v", won, err)
	}
	if _, err := s.Award(ctx, "brf_none", q.ID, "neg_4", at); !errors.Is(err, briefs.ErrNotFound) {
		t.Fatalf("unknown brief: %v", err)
	}
}

func testOpenAndCounts(t *testing.T, s briefs.Store) {
	ctx := context.Background()
	old := newBrief("agt_brand", start.Add(-2*time.Hour), time.Minute, "agt_a", "agt_b")
	open := newBrief("agt_brand", start, time.Hour, "agt_a", "agt_b")
	other := newBrief("agt_other", start, time.Hour, "agt_a", "agt_c")
	for _, b := range []briefs.Brief{old, open, other} {
		if err := s.CreateBrief(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	now := start.Add(time.Minute)
	recent, n, err := s.Counts(ctx, "agt_brand", now.Add(-time.Hour), now)
	if err != nil || recent != 1 || n != 1 {
		t.Fatalf("counts: %d %d %v", recent, n, err)
	}
	got, err := s.OpenFor(ctx, "agt_a", now)
	if err != nil || len(got) != 2 {
		t.Fatalf("open for a: %+v %v", got, err)
	}
	if err := s.Decline(ctx, open.Offers[1].OfferID, "no", now); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.OpenFor(ctx, "agt_b", now); len(got) != 0 {
		t.Fatalf("open for b after its decline: %+v", got)
	}
	if got, _ := s.OpenFor(ctx, "agt_a", start.Add(2*time.Hour)); len(got) != 0 {
		t.Fatalf("open after collect_until: %+v", got)
	}
}
