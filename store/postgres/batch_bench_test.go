package postgres_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/venuehq/venue/events"
	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/store/storetest"
)

// BenchmarkGroupCommitWave is a wave of steps of 128 negotiations at once
// (a herd of clocks coming due, or 128 parties' frames): every op is 128
// concurrent Updates, each a message written with its transcript row, its
// event-log entries and the state, through the group-commit writer on the
// test Postgres. ns/op is the wave's time; steps/s is what it sustains.
func BenchmarkGroupCommitWave(b *testing.B) {
	const wave = 128
	s := newStore(b)
	// Every entry goes to both parties' event logs, as the venue's
	// recorder writes them (internal/nosocket).
	s.SetEvents(func(st *negotiation.State, out negotiation.Outcome) []events.Event {
		var evs []events.Event
		for _, en := range out.Entries {
			for _, p := range []string{st.Brand.AgentID, st.Bouncer.AgentID} {
				evs = append(evs, events.NewTyped(p, st.ID, en.Type, en.Frame, en.At))
			}
		}
		return evs
	})
	negs := make([]negotiation.State, wave)
	for i := range negs {
		negs[i] = liveNegotiation(b, s)
	}
	ctx := b.Context()
	at := storetest.T0.Add(time.Second)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		n++
		var wg sync.WaitGroup
		for i := range negs {
			from := negs[i].Brand.AgentID // turns alternate: the brand, then the bouncer
			if n%2 == 0 {
				from = negs[i].Bouncer.AgentID
			}
			step := applyFrame(b, from, fmt.Sprintf(`{"type":"message","content":"wave %d"}`, n), at)
			wg.Go(func() {
				if _, _, err := s.Update(ctx, negs[i].ID, func(tx store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
					return step(tx, st)
				}); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
	}
	b.ReportMetric(float64(wave*n)/b.Elapsed().Seconds(), "steps/s")
}
