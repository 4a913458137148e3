package spectate

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/venuehq/venue/clock"
	"github.com/venuehq/venue/hub"
	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/wire"
)

// MaxHeld is how many frames a delayed observer socket holds; past it the
// socket is closed with 1013 (the observer reconnects with ?since=).
const MaxHeld = 4096

// Delayed is an observer's hub.Transport that runs Delay behind: each
// frame goes to T at its own time ("at", else the moment it was written)
// plus Delay, never before a frame written earlier. The first
// negotiation_started is replaced by Started() (the room as it stood at
// the cutoff, built by the caller with AsOf) and goes at once. Close passes
// through at once. Run does the sending; it ends with ctx.
type Delayed struct {
	T       hub.Transport
	Delay   time.Duration
	Clock   clock.Clock
	Started func() []byte // nil: negotiation_started goes through delayed like the rest

	mu      sync.Mutex
	held    []heldFrame
	last    time.Time // the release time of the newest held frame
	started bool
	closed  bool
	wake    chan struct{}
	once    sync.Once
}

type heldFrame struct {
	due   time.Time
	frame []byte
}

func (d *Delayed) init() {
	d.once.Do(func() { d.wake = make(chan struct{}, 1) })
}

// Write implements hub.Transport: it queues the frame for its time.
func (d *Delayed) Write(frame []byte) bool {
	d.init()
	var head struct {
		Type string `json:"type"`
		At   string `json:"at"`
	}
	_ = json.Unmarshal(frame, &head)
	now := d.Clock.Now()
	if head.Type == negotiation.TypeNegotiationStarted && d.Started != nil {
		d.mu.Lock()
		first := !d.started
		d.started = true
		d.mu.Unlock()
		if first {
			if b := d.Started(); b != nil {
				return d.T.Write(b)
			}
		}
	}
	due := now.Add(d.Delay)
	if head.At != "" {
		if at, err := wire.ParseTime(head.At); err == nil {
			due = at.Add(d.Delay)
		}
	}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return false
	}
	if len(d.held) >= MaxHeld {
		d.closed = true
		d.mu.Unlock()
		d.T.Close(hub.CloseTryAgainLater, "too far behind: reconnect with ?since=")
		return false
	}
	if due.Before(d.last) {
		due = d.last
	}
	d.last = due
	d.held = append(d.held, heldFrame{due, frame})
	d.mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default:
	}
	return true
}

// Close implements hub.Transport.
func (d *Delayed) Close(code int, reason string) {
	d.mu.Lock()
	d.closed = true
	d.held = nil
	d.mu.Unlock()
	d.T.Close(code, reason)
}

// Held is how many frames wait for their time.
func (d *Delayed) Held() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.held)
}

// Run sends each held frame to T when its time comes on Clock, until ctx
// ends.
func (d *Delayed) Run(ctx context.Context) {
	d.init()
	for {
		d.mu.Lock()
		var next time.Time
		for len(d.held) > 0 && !d.held[0].due.After(d.Clock.Now()) {
			f := d.held[0].frame
			d.held[0] = heldFrame{}
			d.held = d.held[1:]
			d.mu.Unlock()
			if !d.T.Write(f) {
				return
			}
			d.mu.Lock()
		}
		if len(d.held) > 0 {
			next = d.held[0].due
		}
		d.mu.Unlock()
		var timer clock.Timer
		var fire <-chan time.Time
		if !next.IsZero() {
			timer = d.Clock.NewTimer(next.Sub(d.Clock.Now()))
			fire = timer.C()
		}
		select {
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return
		case <-d.wake:
		case <-fire:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}
