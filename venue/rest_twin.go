package venue

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"golang.org/x/time/rate"

	"github.com/venuehq/venue/events"
	"github.com/venuehq/venue/events/eventspg"
	"github.com/venuehq/venue/internal/httpapi"
	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/room"
	"github.com/venuehq/venue/store"
	pgstore "github.com/venuehq/venue/store/postgres"
	"github.com/venuehq/venue/wire"
)

// The REST twins of the sockets (PROTOCOL.md "Without a socket"): one
// request frame in, the frame its socket would answer out, with 200
// whatever that frame's type.

// newTwinRate is the frame rate of the REST twins: the sockets' limits,
// per agent (lobby) or per agent and negotiation (room).
func newTwinRate(l Limits) *middleware.RateLimiterMemoryStore {
	return middleware.NewRateLimiterMemoryStoreWithConfig(middleware.RateLimiterMemoryStoreConfig{
		Rate: rate.Limit(l.FramesPerSecond), Burst: l.FrameBurst, ExpiresIn: time.Minute,
	})
}

// twinFrame reads the request's frame: at most MaxFrameBytes of UTF-8.
func twinFrame(c echo.Context) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(c.Request().Body, MaxFrameBytes+1))
	switch {
	case err != nil:
		return nil, wire.Errorf(wire.CodeInvalidArgument, "could not read the body")
	case len(data) > MaxFrameBytes:
		return nil, wire.Errorf(wire.CodeTooLarge, "a frame is at most 16 KiB")
	case !utf8.Valid(data):
		return nil, wire.Errorf(wire.CodeInvalidJSON, "the frame is not UTF-8")
	}
	return data, nil
}

// twinAllow takes one frame of key from the twins' rate: 429 over it.
func (s *Server) twinAllow(key string) error {
	if ok, _ := s.twinRate.Allow(key); !ok {
		return httpapi.OverCap(time.Second, "over %v frames a second", s.cfg.Limits.FramesPerSecond)
	}
	return nil
}

// answer writes a reply frame with 200 (204 when the frame has none).
func answer(c echo.Context, frame []byte) error {
	if frame == nil {
		return c.NoContent(http.StatusNoContent)
	}
	return c.JSONBlob(http.StatusOK, frame)
}

// handleLobbyFrame is POST /v1/agents/me/lobby: one lobby request frame
// -> 200 with the lobby socket's reply (PROTOCOL.md "Lobby socket").
func (s *Server) handleLobbyFrame(c echo.Context) error {
	a := agentOf(c)
	data, err := twinFrame(c)
	if err != nil {
		return err
	}
	if err := s.twinAllow(a.ID); err != nil {
		return err
	}
	return answer(c, s.lobby.Handle(c.Request().Context(), a, data))
}

// handleRoomFrame is POST /v1/negotiations/:id/frames: one of the eleven
// frames of a party -> 200 with its socket's reply (message_ack,
// scope_block or error), 204 for thinking (PROTOCOL.md "Negotiation socket").
func (s *Server) handleRoomFrame(c echo.Context) error {
	ctx := c.Request().Context()
	a, id := agentOf(c), c.Param("id")
	data, err := twinFrame(c)
	if err != nil {
		return err
	}
	st, err := s.store.Negotiation(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return wire.Errorf(wire.CodeNotFound, "no negotiation %s", id)
	} else if err != nil {
		return err
	}
	if a.ID == "" || !st.IsParty(a.ID) {
		return wire.Errorf(wire.CodeForbidden, "only the two parties send frames to this negotiation")
	}
	if werr := room.Join(&st, a.ID); werr != nil {
		return werr
	}
	if err := s.twinAllow(a.ID + " " + id); err != nil {
		return err
	}
	if !s.sharedFrame(ctx, a.ID, id) {
		return httpapi.OverCap(time.Second, "over %v frames a second", s.cfg.Limits.FramesPerSecond)
	}
	return answer(c, room.Answer(ctx, s.hub, &st, a.ID, data, room.Options{Count: s.countFrame, Log: s.log}))
}

