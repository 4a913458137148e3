package venue

import (
	"bytes"
	"encoding/json"
	"sync"

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
	defer s.presence.open(ctx, a.ID)()

	// Subscribe before reading the pending requests, so none falls between;
	// a request both pushed live and found pending is sent once.
	var mu sync.Mutex
	pushed := map[string]bool{}
	cancel := s.bus.Subscribe(bus.AgentTopic(a.ID), func(b []byte) {
		if len(b) == 0 { // a lost lobby push is not recovered (PROTOCOL.md)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if id := requestedID(b); id != "" {
			if pushed[id] {
				return
			}
			pushed[id] = true
		}
		lc.enqueue(b)
	})
	defer cancel()
	if a.Role == negotiation.RoleBouncer {
		pending, err := s.store.PendingFor(ctx, a.ID)
		if err != nil {
			log.Error("pending requests", "err", err)
		}
		now := s.clock.Now()
		mu.Lock()
		for _, st := range pending {
			if now.Before(st.RequestExpiresAt) && !pushed[st.ID] {
				pushed[st.ID] = true
				lc.enqueue(lobby.RequestedFrame(st))
			}
		}
		mu.Unlock()
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

var requestedType = []byte(`"type":"` + lobby.TypeNegotiationReq + `"`)

// requestedID returns the negotiation id of a negotiation_requested push,
// "" for any other frame.
func requestedID(b []byte) string {
	if !bytes.Contains(b, requestedType) {
		return ""
	}
	var f struct {
		Type string `json:"type"`
		ID   string `json:"negotiation_id"`
	}
	if json.Unmarshal(b, &f) != nil || f.Type != lobby.TypeNegotiationReq {
		return ""
	}
	return f.ID
}
