package venue

import (
	"context"
	"crypto/sha256"
	"net/http"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/venuehq/venue/arena"
	"github.com/venuehq/venue/internal/httpapi"
	"github.com/venuehq/venue/internal/inproc"
	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/settlement"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/web"
)

// arenaParts are the arena's pieces on one node (PROTOCOL.md "Arena,
// reputation and settlements"): the live feed, the settler of live deals,
// the house agents and the pages.
type arenaParts struct {
	feed    *arena.Feed
	settler settlement.Settler
	api     http.Handler
	pages   http.Handler

	mu     sync.Mutex
	house  *arena.House   // nil until started (and when off)
	inproc *inproc.Server // the house's way in, nil with the house
}

// initArena builds the feed and the settler; New calls it before the hub.
func (s *Server) initArena() {
	s.arena.feed = arena.NewFeed(s.bus, s.log)
	s.arena.settler = s.cfg.Settler
	if s.arena.settler == nil {
		s.arena.settler = settlement.Recorder{Log: s.log}
	}
}

// committed is the hub's Committed hook: every committed step reaches the
// parties' event logs and the arena feed, and every live deal the settler.
func (s *Server) committed(ctx context.Context, st negotiation.State, out negotiation.Outcome) {
	s.recorder.Committed(ctx, st, out)
	s.arena.feed.Publish(ctx, st, out)
	if out.Ended {
		s.rlog.Ended(ctx, &st)
	}
	if out.Settlement != nil {
		if err := s.arena.settler.Settle(context.WithoutCancel(ctx), *out.Settlement); err != nil {
			s.log.Error("settle", "negotiation_id", st.ID, "settlement_id", out.Settlement.ID, "err", err)
		}
	}
}

// House returns the node's house agents, nil when they are off or not
// started yet.
func (s *Server) House() *arena.House {
	s.arena.mu.Lock()
	defer s.arena.mu.Unlock()
	return s.arena.house
}

// mountArena adds the arena's REST routes, its feed and the pages.
func (s *Server) mountArena(e *echo.Echo) {
	s.arena.api = arena.NewAPI(arena.APIConfig{
		Store: s.store, Feed: s.arena.feed, House: nil, Log: s.log,
		Authenticate: func(r *http.Request) (store.Agent, error) {
			return s.dir.Authenticate(r.Context(), httpapi.BearerKey(r))
		},
	})
	api := echo.WrapHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.arenaAPI().ServeHTTP(w, r)
	}))
	e.GET("/v1/arena/negotiations", api)
	e.GET("/v1/arena/ws", api)
	e.POST("/v1/arena/spar", api)
	e.GET("/v1/agents/:id/reputation", api)
	s.arena.pages = web.Handler()
	pages := echo.WrapHandler(s.arena.pages)
	e.GET("/", pages)
	e.GET("/arena", pages)
	e.GET("/negotiations/:id", pages)
	e.GET("/agents/:id", pages)
	e.GET("/assets/*", pages)
}

// arenaAPI is the API handler, rebuilt with the house once it runs.
func (s *Server) arenaAPI() http.Handler {
	s.arena.mu.Lock()
	defer s.arena.mu.Unlock()
	return s.arena.api
}

// startHouse starts the house agents against this node's own handler,
// in-process (when Config.HouseAgents); they stop with the server's
// background loops, their way in at Shutdown.
func (s *Server) startHouse(ctx context.Context, addr string) {
	if !s.cfg.HouseAgents {
		return
	}
	seed := sha256.Sum256(append([]byte("house agents\x00"), s.hub.Receipts().Key().PEM()...))
	in := inproc.Serve(s.echo)
	h := arena.NewHouse(arena.HouseConfig{
		BaseURL: "http://" + addr, Dial: in.DialContext, Store: s.store, Seed: seed[:], Audience: s.cfg.Audience, Clock: s.clock, Log: s.log,
	})
	s.arena.mu.Lock()
	s.arena.house, s.arena.inproc = h, in
	s.arena.api = arena.NewAPI(arena.APIConfig{
		Store: s.store, Feed: s.arena.feed, House: h, Log: s.log,
		Authenticate: func(r *http.Request) (store.Agent, error) {
			return s.dir.Authenticate(r.Context(), httpapi.BearerKey(r))
		},
	})
	s.arena.mu.Unlock()
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		defer s.stopHouse()
		if err := h.Run(ctx); err != nil && ctx.Err() == nil {
			s.log.Error("house agents stopped", "err", err)
		}
	}()
}

// stopHouse closes the house agents' way in (no new sockets; they redial
// in vain until the background loops stop). Idempotent.
func (s *Server) stopHouse() {
	s.arena.mu.Lock()
	defer s.arena.mu.Unlock()
	if s.arena.inproc != nil {
		_ = s.arena.inproc.Close()
	}
}
