package pircan

import (
	"context"
	"slices"
	"sync"

	"golang.org/x/time/rate"

	"github.com/venuehq/venue/clock"
	"github.com/venuehq/venue/pircan/line"
)

// Out is one line the bridge sends: a NOTICE reply, or a line to the
// server (MODE, WHO, MONITOR).
type Out struct {
	Command string
	Params  []string
	// Account, when set, is the folded account the line answers: it goes
	// only while the nick NickKey (folded Params[0]) holds that account,
	// and is dropped otherwise (presence.check).
	Account, NickKey string
	// Sent, when set, runs once the line was handed to the connection
	// (INBOX marks a message read then).
	Sent func()
}

// Pace is the output pacing of PIRCAN.md "Limits": bursts of Burst
// lines, then PerSecond lines a second.
type Pace struct {
	Burst     int
	PerSecond float64
	// MaxQueued bounds the lines waiting in all: past it the oldest line of
	// the requester with the most waiting is dropped (and counted).
	MaxQueued int
	// PerRequester bounds the lines waiting for one requester: past it that
	// requester's own oldest line is dropped. A requester who lost lines
	// gets a DROPPED line with the number before its next one (PIRCAN.md
	// "Limits"). 0: DefaultPace's.
	PerRequester int
}

// DefaultPace is bursts of 5, then 2 lines a second; 2,000 lines queued,
// 200 of them for one requester.
var DefaultPace = Pace{Burst: 5, PerSecond: 2, MaxQueued: 2000, PerRequester: 200}

// pacer is the one output queue, fair between requesters: each requester
// has its own FIFO and the sender takes one line from each in turn, so a
// long list for one does not delay another's reply by more than one line
// per requester waiting.
type pacer struct {
	m     *metrics // the bridge's (unregistered ones until New sets them)
	clock clock.Clock
	lim   *rate.Limiter
	max   int
	per   int // lines waiting per requester at most

	mu     sync.Mutex
	queues map[string][]Out
	order  []string // requesters with lines waiting, in turn order
	queued int
	// lost counts the lines dropped per requester since its last DROPPED
	// line; to is its last NOTICE (where DROPPED goes, to the same nick
	// for the same account).
	lost map[string]int
	to   map[string]Out
	wake chan struct{}
	// check says whether a line may go now (presence.check); nil: all may.
	check func(Out) lineVerdict
	// taken is told of each line taken to be sent (presence.taken); nil:
	// nobody is.
	taken func(Out)
}

func newPacer(c clock.Clock, p Pace) *pacer {
	if p.PerRequester <= 0 {
		p.PerRequester = DefaultPace.PerRequester
	}
	return &pacer{m: newMetrics(nil), clock: c, lim: rate.NewLimiter(rate.Limit(p.PerSecond), p.Burst), max: p.MaxQueued,
		per: p.PerRequester, queues: map[string][]Out{}, lost: map[string]int{}, to: map[string]Out{}, wake: make(chan struct{}, 1)}
}

