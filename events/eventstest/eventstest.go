// Package eventstest is the contract suite every events.Store passes.
package eventstest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/venuehq/venue/events"
)

var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

func frame(i int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"type":"negotiation_message","negotiation_id":"neg_1","seq":%d}`, i))
}

// Run runs the suite on s (empty).
func Run(t *testing.T, s events.Store) {
	ids := testPaging(t, s)
	testPurge(t, s, ids)
	testConcurrent(t, s)
}

// testPaging appends five events of "a" (an hour apart) and five of "b",
// and pages them; it returns the ids of "a"'s.
func testPaging(t *testing.T, s events.Store) []string {
	ctx := context.Background()
	var ids []string
	for i := range 5 {
		e := events.New("a", "", frame(i), t0.Add(time.Duration(i)*time.Hour))
		ids = append(ids, e.ID)
		if err := s.Append(ctx, e, events.New("b", "", frame(100+i), t0)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.After(ctx, "a", "", 3)
	if err != nil || len(got) != 3 || got[0].ID != ids[0] || got[2].ID != ids[2] {
		t.Fatalf("first page: %v %v", got, err)
	}
	if got[1].Type != "negotiation_message" || got[1].NegotiationID != "neg_1" || string(got[1].Data) != string(frame(1)) || !got[1].CreatedAt.Equal(t0.Add(time.Hour)) {
		t.Fatalf("event read back: %+v", got[1])
	}
	got, err = s.After(ctx, "a", ids[2], 100)
	if err != nil || len(got) != 2 || got[0].ID != ids[3] || got[1].ID != ids[4] {
		t.Fatalf("after the third: %v %v", got, err)
	}
	if _, err := s.After(ctx, "b", ids[0], 10); !errors.Is(err, events.ErrUnknownAfter) {
		t.Fatalf("another agent's id: %v, want ErrUnknownAfter", err)
	}
	if _, err := s.After(ctx, "a", "evt_nope", 10); !errors.Is(err, events.ErrUnknownAfter) {
		t.Fatalf("unknown id: %v", err)
	}
	if got, _ := s.After(ctx, "nobody", "", 10); len(got) != 0 {
		t.Fatalf("an agent without events: %v", got)
	}
	return ids
}

func testPurge(t *testing.T, s events.Store, ids []string) {
	ctx := context.Background()
	n, err := s.Purge(ctx, t0.Add(2*time.Hour))
	if err != nil || n != 2+5 {
		t.Fatalf("purge: %d %v, want 7", n, err)
	}
	if got, _ := s.After(ctx, "a", "", 10); len(got) != 3 || got[0].ID != ids[2] {
		t.Fatalf("after the purge: %v", got)
	}
}

// testConcurrent: concurrent appends of one agent, every event paged once.
func testConcurrent(t *testing.T, s events.Store) {
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := range 10 {
				if err := s.Append(ctx, events.New("c", "", frame(w*100+i), t0)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	after := ""
	for {
		page, err := s.After(ctx, "c", after, 7)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, e := range page {
			if seen[e.ID] {
				t.Fatalf("event %s twice", e.ID)
			}
			seen[e.ID] = true
		}
		after = page[len(page)-1].ID
	}
	if len(seen) != 80 {
		t.Fatalf("paged %d events, want 80", len(seen))
	}
}
