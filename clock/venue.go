package clock

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"
)

// One clock for the venue (ARCHITECTURE.md "One venue clock"). Every node
// reads deadlines, expiries and transcript times from Venue: a reading of
// a reference clock the nodes share (Postgres's, through the store),
// carried forward by the node's monotonic clock. A node's wall clock being
// off, or stepped forward or back, moves none of it; the node only reports
// how far off its wall clock is.

// DefaultMaxSkew is the default bound on a node's own clock offset before
// it says so (--clock-skew-max).
const DefaultMaxSkew = time.Second

// DefaultSyncEvery is how often Run reads the reference clock again.
const DefaultSyncEvery = 10 * time.Second

// Monotonic is an optional ability of a Clock: a reading that never steps
// (time.Now's monotonic part does this for Real; Stepped has it for
// tests). Venue measures elapsed time on it.
type Monotonic interface {
	Monotonic() time.Time
}

// Reference reads the clock the nodes share.
type Reference func(ctx context.Context) (time.Time, error)

// Venue is the venue's clock on one node. Until its first Sync it reads
// the node's own clock. Safe for concurrent use.
type Venue struct {
	src     Clock
	maxSkew time.Duration
	log     *slog.Logger

	mu          sync.Mutex
	ref         Reference
	synced      bool
	anchorVenue time.Time // the reference's reading ...
	anchorMono  time.Time // ... no later than this monotonic reading
	last        time.Time // the latest Now returned: never goes back
	offset      time.Duration
	rtt         time.Duration
	syncedAt    time.Time
	err         error
	warned      bool
}

// NewVenue returns a venue clock over the node's clock src (Real{} in
// production), reporting a wall-clock offset over maxSkew (0:
// DefaultMaxSkew) in Status and its logs (log nil: slog.Default()).
func NewVenue(src Clock, maxSkew time.Duration, log *slog.Logger) *Venue {
	if maxSkew <= 0 {
		maxSkew = DefaultMaxSkew
	}
	if log == nil {
		log = slog.Default()
	}
	return &Venue{src: src, maxSkew: maxSkew, log: log}
}

// SetReference sets the shared clock Sync reads.
func (v *Venue) SetReference(ref Reference) {
	v.mu.Lock()
	v.ref = ref
	v.mu.Unlock()
}

func (v *Venue) mono() time.Time {
	if m, ok := v.src.(Monotonic); ok {
		return m.Monotonic()
	}
	return v.src.Now() // Real: carries the monotonic reading
}

// Now returns the venue's time: the last reference reading plus the
// monotonic time elapsed since, never earlier than a reading it returned
// before. The reference is taken as read at the end of its round trip, so
// Now is never ahead of the reference (no clock fires early by it).
func (v *Venue) Now() time.Time {
	m := v.mono()
	v.mu.Lock()
	defer v.mu.Unlock()
	var now time.Time
	if !v.synced {
		now = v.src.Now()
	} else {
		now = v.anchorVenue.Add(m.Sub(v.anchorMono))
	}
	if now.Before(v.last) {
		return v.last
	}
	v.last = now
	return now
}

// NewTimer is the node clock's timer: durations are elapsed time.
func (v *Venue) NewTimer(d time.Duration) Timer { return v.src.NewTimer(d) }

