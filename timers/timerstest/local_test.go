package timerstest_test

import (
	"testing"
	"time"

	"github.com/venuehq/venue/clock"
	"github.com/venuehq/venue/timers"
	"github.com/venuehq/venue/timers/timerstest"
)

// The in-process heap passes the contract on a fake clock.
func TestLocal(t *testing.T) {
	timerstest.Run(t, func(*testing.T) (timers.Timers, clock.Clock) {
		c := clock.NewFake(time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC))
		return timers.NewLocal(c), c
	}, nil)
}
