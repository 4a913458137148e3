package postgres_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/venuehq/venue/events"
	"github.com/venuehq/venue/events/eventspg"
	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/store/postgres"
	"github.com/venuehq/venue/store/storetest"
)

// stepEvents is an EventsOf for tests: one event per transcript entry for
// each party, its data the frame.
func stepEvents(st *negotiation.State, out negotiation.Outcome) []events.Event {
	var evs []events.Event
	for _, en := range out.Entries {
		for _, p := range []string{st.Brand.AgentID, st.Bouncer.AgentID} {
			evs = append(evs, events.NewTyped(p, st.ID, en.Type, en.Frame, en.At))
		}
	}
	return evs
}

// TestEventsInTransaction: with SetEvents, every committed step's events
// are in the event log once the step returns, in seq order per agent, with
// group commit on (steps of many negotiations in one batch) and off; a
// step that does not commit writes none.
func TestEventsInTransaction(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts []postgres.Option
	}{{"group commit", nil}, {"one transaction a step", []postgres.Option{postgres.WithGroupCommit(0, 1, 0)}}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newStore(t, tc.opts...)
			ctx := t.Context()
			log := eventspg.New(s.Pool())
			ns := make([]negotiation.State, 8)
			for i := range ns {
				ns[i] = liveNegotiation(t, s)
			}
			s.SetEvents(stepEvents) // after the start: the start steps wrote none
			const each = 6
			var wg sync.WaitGroup
			for _, n := range ns {
				wg.Go(func() {
					for j := range each {
						from := []string{n.Brand.AgentID, n.Bouncer.AgentID}[j%2]
						if _, _, err := s.Update(ctx, n.ID, applyFrame(t, from,
							fmt.Sprintf(`{"type":"message","content":"m%d"}`, j), storetest.T0.Add(time.Second))); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			for _, n := range ns {
				for _, ag := range []string{n.Brand.AgentID, n.Bouncer.AgentID} {
					evs, err := log.After(ctx, ag, "", events.MaxLimit)
					if err != nil {
						t.Fatal(err)
					}
					if len(evs) != each {
						t.Fatalf("%s: %d events, want %d", ag, len(evs), each)
					}
					for j, e := range evs {
						if want := fmt.Sprintf(`"content":"m%d"`, j); !strings.Contains(string(e.Data), want) || e.NegotiationID != n.ID {
							t.Fatalf("%s event %d: %s (negotiation %s)", ag, j, e.Data, e.NegotiationID)
						}
					}
				}
			}
			// A step that fails at the store (its transcript row exists
			// already) writes no event either.
			n := ns[0]
			if _, err := s.Pool().Exec(ctx, `INSERT INTO transcript (negotiation_id, seq, frame, hash, created_at)
				VALUES ($1, $2, '{}', 'x', now())`, n.ID, each+1); err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.Update(ctx, n.ID, applyFrame(t, n.Brand.AgentID, `{"type":"message","content":"lost"}`, storetest.T0.Add(time.Second))); err == nil {
				t.Fatal("a step over an existing transcript row committed")
			}
			evs, err := log.After(ctx, n.Brand.AgentID, "", events.MaxLimit)
			if err != nil || len(evs) != each {
				t.Fatalf("after a failed step: %d events (%v), want %d", len(evs), err, each)
			}
		})
	}
}
