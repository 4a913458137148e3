package lobby

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"sync"
	"time"

	"github.com/venuehq/venue/clock"
)

// PresenceTTL is how long a node's word that an agent's lobby socket is
// open lasts; the node renews it every PresenceTTL/3 while the socket
// stays open, so a node that dies stops counting within PresenceTTL.
const PresenceTTL = 90 * time.Second

// PresenceStore is where presence is kept (a store.Store): agentID's lobby
// sockets on node are open until until (zero: closed), as written at at.
type PresenceStore interface {
	SetPresence(ctx context.Context, agentID, node string, until, at time.Time) error
}

// Presence tracks one node's open lobby sockets in the store, so
// browse_bouncers on any node can say `online` (PROTOCOL.md "Presence").
type Presence struct {
	store PresenceStore
	clock clock.Clock
	log   *slog.Logger
	node  string

	mu    sync.Mutex
	count map[string]int // agent id -> open lobby sockets on this node
}

// NewPresence is the presence of a node of its own random name, kept in st
// on clk's time.
func NewPresence(st PresenceStore, clk clock.Clock, log *slog.Logger) *Presence {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return &Presence{store: st, clock: clk, log: log, node: "node_" + hex.EncodeToString(b), count: map[string]int{}}
}

// Open records a lobby socket of agentID; the returned func records its
// end (the agent is offline on this node once its last socket ended).
func (p *Presence) Open(ctx context.Context, agentID string) func() {
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

// write stores agentID online for PresenceTTL from now, or offline; a
// failure is logged.
func (p *Presence) write(ctx context.Context, agentID string, online bool) {
	now := p.clock.Now()
	var until time.Time
	if online {
		until = now.Add(PresenceTTL)
	}
	if err := p.store.SetPresence(ctx, agentID, p.node, until, now); err != nil {
		p.log.Warn("presence", "agent_id", agentID, "err", err)
	}
}

// Run renews this node's entries every PresenceTTL/3 until ctx ends.
func (p *Presence) Run(ctx context.Context) {
	for {
		t := p.clock.NewTimer(PresenceTTL / 3)
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
}
