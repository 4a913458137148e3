package venue

import (
	"context"
	"time"

	"github.com/venuehq/venue/events"
	"github.com/venuehq/venue/handshake"
)

// purgeEvery is how often a node deletes old requests and unused offers
// (lobby.RequestRetention old), so a brand's spam does not stay in the
// store.
const purgeEvery = 10 * time.Minute

// DefaultArenaRetention is how long arena negotiations are kept unless
// Config.ArenaRetention says otherwise.
const DefaultArenaRetention = 7 * 24 * time.Hour

// purgeLoop runs lobby.PurgeRequests, purges arena negotiations older
// than Config.ArenaRetention and the handshake's rows past
// Config.HandshakeRetention every purgeEvery on s.clock until ctx ends,
// and picks up a rotated receipt key (reloadKeys). Every node runs it;
// deleting twice is harmless.
func (s *Server) purgeLoop(ctx context.Context) {
	for {
		t := s.clock.NewTimer(purgeEvery)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		if n, err := s.lobby.PurgeRequests(ctx); err != nil {
			s.log.Warn("purge old requests", "err", err)
		} else if n > 0 {
			s.log.Info("old requests purged", "requests", n)
		}
		if n, err := s.store.PurgeArena(ctx, s.clock.Now().Add(-s.cfg.ArenaRetention)); err != nil {
			s.log.Warn("purge old arena negotiations", "err", err)
		} else if n > 0 {
			s.log.Info("old arena negotiations purged", "negotiations", n, "retention", s.cfg.ArenaRetention)
		}
		s.purgeHandshake(ctx)
		if n, err := s.events.Purge(ctx, s.clock.Now().Add(-events.Retention)); err != nil {
			s.log.Warn("purge old events", "err", err)
		} else if n > 0 {
			s.log.Info("old events purged", "events", n)
		}
		s.reloadKeys(ctx)
	}
}

// retentionOr is r, or handshake.DefaultRetention when r is nil.
func retentionOr(r *handshake.Retention) *handshake.Retention {
	if r == nil {
		d := handshake.DefaultRetention
		return &d
	}
	return r
}

// purgeHandshake deletes what the handshake keeps no longer
// (Config.HandshakeRetention): every node calls it, and the service
// purges under a lock held across nodes, so one purges and the others
// find nothing left.
func (s *Server) purgeHandshake(ctx context.Context) {
	if s.handshake == nil {
		return
	}
	p, err := s.handshake.Purge(ctx, *s.cfg.HandshakeRetention, s.clock.Now())
	if err != nil {
		s.log.Warn("purge the handshake's old rows", "err", err)
	} else if p.Total() > 0 {
		s.log.Info("the handshake's old rows purged", "sign_ins", p.SignIns, "audit", p.Audit, "messages", p.Messages,
			"requests", p.Requests, "tasks", p.Tasks)
	}
}
