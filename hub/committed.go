package hub

import (
	"context"
	"sync"

	"github.com/venuehq/venue/negotiation"
)

// afterCommit runs the Committed and Pushed hooks off the committing caller's path, in
// commit order, on one goroutine that runs only while steps wait: the
// sender of a frame has its reply and the room its frames whatever the hook
// does (a settler that blocks holds up only later hooks).
type afterCommit struct {
	fn     func(ctx context.Context, st negotiation.State, out negotiation.Outcome)
	pushed func(ctx context.Context, agentID string, frame []byte)

	mu      sync.Mutex
	queue   []func()
	running bool
	idle    chan struct{} // closed when the running goroutine ends
}

// add queues one step for the Committed hook; it never waits.
func (a *afterCommit) add(ctx context.Context, st negotiation.State, out negotiation.Outcome) {
	if a.fn != nil {
		a.later(func() { a.fn(ctx, st, out) })
	}
}

// push queues one lobby push for the Pushed hook; it never waits.
func (a *afterCommit) push(ctx context.Context, agentID string, frame []byte) {
	if a.pushed != nil {
		a.later(func() { a.pushed(ctx, agentID, frame) })
	}
}

func (a *afterCommit) later(fn func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.queue = append(a.queue, fn)
	if !a.running {
		a.running = true
		a.idle = make(chan struct{})
		go a.run(a.idle)
	}
}

func (a *afterCommit) run(idle chan struct{}) {
	defer close(idle)
	for {
		a.mu.Lock()
		batch := a.queue
		a.queue = nil
		if len(batch) == 0 {
			a.running = false
			a.mu.Unlock()
			return
		}
		a.mu.Unlock()
		for _, fn := range batch {
			fn()
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
