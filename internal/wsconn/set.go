package wsconn

import (
	"context"
	"sync"
	"time"
)

// Set is a node's open sockets: the handlers still running (their frames'
// store steps), closed together at shutdown, and by agent when a key is
// replaced. The zero Set is ready.
type Set struct {
	mu      sync.Mutex
	conns   map[*Conn]struct{}
	closing bool           // CloseAll began: new sockets are closed at once
	running sync.WaitGroup // handlers between Track and Untrack
}

// Track registers a socket whose handler then runs until Untrack. Once
// CloseAll began it closes the socket with 1001 (CloseGoingAway) and
// returns false: the handler returns at once, without Untrack.
func (s *Set) Track(c *Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		c.Close(CloseGoingAway, "venue shutting down")
		go c.Finish()
		return false
	}
	if s.conns == nil {
		s.conns = map[*Conn]struct{}{}
	}
	s.running.Add(1)
	s.conns[c] = struct{}{}
	return true
}

// Untrack ends what Track began.
func (s *Set) Untrack(c *Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.running.Done()
}

// CloseAll closes every socket with 1001 (CloseGoingAway), and every one
// tracked after; it does not wait (see Wait).
func (s *Set) CloseAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closing = true
	for c := range s.conns {
		c.Close(CloseGoingAway, "venue shutting down")
	}
}

// CloseAgent closes (1008) the sockets of agentID that were opened with a
// key issued before `before`.
func (s *Set) CloseAgent(agentID string, before time.Time, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		if c.AgentID == agentID && c.KeyAt.Before(before) {
			c.Close(ClosePolicy, reason)
		}
	}
}

// Wait waits for every tracked handler to return, or ctx to end (its error).
func (s *Set) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() { s.running.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
