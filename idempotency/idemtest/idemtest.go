// Package idemtest is the contract suite every idempotency.Store passes.
package idemtest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/venuehq/venue/idempotency"
)

var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

// Run runs the suite on s (empty).
func Run(t *testing.T, s idempotency.Store) {
	ctx := context.Background()
	must := func(st idempotency.State, a idempotency.Answer, err error) (idempotency.State, idempotency.Answer) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return st, a
	}
	if st, _ := must(s.Begin(ctx, "a", "k1", "fp1", t0)); st != idempotency.New {
		t.Fatalf("a free key: %v", st)
	}
	if st, _ := must(s.Begin(ctx, "a", "k1", "fp1", t0)); st != idempotency.InFlight {
		t.Fatalf("the same request in flight: %v", st)
	}
	if st, _ := must(s.Begin(ctx, "a", "k1", "fp2", t0)); st != idempotency.Conflict {
		t.Fatalf("another request with the key: %v", st)
	}
	if st, _ := must(s.Begin(ctx, "b", "k1", "fp2", t0)); st != idempotency.New {
		t.Fatalf("another agent's key: %v", st)
	}
	if err := s.Finish(ctx, "a", "k1", idempotency.Answer{Status: 201, ContentType: "application/json", Body: []byte(`{"x":1}`)}); err != nil {
		t.Fatal(err)
	}
	st, a := must(s.Begin(ctx, "a", "k1", "fp1", t0.Add(time.Hour)))
	if st != idempotency.Replay || a.Status != 201 || string(a.Body) != `{"x":1}` || a.ContentType != "application/json" {
		t.Fatalf("replay: %v %+v", st, a)
	}
	if st, _ := must(s.Begin(ctx, "a", "k1", "fp2", t0.Add(time.Hour))); st != idempotency.Conflict {
		t.Fatalf("another body after the answer: %v", st)
	}
	if st, _ := must(s.Begin(ctx, "a", "k1", "fp2", t0.Add(idempotency.Retention))); st != idempotency.New {
		t.Fatalf("after the retention: %v", st)
	}
	// Release frees an unanswered key.
	must(s.Begin(ctx, "a", "k2", "fp", t0))
	if err := s.Release(ctx, "a", "k2"); err != nil {
		t.Fatal(err)
	}
	if st, _ := must(s.Begin(ctx, "a", "k2", "fp", t0)); st != idempotency.New {
		t.Fatalf("a released key: %v", st)
	}
	testRace(t, s)
}

// testRace: the same key at once, exactly one New.
func testRace(t *testing.T, s idempotency.Store) {
	ctx := context.Background()
	var wg sync.WaitGroup
	var mu sync.Mutex
	news := 0
	for range 8 {
		wg.Go(func() {
			st, _, err := s.Begin(ctx, "c", "race", "fp", t0)
			if err != nil {
				t.Error(err)
			}
			if st == idempotency.New {
				mu.Lock()
				news++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if news != 1 {
		t.Fatalf("%d requests took one key at once, want 1", news)
	}
}
