// Package timerstest is the contract of timers.Timers: one suite that every
// implementation passes (timers.Local on a clock.Fake, timers/redistimers on
// the wall clock). With a Fake the suite moves time itself and asserts exact
// fire times; with a real clock it waits (short durations), asserting order,
// once-ness and never-early, not tight timing.
package timerstest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/venuehq/venue/clock"
	"github.com/venuehq/venue/timers"
)

// Setup returns a fresh Timers for one test and the clock it reads, cleaned
// up by t. A *clock.Fake is driven by the suite; any other clock is waited on.
type Setup func(t *testing.T) (timers.Timers, clock.Clock)

// Pair returns two Timers sharing their wakes (two nodes of one venue) and
// their clock, cleaned up by t.
type Pair func(t *testing.T) (a, b timers.Timers, c clock.Clock)

// Run runs the whole contract; pair may be nil when the implementation has
// no shared state (then the two-node test is skipped). Subtests run in
// parallel, each on its own timers.
func Run(t *testing.T, setup Setup, pair Pair) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, setup Setup)
	}{
		{"FiresAtTime", testFiresAtTime},
		{"EarlierWakeWins", testReschedule},
		{"ZeroCancels", testZeroCancels},
		{"LateFiresAtOnce", testLate},
		{"FiresInDueOrder", testOrder},
		{"ManyOnceEach", testMany},
		{"ScheduleWhileRunning", testScheduleFromFire},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, setup)
		})
	}
	t.Run("TwoNodesFireEachOnce", func(t *testing.T) {
		if pair == nil {
			t.Skip("no shared timers for this implementation")
		}
		t.Parallel()
		testTwoNodes(t, pair)
	})
}

// fire is one call of the fire callback.
type fire struct {
	key string
	at  time.Time // the clock when it fired
}

// runner runs Run of one Timers and records its fires.
type runner struct {
	t     *testing.T
	tm    timers.Timers
	clock clock.Clock
	fake  *clock.Fake
	// step is the unit of the test's durations: a minute on a Fake, tens
	// of milliseconds on the wall clock.
	step   time.Duration
	fires  *fires
	cancel context.CancelFunc
	done   chan struct{}
}

type fires struct {
	mu   sync.Mutex
	all  []fire
	more chan struct{}
}

// nudgeKey is the wake until schedules to rescue a Run that armed its
// timer on a stale reading of a Fake; its fires are not recorded.
const nudgeKey = "timerstest:nudge"

func (f *fires) add(x fire) {
	if x.key == nudgeKey {
		return
	}
	f.mu.Lock()
	f.all = append(f.all, x)
	f.mu.Unlock()
	select {
	case f.more <- struct{}{}:
	default:
	}
}

func (f *fires) list() []fire {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.all)
}

func (f *fires) of(key string) []fire {
	var out []fire
	for _, x := range f.list() {
		if x.key == key {
			out = append(out, x)
		}
	}
	return out
}

