// Package timers wakes the venue when a negotiation's clock runs out. Timers
// only wake: the deadlines live in the store and the room compares times
// itself, so a timer that fires late (or twice) changes nothing but latency.
// Local is the in-process heap of the embedded default; timers/redistimers
// keeps due times in a Redis sorted set for several nodes.
package timers

import (
	"container/heap"
	"context"
	"sync"
	"time"

	"github.com/venuehq/venue/clock"
)

// Timers schedules one wake per key (a negotiation id).
type Timers interface {
	// Schedule arms the key's wake no later than at: an earlier wake
	// already armed stays (an early wake is harmless: the venue re-arms
	// when it fires), so two schedules arriving out of order can never push
	// a wake past a deadline. A zero at cancels the key's wake. A wake that
	// fires is gone; the venue arms the next one.
	Schedule(ctx context.Context, key string, at time.Time) error
	// Run calls fire for each key whose time has come, until ctx is done.
	// A wake already due when scheduled fires at once.
	Run(ctx context.Context, fire func(ctx context.Context, key string)) error
}

// Local is an in-process timer heap driven by a clock.Clock.
type Local struct {
	clock clock.Clock
	mu    sync.Mutex
	h     wakeHeap
	at    map[string]time.Time
	kick  chan struct{}
	next  time.Time // what Run sleeps until; zero: nothing
}

// NewLocal returns an empty timer heap on clock c.
func NewLocal(c clock.Clock) *Local {
	return &Local{clock: c, at: map[string]time.Time{}, kick: make(chan struct{}, 1)}
}

// Schedule implements Timers.
func (l *Local) Schedule(_ context.Context, key string, at time.Time) error {
	l.mu.Lock()
	earlier := false
	if at.IsZero() {
		delete(l.at, key)
	} else if cur, ok := l.at[key]; !ok || at.Before(cur) {
		l.at[key] = at
		heap.Push(&l.h, wake{key: key, at: at})
		earlier = l.next.IsZero() || at.Before(l.next)
	}
	l.mu.Unlock()
	if earlier { // Run sleeps until later than this: wake it to re-arm
		select {
		case l.kick <- struct{}{}:
		default:
		}
	}
	return nil
}

// Run implements Timers.
func (l *Local) Run(ctx context.Context, fire func(context.Context, string)) error {
	for {
		var due []string
		var wait time.Duration = -1
		l.mu.Lock()
		now := l.clock.Now()
		l.next = time.Time{}
		for l.h.Len() > 0 {
			w := l.h[0]
			if cur, ok := l.at[w.key]; !ok || !cur.Equal(w.at) {
				heap.Pop(&l.h) // replaced or cancelled
				continue
			}
			if w.at.After(now) {
				wait = w.at.Sub(now)
				l.next = w.at
				break
			}
			heap.Pop(&l.h)
			delete(l.at, w.key)
			due = append(due, w.key)
		}
		l.mu.Unlock()
		for _, k := range due {
			fire(ctx, k)
		}
		if len(due) > 0 {
			continue
		}
		var tc <-chan time.Time
		var t clock.Timer
		if wait >= 0 {
			t = l.clock.NewTimer(wait)
			tc = t.C()
		}
		select {
		case <-ctx.Done():
			if t != nil {
				t.Stop()
			}
			return nil
		case <-l.kick:
		case <-tc:
		}
		if t != nil {
			t.Stop()
		}
	}
}

type wake struct {
	key string
	at  time.Time
}

type wakeHeap []wake

func (h wakeHeap) Len() int           { return len(h) }
func (h wakeHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h wakeHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *wakeHeap) Push(x any)        { *h = append(*h, x.(wake)) }
func (h *wakeHeap) Pop() any {
	old := *h
	w := old[len(old)-1]
	*h = old[:len(old)-1]
	return w
}
