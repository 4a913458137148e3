package venue

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"
)

// PresenceTTL is how long a node's word that an agent's lobby socket is
// open lasts; the node renews it every PresenceTTL/3 while the socket
// stays open, so a node that dies stops counting within PresenceTTL.
const PresenceTTL = 90 * time.Second

// presence tracks this node's open lobby sockets in the store, so
// browse_bouncers on any node can say `online` (PROTOCOL.md "Presence").
type presence struct {
	s    *Server
	node string

	mu    sync.Mutex
	count map[string]int // agent id -> open lobby sockets on this node
}

func newPresence(s *Server) *presence {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return &presence{s: s, node: "node_" + hex.EncodeToString(b), count: map[string]int{}}
}

// open records a lobby socket of agentID; the returned func records its end.
func (p *presence) open(ctx context.Context, agentID string) func() {
	p.mu.Lock()
	p.count[agentID]++
	p.mu.Unlock()
	p.write(ctx, agentID, true)
	return func() {
		p.mu.Lock()
		p.count[agentID]--
		last := p.count[agentID] == 0
		if last {
			delete(p.count, agentID)
		}
		p.mu.Unlock()
		p.write(context.WithoutCancel(ctx), agentID, !last)
	}
}

func (p *presence) write(ctx context.Context, agentID string, online bool) {
	now := p.s.clock.Now()
	var until time.Time
	if online {
		until = now.Add(PresenceTTL)
	}
	if err := p.s.store.SetPresence(ctx, agentID, p.node, until, now); err != nil {
		p.s.log.Warn("presence", "agent_id", agentID, "err", err)
	}
}

// start renews this node's entries every PresenceTTL/3 until ctx ends.
func (p *presence) start(ctx context.Context) {
	p.s.bg.Add(1)
	go func() {
		defer p.s.bg.Done()
		for {
			t := p.s.clock.NewTimer(PresenceTTL / 3)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C():
			}
			p.mu.Lock()
			ids := make([]string, 0, len(p.count))
			for id := range p.count {
				ids = append(ids, id)
			}
			p.mu.Unlock()
			for _, id := range ids {
				p.write(ctx, id, true)
			}
		}
	}()
}