// push queues outs for requester key; it returns how many lines it
// dropped to make room: key's own oldest when key has Pace.PerRequester
// waiting, else, when the whole queue is full, the oldest of the
// requester with the most waiting (key's or another's).
func (p *pacer) push(key string, outs ...Out) (dropped int) {
	p.mu.Lock()
	for _, o := range outs {
		if o.Command == "NOTICE" && len(o.Params) > 0 {
			p.to[key] = o
		}
		switch {
		case len(p.queues[key]) >= p.per:
			p.dropOldest(key)
			dropped++
		case p.queued >= p.max:
			p.dropOldest(p.longest())
			dropped++
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

// dropOldest drops key's oldest waiting line and counts it lost (p.mu
// held; key has lines waiting).
func (p *pacer) dropOldest(key string) {
	q := p.queues[key]
	if len(q) == 0 {
		return
	}
	p.lost[key]++
	p.queued--
	if len(q) > 1 {
		p.queues[key] = q[1:]
		return
	}
	delete(p.queues, key)
	if i := slices.Index(p.order, key); i >= 0 {
		p.order = slices.Delete(p.order, i, i+1)
	}
}

// longest is the requester with the most lines waiting (p.mu held).
func (p *pacer) longest() string {
	best, n := "", 0
	for _, k := range p.order {
		if len(p.queues[k]) > n {
			best, n = k, len(p.queues[k])
		}
	}
	return best
}

// droppedLine is the line that tells a requester how many of its lines
// were dropped (PIRCAN.md "Limits").
func droppedLine(to Out, n int) Out {
	s, _ := line.Format("DROPPED", line.Obj{{Key: "dropped", Value: n},
		{Key: "note", Value: "Lines for you were dropped: too many were waiting. Ask again with a smaller limit."}})
	o := notice(to.Params[0], s)
	o.Account, o.NickKey = to.Account, to.NickKey
	return o
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

// run sends queued lines with send, paced, until ctx ends. A line that
// check holds waits (other requesters' lines go meanwhile); one it drops
// is counted and gone. When send reports false (no connection) the line
// goes back to the head of the queue and run waits for a kick.
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
		r := p.lim.ReserveN(now, 1)
		if d := r.DelayFrom(now); d > 0 {
			t := p.clock.NewTimer(d)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C():
			}
		}
		// One check per line, right before it goes: check may let a line
		// through once only (a WHOX answer on a server without MONITOR).
		key, o, ok := p.popReady()
		if !ok {
			// Every waiting line waits for an answer: the token goes
			// back, and the answer (or a new line) kicks.
			r.CancelAt(p.clock.Now())
			// An answer that never comes (the WHO was lost) is asked
			// again after askAgain.
			t := p.clock.NewTimer(askAgain)
			select {
			case <-ctx.Done():
			case <-p.wake:
			case <-t.C():
			}
			t.Stop()
			if ctx.Err() != nil {
				return
			}
			continue
		}
		if !send(o) {
			p.unpop(key, o)
			select {
			case <-ctx.Done():
				return
			case <-p.wake:
			}
			continue
		}
		if o.Sent != nil {
			o.Sent()
		}
	}
}

// verdictOf is check's lineVerdict on o (sendLine without a check).
func (p *pacer) verdictOf(o Out) lineVerdict {
	if p.check == nil {
		return sendLine
	}
	return p.check(o)
}

// popReady takes the next line in turn that may go now.
func (p *pacer) popReady() (string, Out, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	key := p.scan()
	if key == "" {
		return "", Out{}, false
	}
	i := slices.Index(p.order, key)
	if n := p.lost[key]; n > 0 && len(p.to[key].Params) > 0 {
		if d := droppedLine(p.to[key], n); p.verdictOf(d) == sendLine {
			// This requester lost lines: it hears how many first, in its turn.
			delete(p.lost, key)
			p.order = append(slices.Delete(p.order, i, i+1), key)
			return key, d, true
		}
	}
	delete(p.lost, key)
	q := p.queues[key]
	o := q[0]
	p.order = slices.Delete(p.order, i, i+1)
	if len(q) == 1 {
		delete(p.queues, key)
		delete(p.to, key)
	} else {
		p.queues[key] = q[1:]
		p.order = append(p.order, key)
	}
	p.queued--
	p.m.queueDepth.Set(float64(p.queued))
	if p.taken != nil {
		p.taken(o)
	}
	return key, o, true
}

// scan returns the first requester in turn whose head line may go ("":
// none), dropping the head lines check refuses. Called with p.mu held.
func (p *pacer) scan() string {
	for i := 0; i < len(p.order); {
		key := p.order[i]
		q := p.queues[key]
		switch p.verdictOf(q[0]) {
		case sendLine:
			return key
		case dropLine:
			p.queued--
			p.m.dropped.Inc()
			p.m.queueDepth.Set(float64(p.queued))
			if len(q) == 1 {
				delete(p.queues, key)
				p.order = slices.Delete(p.order, i, i+1)
				continue
			}
			p.queues[key] = q[1:]
		default: // waitLine: the next requester
			i++
		}
	}
	return ""
}
