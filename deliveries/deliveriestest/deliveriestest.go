// Package deliveriestest is the contract every deliveries.Store keeps:
// Run it on a fresh store (memory, or Postgres on a fresh schema).
package deliveriestest

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/venuehq/venue/deliveries"
	"github.com/venuehq/venue/settlement"
)

var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

func live(id string) deliveries.Deal {
	return deliveries.Deal{ID: id, Status: "deal", Brand: "agt_b", Bouncer: "agt_k"}
}

// Run runs the contract on s. Negotiation ids are fresh per call.
func Run(t *testing.T, s deliveries.Store) {
	ctx := t.Context()
	neg := fmt.Sprintf("neg_%024x", time.Now().UnixNano())
	sub := deliveries.Submission{URL: "https://example.com/post", Note: "sent", SHA256: ""}

	// A refused change writes nothing, not even a record.
	boom := errors.New("boom")
	if _, err := s.Update(ctx, neg, func(r *deliveries.Record) error {
		r.Settlement = settlement.StatusDisputed
		return boom
	}); !errors.Is(err, boom) {
		t.Fatalf("Update: %v, want fn's error", err)
	}
	if recs, err := s.Records(ctx, []string{neg}); err != nil || len(recs) != 0 {
		t.Fatalf("after a refused change: %v %v", recs, err)
	}

	// A submission is kept with its settlement's status.
	var id string
	rec, err := s.Update(ctx, neg, func(r *deliveries.Record) error {
		d, werr := deliveries.Submit(r, live(neg), "agt_k", sub, deliveries.NewID(), t0, time.Hour)
		if werr != nil {
			return werr
		}
		id = d.ID
		return nil
	})
	if err != nil || rec.Settlement != settlement.StatusPending || len(rec.Deliveries) != 1 {
		t.Fatalf("submit: %+v %v", rec, err)
	}
	recs, err := s.Records(ctx, []string{neg, "neg_none"})
	if err != nil || len(recs) != 1 {
		t.Fatalf("Records: %v %v", recs, err)
	}
	got := recs[neg]
	if d := got.Latest(); d == nil || d.ID != id || d.URL != sub.URL || d.Note != "sent" || d.Status != deliveries.StatusSubmitted ||
		!d.SubmittedAt.Equal(t0) || !d.DueAt.Equal(t0.Add(time.Hour)) || !d.AnsweredAt.IsZero() {
		t.Fatalf("kept %+v", got)
	}

	// Not due before its time; due at it.
	if ids, err := s.Due(ctx, t0.Add(time.Hour-time.Second), 10); err != nil || contains(ids, neg) {
		t.Fatalf("due early: %v %v", ids, err)
	}
	if ids, err := s.Due(ctx, t0.Add(time.Hour), 10); err != nil || !contains(ids, neg) {
		t.Fatalf("not due: %v %v", ids, err)
	}

	// Racing approvals: exactly one changes it (the others find it answered).
	var wins atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.Update(ctx, neg, func(r *deliveries.Record) error {
				if deliveries.AutoApprove(r, t0.Add(2*time.Hour)) == nil {
					return boom
				}
				return nil
			})
			if err == nil {
				wins.Add(1)
			} else if !errors.Is(err, boom) {
				t.Errorf("racing approval: %v", err)
			}
		}()
	}
	wg.Wait()
	if n := wins.Load(); n != 1 {
		t.Fatalf("%d racing approvals changed it, want 1", n)
	}
	recs, _ = s.Records(ctx, []string{neg})
	got = recs[neg]
	if d := got.Latest(); got.Settlement != settlement.StatusReleased || d.Status != deliveries.StatusApproved ||
		d.AnsweredBy != deliveries.ByVenue || !d.AnsweredAt.Equal(t0.Add(2*time.Hour)) {
		t.Fatalf("after approval %+v", got)
	}
	if ids, err := s.Due(ctx, t0.Add(100*time.Hour), 10); err != nil || contains(ids, neg) {
		t.Fatalf("due after approval: %v %v", ids, err)
	}

	// Report moves it once.
	if _, err := s.Update(ctx, neg, func(r *deliveries.Record) error {
		if werr := deliveries.Report(r, settlement.StatusSettled); werr != nil {
			return werr
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(ctx, neg, func(r *deliveries.Record) error {
		if werr := deliveries.Report(r, settlement.StatusFailed); werr != nil {
			return werr
		}
		return nil
	}); err == nil {
		t.Fatal("a second report was taken")
	}
	recs, _ = s.Records(ctx, []string{neg})
	if recs[neg].Settlement != settlement.StatusSettled {
		t.Fatalf("settled: %+v", recs[neg])
	}
}

func contains(ids []string, id string) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}
