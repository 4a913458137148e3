package venue

import (
	"context"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/time/rate"

	"github.com/venuehq/venue/admission"
	"github.com/venuehq/venue/internal/httpapi"
	"github.com/venuehq/venue/internal/inproc"
	"github.com/venuehq/venue/internal/wsconn"
)

// Caps are the connection caps of one node (admission.Caps).
type Caps = admission.Caps

// Default caps (admission's).
const (
	DefaultConnections             = admission.DefaultConnections
	DefaultSocketsPerAddress       = admission.DefaultSocketsPerAddress
	DefaultLobbyPerAgent           = admission.DefaultLobbyPerAgent
	DefaultPartyPerNegotiation     = admission.DefaultPartyPerNegotiation
	DefaultObserversPerNegotiation = admission.DefaultObserversPerNegotiation
)

// LobbyQuotas bound the requests pending with one bouncer: from one brand,
// and in all (lobby.Service.PendingPerPair, PendingPerBouncer).
type LobbyQuotas struct {
	PendingPerPair, PendingPerBouncer int
}

// SharedLimiter is a rate limit the nodes of a venue share (admission.SharedLimiter).
type SharedLimiter = admission.SharedLimiter

// Principal routes (revocations and escalation decisions, which need no
// API key) are limited per client address: PrincipalPerMinute a minute,
// bursts of the same size, so a stream of forged tokens costs the store
// little.
const PrincipalPerMinute = 60

// principalLimit is the per-address limit of the principal's routes.
func principalLimit() echo.MiddlewareFunc {
	return httpapi.RateLimit(rate.Limit(PrincipalPerMinute/60.0), PrincipalPerMinute, func() error {
		return httpapi.OverCap(time.Second, "too many revocations from this address; try again in a second")
	})
}

// clientKey is the caps' key of the request's client address (httpapi.ClientKey).
func clientKey(c echo.Context) string { return httpapi.ClientKey(c) }

// admitSocket takes the caps of a socket of kind before its upgrade
// (admission.Sockets.Admit): over a cap, a 429 error with Retry-After;
// else the release function (call it when the socket closes).
func (s *Server) admitSocket(c echo.Context, kind, agentID, negID string) (func(), error) {
	admit := func() (func(), error) { return s.admits.Admit(clientKey(c), kind, agentID, negID) }
	if inproc.Local(c.Request()) { // the house agents: caps of their own, none per address
		admit = func() (func(), error) { return s.admits.AdmitInProcess(kind, agentID, negID) }
	}
	release, err := admit()
	if err != nil {
		s.metrics.capRefusals.WithLabelValues(kind).Inc()
		return nil, httpapi.OverCap(admission.CapRetryAfter, "%s", err.Error())
	}
	return release, nil
}

// sharedFrame counts one party frame of agentID in negID against
// cfg.FrameLimiter (admission.SharedAllow).
func (s *Server) sharedFrame(ctx context.Context, agentID, negID string) bool {
	return admission.SharedAllow(ctx, s.cfg.FrameLimiter, agentID+" "+negID, s.log)
}

// shareBudget makes cn draw its frames from the budget that every socket
// of agentID in negID shares (so a second socket does not double the rate),
// and returns the function that gives it back.
func (s *Server) shareBudget(cn *wsconn.Conn, agentID, negID string) func() {
	lim, release := s.admits.Budgets.Get(agentID + " " + negID)
	cn.Rate().Share(lim)
	return release
}
