package redistimers_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/venuehq/venue/bus/bustest"
	"github.com/venuehq/venue/clock"
	"github.com/venuehq/venue/timers"
	"github.com/venuehq/venue/timers/redistimers"
	"github.com/venuehq/venue/timers/timerstest"
)

// newTimers returns n Timers sharing a fresh prefix (n nodes) on clock c.
func newTimers(t *testing.T, n int, c clock.Clock) []*redistimers.Timers {
	t.Helper()
	url := bustest.RedisURL(t)
	prefix := bustest.KeyPrefix(t, url)
	out := make([]*redistimers.Timers, n)
	for i := range out {
		tm, err := redistimers.New(t.Context(), url, redistimers.Options{Prefix: prefix, Clock: c, Poll: 10 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = tm.Close() })
		out[i] = tm
	}
	return out
}

// The contract on a Fake clock the suite moves: on the wall clock, with
// steps of 40 ms, a loaded machine (a race build beside other tests) let a
// wake come due before the Schedule that cancels it reached Redis.
func TestContract(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 12, 4, 8, 0, 0, 0, time.UTC)
	timerstest.Run(t,
		func(t *testing.T) (timers.Timers, clock.Clock) {
			c := clock.NewFake(start)
			return newTimers(t, 1, c)[0], c
		},
		func(t *testing.T) (timers.Timers, timers.Timers, clock.Clock) {
			c := clock.NewFake(start)
			tms := newTimers(t, 2, c)
			return tms[0], tms[1], c
		})
}

// The sorted set holds the due time rounded up to the millisecond, so a wake
// is never claimed early; Run reads "now" from its clock (a Fake here,
// moved by hand), polling on real time.
func TestFakeClockAndRounding(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	c := clock.NewFake(start)
	tm := newTimers(t, 1, c)[0]
	fired := make(chan string, 4)
	run := func() (stop func()) {
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = tm.Run(ctx, func(_ context.Context, key string) { fired <- key })
		}()
		return func() { cancel(); <-done }
	}
	wait := func(want string) {
		t.Helper()
		select {
		case got := <-fired:
			if got != want {
				t.Fatalf("fired %s, want %s", got, want)
			}
		case <-time.After(3 * time.Second):
			t.Fatalf("%s did not fire once due", want)
		}
	}
	ms := start.Add(10 * time.Second)
	late := ms.Add(500 * time.Microsecond) // inside that millisecond: rounds up to the next
	for key, at := range map[string]time.Time{"neg:on-the-ms": ms, "neg:inside": late} {
		if err := tm.Schedule(t.Context(), key, at); err != nil {
			t.Fatal(err)
		}
	}
	stop := run()
	c.Set(late.Add(-time.Microsecond)) // ms is due, late is not
	wait("neg:on-the-ms")
	// A claim takes every due wake at once and Run fires a claim whole
	// before it stops: had "neg:inside" been due, it would have fired.
	stop()
	select {
	case got := <-fired:
		t.Fatalf("%s fired before its time", got)
	default:
	}
	if n, err := tm.Len(t.Context()); err != nil || n != 1 {
		t.Fatalf("Len = %d, %v; want 1 left", n, err)
	}
	stop = run()
	defer stop()
	c.Set(late.Add(time.Millisecond))
	wait("neg:inside")
	if n, err := tm.Len(t.Context()); err != nil || n != 0 {
		t.Fatalf("Len = %d, %v after the fire; want 0", n, err)
	}
}

// After a claim that took fewer than Batch wakes, Run waits for the next due
// time, not a whole poll: in a wave of clocks (proposals committed together
// expire together) the next ones are due within milliseconds. Poll is an
// hour here, so only that wait can fire the second wake.
func TestNextWakeAfterPartialClaim(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 12, 4, 8, 0, 0, 0, time.UTC)
	c := clock.NewFake(start)
	url := bustest.RedisURL(t)
	tm, err := redistimers.New(t.Context(), url, redistimers.Options{Prefix: bustest.KeyPrefix(t, url), Clock: c, Poll: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tm.Close() })
	// Three wakes 30 ms apart: a Schedule's kick (the first two were armed
	// before Run started) can explain one early look, not two.
	keys := []string{"neg:a", "neg:b", "neg:c"}
	due := func(i int) time.Time { return start.Add(time.Second + time.Duration(i)*30*time.Millisecond) }
	for i, key := range keys {
		if err := tm.Schedule(t.Context(), key, due(i)); err != nil {
			t.Fatal(err)
		}
	}
	c.Set(due(0))
	fired := make(chan string, len(keys))
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = tm.Run(ctx, func(_ context.Context, key string) { fired <- key })
	}()
	defer func() { cancel(); <-done }()
	for i, want := range keys {
		select {
		case got := <-fired:
			if got != want {
				t.Fatalf("fired %s, want %s", got, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s did not fire (Run waited a whole poll)", want)
		}
		c.Set(due(i + 1))
	}
}

// Many Schedules at once (pipelined) all land.
func TestScheduleWave(t *testing.T) {
	t.Parallel()
	tm := newTimers(t, 1, clock.Real{})[0]
	at := time.Now().Add(time.Hour)
	var wg sync.WaitGroup
	for i := range 300 {
		wg.Go(func() {
			if err := tm.Schedule(t.Context(), fmt.Sprintf("neg:%d", i), at); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n, err := tm.Len(t.Context()); err != nil || n != 300 {
		t.Fatalf("Len = %d, %v; want 300", n, err)
	}
	if err := tm.Schedule(t.Context(), "neg:7", time.Time{}); err != nil { // cancel
		t.Fatal(err)
	}
	if n, err := tm.Len(t.Context()); err != nil || n != 299 {
		t.Fatalf("Len = %d, %v after a cancel; want 299", n, err)
	}
}

func TestUnreachableRedactsPassword(t *testing.T) {
	t.Parallel()
	const pw = "t1mers-Secret"
	_, err := redistimers.New(t.Context(), "redis://:"+pw+"@127.0.0.1:1/0?max_retries=-1", redistimers.Options{})
	if err == nil {
		t.Fatal("connected to nothing")
	}
	if strings.Contains(err.Error(), pw) {
		t.Fatalf("error shows the password: %v", err)
	}
}
