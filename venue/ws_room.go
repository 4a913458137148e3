package venue

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/venuehq/venue/hub"
	"github.com/venuehq/venue/negotiation"
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
			a, err := s.dir.Authenticate(ctx, socketKey(c))
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
		if !observe && !st.IsParty(agentID) {
			return wire.Errorf(wire.CodeForbidden, "only the two parties connect to this socket; observers use /ws/observe")
		}
		if st.Status == negotiation.StatusPending || st.Status == negotiation.StatusDeclined {
			return wire.Errorf(wire.CodeInvalidState, "the negotiation is %s", st.Status)
		}
		since := int64(-1)
		if v := c.QueryParam("since"); v != "" {
			since, err = strconv.ParseInt(v, 10, 64)
			if err != nil || since < 0 {
				return wire.Errorf(wire.CodeInvalidArgument, "since must be a non-negative integer")
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
		defer release()
		ws, err := s.upgrader.Upgrade(c.Response(), c.Request(), nil)
		if err != nil {
			return nil // the upgrader has answered
		}
		log := s.log.With("negotiation_id", id, "agent_id", agentID, "kind", kind)
		cn := newConn(ws, log, s.cfg.Limits, s.metrics)
		cn.agentID, cn.keyAt = agentID, keyAt
		if !observe {
			defer s.shareBudget(cn, agentID, id)()
		}
		if !s.track(cn) {
			return nil
		}
		defer s.untrack(cn)
		s.recheckKey(ctx, cn)
		s.metrics.connections.WithLabelValues(kind).Inc()
		defer s.metrics.connections.WithLabelValues(kind).Dec()
		log.Info("socket open", "since", since)
		sub := s.hub.Subscribe(id, &st, agentID, since, cn)
		s.roomLoop(ctx, cn, sub, agentID)
		sub.Close()
		cn.finish()
		log.Info("socket closed")
		return nil
	}
}

// roomLoop reads a room socket's frames until it closes: a party's go
// through the room, an observer's are refused (repeated sending closes).
func (s *Server) roomLoop(ctx context.Context, cn *conn, sub *hub.Subscription, agentID string) {
	ctx = cn.context(ctx)
	for {
		data, ok := cn.read()
		if !ok {
			return
		}
		if agentID == "" { // observers are read-only
			if cn.refused() {
				return
			}
			continue
		}
		ok, closed := cn.allow()
		if ok && !s.sharedFrame(ctx, agentID, sub.NegotiationID()) {
			ok, closed = false, cn.refused()
		}
		if !ok {
			if closed {
				return
			}
			cn.enqueue(wire.ErrorFrame(wire.Errorf(wire.CodeRateLimited, "over %v frames a second", s.cfg.Limits.FramesPerSecond), negotiation.ClientID(data)))
			continue
		}
		s.partyFrame(ctx, cn, sub, data)
	}
}

// partyFrame runs one party frame through the room and answers its sender.
func (s *Server) partyFrame(ctx context.Context, cn *conn, sub *hub.Subscription, data []byte) {
	f, werr := negotiation.DecodeFrame(data)
	if werr != nil {
		s.metrics.framesIn.WithLabelValues("invalid").Inc()
		cn.enqueue(wire.ErrorFrame(werr, negotiation.ClientID(data)))
		return
	}
	s.metrics.framesIn.WithLabelValues(f.Type).Inc()
	if f.Type == negotiation.TypeThinking {
		if werr := sub.Think(ctx); werr != nil {
			cn.enqueue(wire.ErrorFrame(werr, f.ID))
		}
		return
	}
	sub.Submit(ctx, f, func(out negotiation.Outcome, err error) { s.reply(cn, sub, f, out, err) })
}

// reply answers the sender of a frame: message_ack, scope_block or error.
func (s *Server) reply(cn *conn, sub *hub.Subscription, f negotiation.Frame, out negotiation.Outcome, err error) {
	var sb *negotiation.ScopeBlock
	var we *wire.Error
	switch {
	case errors.As(err, &sb):
		b, _ := json.Marshal(sb)
		cn.enqueue(b)
	case errors.As(err, &we):
		cn.enqueue(wire.ErrorFrame(we, f.ID))
	case err != nil:
		s.log.Error("room step", "negotiation_id", sub.NegotiationID(), "agent_id", sub.Agent(), "err", err)
		cn.enqueue(wire.ErrorFrame(wire.Errorf(wire.CodeInternal, "the venue could not take that frame; nothing changed"), f.ID))
	case out.Ack != nil:
		cn.enqueue(out.Ack)
	}
}