// Sync reads the reference clock once and re-anchors the venue time on
// it; it measures the node's wall-clock offset and logs it when over the
// bound. Errors: no reference set, or the reference's own error (the
// venue time runs on from the last reading).
func (v *Venue) Sync(ctx context.Context) error {
	v.mu.Lock()
	ref := v.ref
	v.mu.Unlock()
	if ref == nil {
		return errors.New("clock: no reference clock")
	}
	m0 := v.mono()
	at, err := ref(ctx)
	m1 := v.mono()
	wall := v.src.Now()
	v.mu.Lock()
	defer v.mu.Unlock()
	if err != nil {
		v.err = err
		return err
	}
	v.synced, v.anchorVenue, v.anchorMono = true, at, m1
	v.rtt = m1.Sub(m0)
	v.offset = wall.Sub(at)
	v.syncedAt, v.err = at, nil
	off := v.offset.Abs() > v.maxSkew
	switch {
	case off:
		v.log.Warn("this node's clock is off from the venue clock (the store's) by more than --clock-skew-max; the venue clock is used for every deadline",
			"offset_ms", v.offset.Milliseconds(), "max_ms", v.maxSkew.Milliseconds())
	case v.warned:
		v.log.Info("this node's clock is back within --clock-skew-max of the venue clock", "offset_ms", v.offset.Milliseconds())
	}
	v.warned = off
	return nil
}

// Run syncs every `every` (0: DefaultSyncEvery) until ctx is done; a
// failed reading is logged and retried at the next tick.
func (v *Venue) Run(ctx context.Context, every time.Duration) {
	if every <= 0 {
		every = DefaultSyncEvery
	}
	for {
		t := v.src.NewTimer(every)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		sctx, cancel := context.WithTimeout(ctx, every)
		if err := v.Sync(sctx); err != nil && ctx.Err() == nil {
			v.log.Warn("read the venue clock (the store's); running on from the last reading", "err", err)
		}
		cancel()
	}
}

// Status is what the admin /readyz shows of the venue clock.
type Status struct {
	// Synced: the venue clock has read the reference at least once.
	Synced bool `json:"synced"`
	// OffsetMS is this node's wall clock minus the venue clock, in
	// milliseconds, at the last reading (positive: the node runs fast).
	OffsetMS int64 `json:"offset_ms"`
	// MaxSkewMS is the bound (--clock-skew-max); Skewed says the offset is
	// over it.
	MaxSkewMS int64 `json:"max_skew_ms"`
	Skewed    bool  `json:"skewed"`
	// RTTMicros is the round trip of the last reading (its uncertainty).
	RTTMicros int64 `json:"rtt_us"`
	// SyncedAt is the venue time of the last reading; Error the last
	// reading's failure.
	SyncedAt time.Time `json:"synced_at,omitzero"`
	Error    string    `json:"error,omitempty"`
}

// Status reports the last reading.
func (v *Venue) Status() Status {
	v.mu.Lock()
	defer v.mu.Unlock()
	s := Status{Synced: v.synced, OffsetMS: v.offset.Milliseconds(), MaxSkewMS: v.maxSkew.Milliseconds(),
		Skewed: v.offset.Abs() > v.maxSkew, RTTMicros: v.rtt.Microseconds(), SyncedAt: v.syncedAt}
	if v.err != nil {
		s.Error = v.err.Error()
	}
	return s
}

// Offset is the node's wall clock minus the venue clock at the last
// reading.
func (v *Venue) Offset() time.Duration {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.offset
}

// Stepped is a test clock: a wall reading Base plus an offset that Step
// moves forward or back (a skewed node, an operator or NTP stepping the
// clock), over Base's elapsed time, which never steps (Monotonic). Its
// timers are Base's.
type Stepped struct {
	Base   Clock
	mu     sync.Mutex
	offset time.Duration
}

// NewStepped returns a clock reading base's time plus offset.
func NewStepped(base Clock, offset time.Duration) *Stepped {
	return &Stepped{Base: base, offset: offset}
}

// Now returns the stepped wall reading.
func (s *Stepped) Now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.Base.Now().Add(s.offset)
}

// Monotonic returns Base's reading, which no step moves.
func (s *Stepped) Monotonic() time.Time { return s.Base.Now() }

// NewTimer returns Base's timer.
func (s *Stepped) NewTimer(d time.Duration) Timer { return s.Base.NewTimer(d) }

// Step moves the wall reading by d (negative: back).
func (s *Stepped) Step(d time.Duration) {
	s.mu.Lock()
	s.offset += d
	s.mu.Unlock()
}
