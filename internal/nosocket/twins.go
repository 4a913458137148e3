// Package nosocket is the venue without a socket (PROTOCOL.md "Without a
// socket"): the REST twins of the lobby and room sockets (one request frame
// in, the frame its socket would answer out, with 200 whatever that
// frame's type), GET /v1/events, and the Recorder that writes the
// per-agent event log those read. venue mounts the routes.
package nosocket

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"golang.org/x/time/rate"

	"github.com/venuehq/venue/hub"
	"github.com/venuehq/venue/internal/httpapi"
	"github.com/venuehq/venue/lobby"
	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/room"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/wire"
)

// Twins are the REST twins of the sockets.
type Twins struct {
	Lobby *lobby.Service
	Rooms *hub.Hub
	// Negotiation reads a negotiation: store.ErrNotFound when there is none.
	Negotiation func(ctx context.Context, id string) (negotiation.State, error)
	// FramesPerSecond and FrameBurst are the sockets' frame rate, taken
	// per agent (lobby) or per agent and negotiation (room).
	FramesPerSecond float64
	FrameBurst      int
	// MaxFrameBytes bounds a request's frame, as a socket's (over it: 413
	// too_large).
	MaxFrameBytes int
	// Shared, if set, counts a room frame against the budget every node
	// shares for the agent in the negotiation; false refuses it (429).
	Shared func(ctx context.Context, agentID, negotiationID string) bool
	// Count is told the type of every room frame received (the metrics).
	Count func(frameType string)
	Log   *slog.Logger

	rate *middleware.RateLimiterMemoryStore
}

// Init readies the twins' frame rate; call it once before serving.
func (t *Twins) Init() {
	t.rate = middleware.NewRateLimiterMemoryStoreWithConfig(middleware.RateLimiterMemoryStoreConfig{
		Rate: rate.Limit(t.FramesPerSecond), Burst: t.FrameBurst, ExpiresIn: time.Minute,
	})
}

// frame reads the request's frame: at most MaxFrameBytes of UTF-8.
func (t *Twins) frame(c echo.Context) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(c.Request().Body, int64(t.MaxFrameBytes)+1))
	switch {
	case err != nil:
		return nil, wire.Errorf(wire.CodeInvalidArgument, "could not read the body")
	case len(data) > t.MaxFrameBytes:
		return nil, wire.Errorf(wire.CodeTooLarge, "a frame is at most 16 KiB")
	case !utf8.Valid(data):
		return nil, wire.Errorf(wire.CodeInvalidJSON, "the frame is not UTF-8")
	}
	return data, nil
}

// allow takes one frame of key from the twins' rate: 429 over it.
func (t *Twins) allow(key string) error {
	if ok, _ := t.rate.Allow(key); !ok {
		return httpapi.OverCap(time.Second, "over %v frames a second", t.FramesPerSecond)
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

// agentOf is the agent the router authenticated.
func agentOf(c echo.Context) store.Agent {
	a, _ := httpapi.Agent(c)
	return a
}

// LobbyFrame is POST /v1/agents/me/lobby: one lobby request frame -> 200
// with the lobby socket's reply (PROTOCOL.md "Lobby socket").
func (t *Twins) LobbyFrame(c echo.Context) error {
	a := agentOf(c)
	data, err := t.frame(c)
	if err != nil {
		return err
	}
	if err := t.allow(a.ID); err != nil {
		return err
	}
	return answer(c, t.Lobby.Handle(c.Request().Context(), a, data))
}

// RoomFrame is POST /v1/negotiations/:id/frames: one of the eleven frames
// of a party -> 200 with its socket's reply (message_ack, scope_block or
// error), 204 for thinking (PROTOCOL.md "Negotiation socket").
func (t *Twins) RoomFrame(c echo.Context) error {
	ctx := c.Request().Context()
	a, id := agentOf(c), c.Param("id")
	data, err := t.frame(c)
	if err != nil {
		return err
	}
	st, err := t.Negotiation(ctx, id)
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
	if err := t.allow(a.ID + " " + id); err != nil {
		return err
	}
	if t.Shared != nil && !t.Shared(ctx, a.ID, id) {
		return httpapi.OverCap(time.Second, "over %v frames a second", t.FramesPerSecond)
	}
	return answer(c, room.Answer(ctx, t.Rooms, &st, a.ID, data, room.Options{Count: t.Count, Log: t.Log}))
}
