package timers

import (
	"context"
	"log/slog"
	"time"

	"github.com/venuehq/venue/clock"
	"github.com/venuehq/venue/store"
)

// Defaults of Sweeper.
const (
	DefaultSweepEvery = 5 * time.Second
	DefaultSweepGrace = 2 * time.Second
	sweepLimit        = 1000
)

// WakeStore is what Sweeper reads of the store (store.Store has it).
type WakeStore interface {
	Wakes(ctx context.Context) ([]store.Wake, error)
	Overdue(ctx context.Context, before time.Time, limit int) ([]store.Wake, error)
}

// Sweeper keeps the clocks from depending on the timers keeping their
// wakes: the deadlines live in the store, so
//   - when Lost signals (timers/redistimers: Redis restarted empty, was
//     flushed, failed over, or refused writes) it re-arms every running
//     clock from the store, and logs it;
//   - every Every it asks the store for clocks more than Grace overdue (a
//     wake lost some other way, or claimed by a node that died before
//     settling it) and arms them, which fires them at once.
//
// Arming is idempotent (Timers.Schedule never moves a wake later) and a
// wake that fires early or twice changes nothing, so both are safe on
// every node at once.
type Sweeper struct {
	Store  WakeStore
	Timers Timers
	Clock  clock.Clock   // default the wall clock
	Every  time.Duration // default DefaultSweepEvery
	Grace  time.Duration // default DefaultSweepGrace
	// Lost, if not nil, signals that wakes may have been lost (for
	// redistimers.Timers, its Lost()).
	Lost <-chan struct{}
	Log  *slog.Logger // default slog.Default()
}

func (s *Sweeper) defaults() {
	if s.Clock == nil {
		s.Clock = clock.Real{}
	}
	if s.Every <= 0 {
		s.Every = DefaultSweepEvery
	}
	if s.Grace <= 0 {
		s.Grace = DefaultSweepGrace
	}
	if s.Log == nil {
		s.Log = slog.Default()
	}
}

// Run sweeps every Every and re-arms on each Lost signal until ctx is
// done; errors are logged and the next round tried. It returns nil.
func (s *Sweeper) Run(ctx context.Context) error {
	s.defaults()
	for {
		t := s.Clock.NewTimer(s.Every)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-s.Lost:
			t.Stop()
			n, err := s.Rearm(ctx)
			if err != nil {
				s.Log.Error("re-arm clocks from the store after lost wakes", "err", err)
				continue
			}
			s.Log.Warn("wakes may have been lost; clocks re-armed from the store", "negotiations", n)
		case <-t.C():
			n, err := s.Sweep(ctx)
			if err != nil {
				s.Log.Error("sweep the store for overdue clocks", "err", err)
				continue
			}
			if n > 0 {
				s.Log.Warn("clocks overdue in the store past the grace (their wakes were lost, or settling falls behind); armed", "negotiations", n, "grace", s.Grace)
			}
		}
	}
}

// Rearm arms the next clock of every running negotiation from the store
// and returns how many it armed.
func (s *Sweeper) Rearm(ctx context.Context) (int, error) {
	wakes, err := s.Store.Wakes(ctx)
	if err != nil {
		return 0, err
	}
	return s.arm(ctx, wakes)
}

// Sweep arms the clocks more than Grace overdue (at most 1,000 a round,
// earliest first) and returns how many it armed.
func (s *Sweeper) Sweep(ctx context.Context) (int, error) {
	s.defaults()
	wakes, err := s.Store.Overdue(ctx, s.Clock.Now().Add(-s.Grace), sweepLimit)
	if err != nil {
		return 0, err
	}
	return s.arm(ctx, wakes)
}

func (s *Sweeper) arm(ctx context.Context, wakes []store.Wake) (int, error) {
	for i, w := range wakes {
		if err := s.Timers.Schedule(ctx, w.NegotiationID, w.At); err != nil {
			return i, err
		}
	}
	return len(wakes), nil
}
