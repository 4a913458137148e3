package venue

import (
	"github.com/labstack/echo/v4"

	"github.com/venuehq/venue/bus"
	"github.com/venuehq/venue/lobby"
	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/wire"
)

// handleLobby serves /v1/agents/:id/ws?token= (VENUE.md §2). The token must
// be that agent's key; it is checked before the upgrade.
func (s *Server) handleLobby(c echo.Context) error {
	ctx := c.Request().Context()
	a, err := s.authenticate(ctx, c.QueryParam("token"))
	if err != nil {
		return err
	}
	if a.ID != c.Param("id") {
		return wire.Errorf(wire.CodeForbidden, "the token is not %s's", c.Param("id"))
	}
	ws, err := s.upgrader.Upgrade(c.Response(), c.Request(), nil)
	if err != nil {
		return nil
	}
	log := s.log.With("agent_id", a.ID, "kind", "lobby")
	lc := newConn(ws, log, s.cfg.Limits)
	s.track(lc)
	defer s.untrack(lc)
	metricConnections.WithLabelValues("lobby").Inc()
	defer metricConnections.WithLabelValues("lobby").Dec()
	log.Info("lobby socket open")

	cancel := s.bus.Subscribe(bus.AgentTopic(a.ID), func(b []byte) { lc.enqueue(b) })
	defer cancel()
	if a.Role == negotiation.RoleBouncer {
		pending, err := s.store.PendingFor(ctx, a.ID)
		if err != nil {
			log.Error("pending requests", "err", err)
		}
		now := s.clock.Now()
		for _, st := range pending {
			if now.Before(st.RequestExpiresAt) {
				lc.enqueue(lobby.RequestedFrame(st))
			}
		}
	}
	for {
		data, ok := lc.read()
		if !ok {
			break
		}
		if ok, closed := lc.allow(); !ok {
			if closed {
				break
			}
			lc.enqueue(lobby.ErrorFrame(wire.Errorf(wire.CodeRateLimited, "over %v frames a second", s.cfg.Limits.FramesPerSecond), negotiation.ClientID(data)))
			continue
		}
		// The agent's record may have changed (reputation, profile): read it fresh.
		cur, err := s.store.Agent(ctx, a.ID)
		if err == nil {
			a = cur
		}
		lc.enqueue(s.lobby.Handle(ctx, a, data))
	}
	lc.finish()
	log.Info("lobby socket closed")
	return nil
}
