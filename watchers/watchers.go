// Package watchers counts the spectators of a negotiation: its observer
// sockets on every node (PROTOCOL.md "Pages"). Local counts one node's (the
// embedded default); Shared adds every node's through Redis.
package watchers

import (
	"context"
	"sync"
)

// Counter counts observer sockets per negotiation. Open records one on this
// node and returns the func that records its end; Count is the number open
// on every node the Counter sees. Both are safe from any goroutine.
type Counter interface {
	Open(ctx context.Context, negotiationID string) (release func())
	Count(ctx context.Context, negotiationID string) (int, error)
}

// Local counts this node's observer sockets in memory.
type Local struct {
	mu sync.Mutex
	n  map[string]int
}

// NewLocal returns an empty Local.
func NewLocal() *Local { return &Local{n: map[string]int{}} }

// Open implements Counter.
func (l *Local) Open(_ context.Context, negotiationID string) func() {
	l.add(negotiationID, 1)
	var once sync.Once
	return func() { once.Do(func() { l.add(negotiationID, -1) }) }
}

// add changes negotiationID's count by d and returns the new count.
func (l *Local) add(negotiationID string, d int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	v := l.n[negotiationID] + d
	if v <= 0 {
		delete(l.n, negotiationID)
		return 0
	}
	l.n[negotiationID] = v
	return v
}

// Count implements Counter: this node's count.
func (l *Local) Count(_ context.Context, negotiationID string) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n[negotiationID], nil
}

// snapshot is every nonzero count of this node.
func (l *Local) snapshot() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[string]int, len(l.n))
	for k, v := range l.n {
		out[k] = v
	}
	return out
}
