package venue

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/venuehq/venue/hub"
	"github.com/venuehq/venue/room"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/wire"
)

// handleRoom serves /v1/negotiations/:id/ws (parties) and .../ws/observe
// (PROTOCOL.md "Negotiation socket", "Observe socket").
func (s *Server) handleRoom(observe bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		ctx := c.Request().Context()
		id := c.Param("id")
		var agentID string
		var keyAt time.Time
		if !observe {
			key, err := socketKey(c)
			if err != nil {
				return err
			}
			a, err := s.dir.Authenticate(ctx, key)
			if err != nil {
				return err
			}
			agentID, keyAt = a.ID, a.KeyIssuedAt
		}
		st, err := s.store.Negotiation(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			return wire.Errorf(wire.CodeNotFound, "no negotiation %s", id)
		} else if err != nil {
			return err
		}
		if werr := room.Join(&st, agentID); werr != nil {
			return werr
		}
		since := int64(-1)
		if v := c.QueryParam("since"); v != "" {
			since, err = strconv.ParseInt(v, 10, 64)
			if err != nil || since < 0 {
				return wire.Errorf(wire.CodeInvalidArgument, "since must be a non-negative integer")
			}
		}
		var delayed observerDelay
		if observe {
			if delayed, since, err = s.observerDelay(ctx, &st, since); err != nil {
				return err
			}
		}
		kind := "party"
		if observe {
			kind = "observer"
		}
		release, err := s.admitSocket(c, kind, agentID, id)
		if err != nil {
			return err
		}
		ws, err := s.upgrader.Upgrade(c.Response(), c.Request(), nil)
		if err != nil {
			release()
			return nil // the upgrader has answered
		}
		ctx, cancel := socketContext(c.Request())
		s.goSocket(func() {
			defer cancel()
			defer release()
			attrs := []slog.Attr{slog.String("negotiation_id", id), slog.String("agent_id", agentID), slog.String("kind", kind)}
			cn := s.newConn(ws, attrs, s.frameRate())
			cn.AgentID, cn.KeyAt = agentID, keyAt
			if !observe {
				defer s.shareBudget(cn, agentID, id)()
			}
			if !s.sockets.Track(cn) {
				return
			}
			defer s.sockets.Untrack(cn)
			s.recheckKey(ctx, cn)
			s.metrics.connections.WithLabelValues(kind).Inc()
			defer s.metrics.connections.WithLabelValues(kind).Dec()
			s.log.LogAttrs(ctx, slog.LevelInfo, "socket open", append(slices.Clip(attrs), slog.Int64("since", since))...)
			var t hub.Transport = cn
			if observe {
				defer s.watchers.Open(ctx, id)()
				t = delayed.wrap(cn.Context(ctx), cn)
			}
			sess := room.Open(s.hub, &st, agentID, since, t, room.Options{Rate: cn.Rate(), Shared: func(ctx context.Context) bool {
				return s.sharedFrame(ctx, agentID, id)
			}, Count: s.countFrame, Log: s.log})
			cn.Serve(cn.Context(ctx), sess)
			sess.Close()
			cn.Finish()
			s.log.LogAttrs(ctx, slog.LevelInfo, "socket closed", attrs...)
		}, ws)
		return nil
	}
}

// countFrame counts a frame received from a room socket by type.
func (s *Server) countFrame(typ string) { s.metrics.framesIn.WithLabelValues(typ).Inc() }
