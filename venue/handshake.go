package venue

import (
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/venuehq/venue/directory"
	"github.com/venuehq/venue/handshake"
	"github.com/venuehq/venue/handshake/rest"
)

// newHandshake builds the node's handshake service (PIRCAN.md
// "Handshake, messages and the owner portal") on Config.Handshake. Lobby
// pushes go through the hub, so they reach the agent's socket on any node.
func (s *Server) newHandshake() error {
	svc, err := handshake.New(handshake.Service{
		Store: s.cfg.Handshake, Agents: s.dir, Accounts: s.cfg.Accounts, Push: s.hub, NewID: directory.NewID, Log: s.log,
	})
	s.handshake = svc
	return err
}

// mountHandshake mounts the handshake's REST routes and the owner portal
// (package handshake/rest) on the node's router.
func (s *Server) mountHandshake(e *echo.Echo) {
	h := rest.New(rest.Handler{
		Service: s.handshake, Auth: s.dir, Now: s.clock.Now, Log: s.log,
		SecureCookie: strings.HasPrefix(s.cfg.PublicURL, "https://"), Bridge: s.cfg.IRCBridge,
		TrustedProxies: s.cfg.TrustedProxies,
	})
	h.Mount(e)
}

// Handshake returns the node's handshake service and owner portal: what
// the PIRCAN bridge's verbs call (CONTACT is Service.Contact, LOGIN is
// Portal.Login, NOTIFY reads Service.TakeNotifications, ...).
func (s *Server) Handshake() (*handshake.Service, *handshake.Portal) {
	return s.handshake, &handshake.Portal{Service: s.handshake}
}
