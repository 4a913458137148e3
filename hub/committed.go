package hub

import (
	"context"
	"sync"
	"time"

	"github.com/venuehq/venue/negotiation"
)

// afterCommit runs the Committed and Pushed hooks off the committing caller's path, in
// commit order, on one goroutine: the sender of a frame has its reply and
// the room its frames whatever the hook does (a settler that blocks holds
// up only later hooks). The goroutine lingers afterCommitLinger once the
// queue is empty, so a node that commits steadily reuses one goroutine
// and its grown stack instead of starting one (and growing its stack
// through the hook's frames) for nearly every step (BENCHMARKS.md
// "Issue 21, third pass").
type afterCommit struct {
	fn     func(ctx context.Context, st *negotiation.State, out negotiation.Outcome)
	pushed func(ctx context.Context, agentID string, frame []byte)

	mu      sync.Mutex
	queue   []hookCall
	running bool          // hooks queued or running; wait waits for it to clear
	idle    chan struct{} // closed when running clears
	worker  bool          // a goroutine serves the queue (running or lingering)
	wake    chan struct{} // one token: the lingering worker has work
	linger  time.Duration // 0: afterCommitLinger
}

// afterCommitLinger is how long the hooks' goroutine waits for the next
// step before it ends.
const afterCommitLinger = 2 * time.Second

// hookCall is one queued hook: a committed step's (st set) or a lobby
// push's. The queue holds them by value, not as closures: a closure
// capturing an Outcome (over 128 bytes) would cost two allocations a step.
type hookCall struct {
	ctx     context.Context
	st      *negotiation.State // nil: a push
	out     negotiation.Outcome
	agentID string
	frame   []byte
}

// keepQueue is the largest queue (in hooks) run keeps for reuse after a
// burst.
const keepQueue = 1024

// add queues one step for the Committed hook; it never waits. st is the
// hook's from then on.
func (a *afterCommit) add(ctx context.Context, st *negotiation.State, out negotiation.Outcome) {
	if a.fn != nil {
		a.later(hookCall{ctx: ctx, st: st, out: out})
	}
}

// push queues one lobby push for the Pushed hook; it never waits.
func (a *afterCommit) push(ctx context.Context, agentID string, frame []byte) {
	if a.pushed != nil {
		a.later(hookCall{ctx: ctx, agentID: agentID, frame: frame})
	}
}

func (c *hookCall) run(a *afterCommit) {
	if c.st != nil {
		a.fn(c.ctx, c.st, c.out)
	} else {
		a.pushed(c.ctx, c.agentID, c.frame)
	}
}

func (a *afterCommit) later(c hookCall) {
	a.mu.Lock()
	a.queue = append(a.queue, c)
	if !a.running {
		a.running = true
		a.idle = make(chan struct{})
	}
	if !a.worker {
		a.worker = true
		if a.wake == nil {
			a.wake = make(chan struct{}, 1)
		}
		a.mu.Unlock()
		go a.run()
		return
	}
	a.mu.Unlock()
	select {
	case a.wake <- struct{}{}:
	default: // a token is already waiting
	}
}

// run serves the queue until it has been empty for afterCommitLinger.
func (a *afterCommit) run() {
	d := a.linger
	if d == 0 {
		d = afterCommitLinger
	}
	linger := time.NewTimer(d)
	defer linger.Stop()
	var spare []hookCall // the last batch's array, emptied: the next queue
	for {
		a.mu.Lock()
		batch := a.queue
		if len(batch) > 0 {
			a.queue = spare
			a.mu.Unlock()
			for i := range batch {
				batch[i].run(a)
				batch[i] = hookCall{} // the hook's state and frames are not kept
			}
			spare = nil
			if cap(batch) <= keepQueue {
				spare = batch[:0]
			}
			continue
		}
		if a.running {
			a.running = false
			close(a.idle)
		}
		a.mu.Unlock()
		linger.Reset(d)
		select {
		case <-a.wake:
		case <-linger.C:
			a.mu.Lock()
			if len(a.queue) == 0 {
				a.worker = false
				a.mu.Unlock()
				return
			}
			a.mu.Unlock()
		}
	}
}

// wait returns once every step queued so far has had its hook, or ctx is
// done (its error).
func (a *afterCommit) wait(ctx context.Context) error {
	for {
		a.mu.Lock()
		if !a.running {
			a.mu.Unlock()
			return nil
		}
		idle := a.idle
		a.mu.Unlock()
		select {
		case <-idle:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// WaitCommitted returns once the Committed hook has run for every step
// committed so far (the server calls it on shutdown, before closing what the
// hook uses), or ctx is done (its error).
func (h *Hub) WaitCommitted(ctx context.Context) error {
	if h.after == nil {
		return nil
	}
	return h.after.wait(ctx)
}
