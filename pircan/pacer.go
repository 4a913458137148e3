package pircan

import (
	"context"
	"sync"

	"golang.org/x/time/rate"

	"github.com/venuehq/venue/clock"
)

// Out is one line the bridge sends: a NOTICE reply or an INVITE.
type Out struct {
	Command string
	Params  []string
}

// Pace is the output pacing of PIRCAN.md "Limits": bursts of Burst
// lines, then PerSecond lines a second.
type Pace struct {
	Burst     int
	PerSecond float64
	// MaxQueued bounds the lines waiting in all; lines past it are dropped
	// (and counted).
	MaxQueued int
}

// DefaultPace is bursts of 5, then 2 lines a second.
var DefaultPace = Pace{Burst: 5, PerSecond: 2, MaxQueued: 2000}

// pacer is the one output queue, fair between requesters: each requester
// has its own FIFO and the sender takes one line from each in turn, so a
// long list for one does not delay another's reply by more than one line
// per requester waiting.
type pacer struct {
	m     *metrics // the bridge's (unregistered ones until New sets them)
	clock clock.Clock
	lim   *rate.Limiter
	max   int

	mu     sync.Mutex
	queues map[string][]Out
	order  []string // requesters with lines waiting, in turn order
	queued int
	wake   chan struct{}
}

func newPacer(c clock.Clock, p Pace) *pacer {
	return &pacer{m: newMetrics(nil), clock: c, lim: rate.NewLimiter(rate.Limit(p.PerSecond), p.Burst), max: p.MaxQueued,
		queues: map[string][]Out{}, wake: make(chan struct{}, 1)}
}

// push queues outs for requester key; it returns how many it dropped
// because the queue was full.
func (p *pacer) push(key string, outs ...Out) (dropped int) {
	p.mu.Lock()
	for _, o := range outs {
		if p.queued >= p.max {
			dropped++
			continue
		}
		if len(p.queues[key]) == 0 {
			p.order = append(p.order, key)
		}
		p.queues[key] = append(p.queues[key], o)
		p.queued++
	}
	n := p.queued
	p.mu.Unlock()
	p.m.queueDepth.Set(float64(n))
	p.kick()
	return dropped
}

// kick wakes the sender (lines were queued, or the connection came back).
func (p *pacer) kick() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// depth is the number of lines waiting.
func (p *pacer) depth() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.queued
}

// pop takes the next line in turn.
func (p *pacer) pop() (Out, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.order) == 0 {
		return Out{}, false
	}
	key := p.order[0]
	q := p.queues[key]
	o := q[0]
	p.order = p.order[1:]
	if len(q) == 1 {
		delete(p.queues, key)
	} else {
		p.queues[key] = q[1:]
		p.order = append(p.order, key)
	}
	p.queued--
	p.m.queueDepth.Set(float64(p.queued))
	return o, true
}

// unpop puts o back at the head (the send failed: not connected).
func (p *pacer) unpop(key string, o Out) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.queues[key]) == 0 {
		p.order = append([]string{key}, p.order...)
	}
	p.queues[key] = append([]Out{o}, p.queues[key]...)
	p.queued++
}

// run sends queued lines with send, paced, until ctx ends. When send
// reports false (no connection) the line goes back to the head of the
// queue and run waits for a kick.
func (p *pacer) run(ctx context.Context, send func(Out) bool) {
	for {
		if p.depth() == 0 {
			select {
			case <-ctx.Done():
				return
			case <-p.wake:
				continue
			}
		}
		now := p.clock.Now()
		if d := p.lim.ReserveN(now, 1).DelayFrom(now); d > 0 {
			t := p.clock.NewTimer(d)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C():
			}
		}
		key, o, ok := p.popKeyed()
		if !ok {
			continue
		}
		if !send(o) {
			p.unpop(key, o)
			select {
			case <-ctx.Done():
				return
			case <-p.wake:
			}
		}
	}
}

func (p *pacer) popKeyed() (string, Out, bool) {
	p.mu.Lock()
	key := ""
	if len(p.order) > 0 {
		key = p.order[0]
	}
	p.mu.Unlock()
	o, ok := p.pop()
	return key, o, ok
}