// handleEvents is GET /v1/events?after=&limit=: the agent's events, oldest
// first (PROTOCOL.md "Without a socket").
func (s *Server) handleEvents(c echo.Context) error {
	limit := events.MaxLimit
	if v := c.QueryParam("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > events.MaxLimit {
			return wire.Errorf(wire.CodeInvalidArgument, "limit is an integer from 1 to %d", events.MaxLimit)
		}
		limit = n
	}
	evs, err := s.events.After(c.Request().Context(), agentOf(c).ID, c.QueryParam("after"), limit)
	if errors.Is(err, events.ErrUnknownAfter) {
		return wire.Errorf(wire.CodeNotFound, "after names none of your kept events")
	} else if err != nil {
		return err
	}
	if evs == nil {
		evs = []events.Event{}
	}
	return c.JSON(http.StatusOK, map[string]any{"events": evs})
}

// eventsInTx hands the event log's entries of each step to a store that
// writes them in the step's own transaction (Postgres with its event log
// on the same database: store/postgres SetEvents); recordCommitted then
// leaves them alone. Called by New.
func (s *Server) eventsInTx() {
	es, ok := s.store.(interface{ SetEvents(pgstore.EventsOf) })
	if _, pg := s.cfg.Events.(*eventspg.Store); !ok || !pg {
		return
	}
	es.SetEvents(func(st *negotiation.State, out negotiation.Outcome) []events.Event {
		return s.stepEvents(st, out, s.hub.OutboundOf)
	})
	s.eventsWritten = true
}

// recordCommitted appends to the event log what the parties' sockets
// would carry of a committed step, unless the store wrote it with the step
// (eventsInTx). It runs in the hub's Committed hook, once per step across
// the nodes.
func (s *Server) recordCommitted(ctx context.Context, st negotiation.State, out negotiation.Outcome) {
	if s.eventsWritten {
		if out.Started || len(out.Entries) > 0 || len(out.Private) > 0 {
			s.hooks.Wake() // the webhooks have new events to deliver
		}
		return
	}
	s.appendEvents(ctx, s.stepEvents(&st, out, func(st *negotiation.State, frame json.RawMessage, hash string) []byte {
		return s.hub.Outbound(ctx, st.ID, frame, hash)
	})...)
}

// stepEvents is the event log's entries of a committed step: what the
// parties' sockets carry of it, negotiation_started, the transcript frames
// (a party's own negotiation_message excepted: it had the ack) and the
// private frames; outbound makes a transcript frame as sockets carry it.
func (s *Server) stepEvents(st *negotiation.State, out negotiation.Outcome, outbound func(*negotiation.State, json.RawMessage, string) []byte) []events.Event {
	now := s.clock.Now()
	parties := []string{st.Brand.AgentID, st.Bouncer.AgentID}
	evs := make([]events.Event, 0, 2*(len(out.Entries)+1)+len(out.Private))
	if out.Started {
		f := st.StartedFrame()
		for _, p := range parties {
			evs = append(evs, events.NewTyped(p, st.ID, negotiation.TypeNegotiationStarted, f, now))
		}
	}
	for _, en := range out.Entries {
		f := outbound(st, en.Frame, en.Hash)
		for _, p := range parties {
			if en.From != p || en.Type != negotiation.TypeNegotiationMessage {
				evs = append(evs, events.NewTyped(p, st.ID, en.Type, f, now))
			}
		}
	}
	for _, p := range out.Private {
		evs = append(evs, events.New(p.To, st.ID, p.Frame, now))
	}
	return evs
}

// recordPushed appends a lobby push to its agent's event log (the hub's
// Pushed hook).
func (s *Server) recordPushed(ctx context.Context, agentID string, frame []byte) {
	s.appendEvents(ctx, events.New(agentID, "", frame, s.clock.Now()))
}

func (s *Server) appendEvents(ctx context.Context, evs ...events.Event) {
	if len(evs) == 0 {
		return
	}
	if err := s.events.Append(ctx, evs...); err != nil {
		s.log.Error("event log: append", "events", len(evs), "err", err)
	}
}
