package venue

import (
	"log/slog"

	"github.com/labstack/echo/v4"

	"github.com/venuehq/venue/internal/wsconn"
	"github.com/venuehq/venue/lobby"
	"github.com/venuehq/venue/wire"
)

// handleLobby serves /v1/agents/:id/ws?token= (PROTOCOL.md "Lobby socket"). The
// token must be that agent's key; it is checked before the upgrade. The
// lobby's logic is a lobby.Session; this is the WebSocket that carries it.
func (s *Server) handleLobby(c echo.Context) error {
	key, err := socketKey(c)
	if err != nil {
		return err
	}
	a, err := s.dir.Authenticate(c.Request().Context(), key)
	if err != nil {
		return err
	}
	if a.ID != c.Param("id") {
		return wire.Errorf(wire.CodeForbidden, "the token is not %s's", c.Param("id"))
	}
	release, err := s.admitSocket(c, "lobby", a.ID, "")
	if err != nil {
		return err
	}
	ctx, cancel := socketContext(c.Request())
	// Online before the client's dial returns (browse on any node sees it),
	// offline once the socket ends, whatever ends it (PROTOCOL.md "Presence").
	offline := s.presence.Open(ctx, a.ID)
	// The session subscribes to the agent's pushes before the 101 goes out:
	// a push sent as soon as the client's dial returns is held, not lost.
	early := &wsconn.Early{}
	fr := s.frameRate()
	sess := s.lobby.Open(ctx, a, early, lobby.Limits{Rate: fr})
	end := func() { sess.Close(); offline(); release(); cancel() }
	ws, err := s.upgrader.Upgrade(c.Response(), c.Request(), nil)
	if err != nil {
		end()
		return nil
	}
	s.goSocket(func() {
		defer end()
		attrs := []slog.Attr{slog.String("agent_id", a.ID), slog.String("kind", "lobby")}
		lc := s.newConn(ws, attrs, fr) // the session's rate: pings draw on it too
		lc.AgentID, lc.KeyAt = a.ID, a.KeyIssuedAt
		if !s.sockets.Track(lc) {
			return
		}
		defer s.sockets.Untrack(lc)
		s.metrics.connections.WithLabelValues("lobby").Inc()
		defer s.metrics.connections.WithLabelValues("lobby").Dec()
		s.log.LogAttrs(ctx, slog.LevelInfo, "lobby socket open", attrs...)
		early.Attach(lc)
		s.recheckKey(ctx, lc) // after the session subscribed: no push waits on this read
		lc.Serve(ctx, sess)
		lc.Finish()
		s.log.LogAttrs(ctx, slog.LevelInfo, "lobby socket closed", attrs...)
	}, ws)
	return nil
}
