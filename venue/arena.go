package venue

import (
	"context"
	"crypto/sha256"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/venuehq/venue/arena"
	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/web"
)

// initArena builds the arena's pieces of the node (package arena's Node:
// feed, settler, routes); New calls it before the hub.
func (s *Server) initArena() {
	s.arena = arena.NewNode(s.bus, s.store, s.cfg.Settler, func(r *http.Request) (store.Agent, error) {
		return s.authenticate(r)
	}, s.log)
}

// committed is the hub's Committed hook: every committed step reaches the
// parties' event logs and the arena feed, and every live deal the settler.
func (s *Server) committed(ctx context.Context, st *negotiation.State, out negotiation.Outcome) {
	s.recorder.Committed(ctx, st, out)
	s.arena.Feed.Publish(ctx, *st, out)
	if out.Ended {
		s.rlog.Ended(ctx, st)
	}
	s.arena.Settle(ctx, st, out)
}

// House returns the node's house agents, nil when they are off or not
// started yet.
func (s *Server) House() *arena.House { return s.arena.House() }

// mountArena adds the arena's REST routes, its feed and the pages.
func (s *Server) mountArena(e *echo.Echo) {
	s.arena.API.Mount(e)
	pages := echo.WrapHandler(web.Handler())
	e.GET("/", pages)
	e.GET("/arena", pages)
	e.GET("/negotiations/:id", pages)
	e.GET("/agents/:id", pages)
	e.GET("/assets/*", pages)
}

// startHouse starts the house agents against this node's own handler,
// in-process (when Config.HouseAgents); they stop with the server's
// background loops, their way in at Shutdown.
func (s *Server) startHouse(ctx context.Context, addr string) {
	if !s.cfg.HouseAgents {
		return
	}
	seed := sha256.Sum256(append([]byte("house agents\x00"), s.hub.Receipts().Key().PEM()...))
	s.arena.StartHouse(ctx, s.echo, arena.HouseConfig{
		BaseURL: "http://" + addr, Store: s.store, Seed: seed[:], Audience: s.cfg.Audience, Clock: s.clock, Log: s.log,
	}, &s.bg)
}
