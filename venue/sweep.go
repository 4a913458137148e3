package venue

import (
	"context"

	"github.com/venuehq/venue/timers"
)

// startSweeper runs a timers.Sweeper next to the timer loop until ctx is
// done: clocks never depend on the timers keeping their wakes (a Redis
// that lost its data is re-armed from the store as soon as it is noticed;
// clocks overdue in the store are armed every few seconds).
func (s *Server) startSweeper(ctx context.Context) {
	var lost <-chan struct{}
	if l, ok := s.timers.(interface{ Lost() <-chan struct{} }); ok {
		lost = l.Lost()
	}
	sw := &timers.Sweeper{Store: s.store, Timers: s.timers, Clock: s.clock, Lost: lost, Log: s.log}
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		_ = sw.Run(ctx)
	}()
}
