package venue

import (
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"

	"github.com/venuehq/venue/directory"
	"github.com/venuehq/venue/handshake"
	hsmemory "github.com/venuehq/venue/handshake/memory"
	hspostgres "github.com/venuehq/venue/handshake/postgres"
	"github.com/venuehq/venue/handshake/rest"
)

// pooled is a store on a Postgres pool (store/postgres.Store): the
// handshake's tables live in the same schema (migrations/00006).
type pooled interface {
	Pool() *pgxpool.Pool
}

// mountHandshake builds the node's handshake service (PIRCAN.md
// "Handshake, messages and the owner portal") on the venue's store and
// mounts its REST routes and the owner portal (package handshake/rest).
// Lobby pushes go through the hub, so they reach the agent's socket on
// any node.
func (s *Server) mountHandshake(e *echo.Echo) {
	var st handshake.Store = hsmemory.New()
	if p, ok := s.store.(pooled); ok {
		st = hspostgres.New(p.Pool())
	}
	s.handshake = &handshake.Service{
		Store: st, Agents: s.dir, Accounts: s.cfg.Accounts, Push: s.hub, NewID: directory.NewID, Log: s.log,
	}
	h := rest.New(rest.Handler{
		Service: s.handshake, Auth: s.dir, Now: s.clock.Now, Log: s.log,
		SecureCookie: strings.HasPrefix(s.cfg.PublicURL, "https://"),
	})
	wrapped := echo.WrapHandler(h)
	for _, p := range rest.Prefixes {
		e.Any(p, wrapped)
		e.Any(p+"/*", wrapped)
	}
}

// Handshake returns the node's handshake service and owner portal: what
// the PIRCAN bridge's verbs call (CONTACT is Service.Contact, LOGIN is
// Portal.Login, NOTIFY reads Service.TakeNotifications, ...).
func (s *Server) Handshake() (*handshake.Service, *handshake.Portal) {
	return s.handshake, &handshake.Portal{Service: s.handshake}
}