func start(t *testing.T, tm timers.Timers, c clock.Clock, fs *fires) *runner {
	t.Helper()
	r := &runner{t: t, tm: tm, clock: c, fires: fs, done: make(chan struct{}), step: 40 * time.Millisecond}
	if f, ok := c.(*clock.Fake); ok {
		r.fake, r.step = f, time.Minute
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() {
		defer close(r.done)
		if err := tm.Run(ctx, func(_ context.Context, key string) {
			fs.add(fire{key: key, at: c.Now()})
		}); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	t.Cleanup(r.stop)
	return r
}

func newRunner(t *testing.T, setup Setup) *runner {
	t.Helper()
	tm, c := setup(t)
	return start(t, tm, c, &fires{more: make(chan struct{}, 1)})
}

// stop ends Run and waits for it to return.
func (r *runner) stop() {
	r.cancel()
	select {
	case <-r.done:
	case <-time.After(5 * time.Second):
		r.t.Fatal("Run did not return after its context was cancelled")
	}
}

func (r *runner) schedule(key string, at time.Time) {
	r.t.Helper()
	if err := r.tm.Schedule(context.Background(), key, at); err != nil {
		r.t.Fatalf("schedule %s: %v", key, err)
	}
}

// until moves time to at least target (a Fake is set there; the wall clock
// is waited for) until cond holds, or fails the test after a few seconds.
// On a Fake, Run may have read the clock just before it moved and armed its
// timer for too late; if cond still fails after a grace period, until
// schedules a wake due at target (not recorded), which re-arms Run.
func (r *runner) until(what string, target time.Time, cond func() bool) {
	r.t.Helper()
	start := time.Now()
	deadline := start.Add(5 * time.Second)
	if r.fake == nil {
		deadline = deadline.Add(target.Sub(r.clock.Now()))
	}
	nudged := false
	for !cond() {
		if time.Now().After(deadline) {
			r.t.Fatalf("%s: not by %v (fires so far: %v)", what, target, r.fires.list())
		}
		if r.fake != nil {
			r.fake.Set(target)
			if !nudged && time.Since(start) > 100*time.Millisecond {
				nudged = true
				r.t.Logf("%s: nudging Run (it armed its timer before the clock moved)", what)
				_ = r.tm.Schedule(context.Background(), nudgeKey, target)
			}
		}
		select {
		case <-r.fires.more:
		case <-time.After(2 * time.Millisecond):
		}
	}
}

func (r *runner) fired(key string) func() bool {
	return func() bool { return len(r.fires.of(key)) > 0 }
}

// once fails unless key fired exactly once, not before at (and exactly at
// it on a Fake that was moved straight there).
func (r *runner) once(key string, at time.Time, exact bool) {
	r.t.Helper()
	fs := r.fires.of(key)
	if len(fs) != 1 {
		r.t.Fatalf("%s fired %d times, want once: %v", key, len(fs), fs)
	}
	if fs[0].at.Before(at) {
		r.t.Fatalf("%s fired at %v, before its time %v", key, fs[0].at, at)
	}
	if exact && r.fake != nil && !fs[0].at.Equal(at) {
		r.t.Fatalf("%s fired at %v, want %v", key, fs[0].at, at)
	}
}

func testFiresAtTime(t *testing.T, setup Setup) {
	r := newRunner(t, setup)
	at := r.clock.Now().Add(r.step)
	r.schedule("neg:a", at)
	r.until("neg:a fires", at, r.fired("neg:a"))
	r.stop()
	r.once("neg:a", at, true)
}

func testReschedule(t *testing.T, setup Setup) {
	r := newRunner(t, setup)
	now := r.clock.Now()
	d1, d3 := now.Add(r.step), now.Add(3*r.step)
	r.schedule("earlier", now.Add(2*r.step))
	r.schedule("earlier", d1) // moved earlier
	r.schedule("kept", d1)
	r.schedule("kept", d3) // a later wake does not replace an earlier one
	r.until("earlier fires at its new time", d1, r.fired("earlier"))
	r.until("kept fires at the earlier time", d1, r.fired("kept"))
	r.stop()
	r.once("earlier", d1, true)
	r.once("kept", d1, true) // a wake that comes early re-arms; one too late would miss a clock
}

func testZeroCancels(t *testing.T, setup Setup) {
	r := newRunner(t, setup)
	now := r.clock.Now()
	r.schedule("cancelled", now.Add(r.step))
	r.schedule("cancelled", time.Time{})
	r.schedule("never-scheduled", time.Time{}) // cancelling nothing is fine
	r.schedule("sentinel", now.Add(2*r.step))
	// Wakes fire in due order: once the later sentinel fired, the
	// cancelled one would have fired already.
	r.until("sentinel fires", now.Add(2*r.step), r.fired("sentinel"))
	r.stop()
	if fs := r.fires.of("cancelled"); len(fs) != 0 {
		t.Fatalf("cancelled wake fired: %v", fs)
	}
}

func testLate(t *testing.T, setup Setup) {
	r := newRunner(t, setup)
	now := r.clock.Now()
	r.schedule("late", now.Add(-time.Hour))
	// The clock does not move: a wake already due fires at once.
	deadline := time.After(3 * time.Second)
	for !r.fired("late")() {
		select {
		case <-r.fires.more:
		case <-deadline:
			t.Fatal("a wake already due did not fire at once")
		}
	}
	r.stop()
	r.once("late", now.Add(-time.Hour), false)
	if r.fake != nil && !r.fires.of("late")[0].at.Equal(now) {
		t.Fatalf("late wake fired at %v, want now %v", r.fires.of("late")[0].at, now)
	}
}

func testOrder(t *testing.T, setup Setup) {
	r := newRunner(t, setup)
	now := r.clock.Now()
	var want []string
	for i := 5; i >= 1; i-- { // scheduled latest first
		r.schedule(fmt.Sprintf("k%d", i), now.Add(time.Duration(i)*r.step/2))
	}
	for i := 1; i <= 5; i++ {
		want = append(want, fmt.Sprintf("k%d", i))
	}
	last := now.Add(5 * r.step / 2)
	r.until("all fire", last, func() bool { return len(r.fires.list()) >= 5 })
	r.stop()
	var got []string
	for _, f := range r.fires.list() {
		got = append(got, f.key)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("fired %v, want due order %v", got, want)
	}
}

func testMany(t *testing.T, setup Setup) {
	r := newRunner(t, setup)
	now := r.clock.Now()
	const n = 200
	due := map[string]time.Time{}
	for i := range n {
		k := fmt.Sprintf("neg:%03d", i)
		due[k] = now.Add(time.Duration((i*37)%n) * r.step / n) // spread over one step, shuffled
		r.schedule(k, due[k])
	}
	r.until("all fire", now.Add(r.step), func() bool { return len(r.fires.list()) >= n })
	r.stop()
	for k, at := range due {
		r.once(k, at, false)
	}
}

// A fire callback may schedule (the venue re-arms the next clock from it).
func testScheduleFromFire(t *testing.T, setup Setup) {
	tm, c := setup(t)
	fs := &fires{more: make(chan struct{}, 1)}
	rearmed := make(chan struct{})
	var once sync.Once
	r := start(t, rearming{Timers: tm, onFire: func(key string) {
		if key == "first" {
			once.Do(func() {
				_ = tm.Schedule(context.Background(), "second", c.Now().Add(-time.Second))
				close(rearmed)
			})
		}
	}}, c, fs)
	at := c.Now().Add(r.step)
	r.schedule("first", at)
	r.until("first fires", at, r.fired("first"))
	<-rearmed
	r.until("second fires", at, r.fired("second"))
	r.stop()
	r.once("first", at, true)
	r.once("second", at.Add(-time.Second), false)
}

// rearming is a Timers whose fire also calls onFire (inside Run's fire).
type rearming struct {
	timers.Timers
	onFire func(key string)
}

func (r rearming) Run(ctx context.Context, fire func(context.Context, string)) error {
	return r.Timers.Run(ctx, func(ctx context.Context, key string) {
		fire(ctx, key)
		r.onFire(key)
	})
}

func testTwoNodes(t *testing.T, pair Pair) {
	a, b, c := pair(t)
	fs := &fires{more: make(chan struct{}, 1)}
	ra := start(t, a, c, fs)
	rb := start(t, b, c, fs)
	now := c.Now()
	const n = 200
	due := map[string]time.Time{}
	for i := range n {
		k := fmt.Sprintf("neg:%03d", i)
		due[k] = now.Add(time.Duration(i) * ra.step / 20) // over ten steps
		node := ra
		if i%2 == 1 {
			node = rb
		}
		node.schedule(k, due[k])
	}
	last := now.Add(n * ra.step / 20)
	ra.until("every wake fires", last, func() bool { return len(fs.list()) >= n })
	// Every wake has been claimed: none is left for a second fire.
	if l, ok := a.(interface {
		Len(context.Context) (int64, error)
	}); ok {
		ra.until("the set empties", last, func() bool { m, err := l.Len(context.Background()); return err == nil && m == 0 })
	}
	ra.stop()
	rb.stop()
	for k, at := range due {
		ra.once(k, at, false)
	}
	if len(fs.list()) != n {
		t.Fatalf("%d fires for %d wakes", len(fs.list()), n)
	}
}
