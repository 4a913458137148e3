package venue

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/venuehq/venue/internal/admin"
	"github.com/venuehq/venue/internal/httpapi"
)

// HTTPTimeouts override the public listener's timeouts (httpapi.Timeouts).
type HTTPTimeouts = httpapi.Timeouts

// Pinger is an optional ability of a bus: a round trip /readyz checks.
type Pinger = admin.Pinger

// ready pings the store and the bus (admin.Readiness).
func (s *Server) ready(ctx context.Context) (bool, map[string]string) {
	return admin.Readiness(ctx, s.store, s.bus)
}

// handlePublicReady is the public GET /readyz: ready or not, nothing about
// why (backend names and errors are for the admin listener).
func (s *Server) handlePublicReady(c echo.Context) error {
	ready, _ := s.ready(c.Request().Context())
	status := http.StatusOK
	if !ready {
		status = http.StatusServiceUnavailable
	}
	return c.JSON(status, map[string]bool{"ready": ready})
}

func (s *Server) adminConfig() admin.Config {
	return admin.Config{Addr: s.cfg.AdminAddr, Metrics: s.cfg.Metrics, Ready: s.ready, Backend: s.cfg.Backend,
		ReadyInfo: s.cfg.ReadyInfo, Pprof: s.cfg.Pprof, TrustedProxies: s.cfg.TrustedProxies, Log: s.log,
		Routes: map[string]http.Handler{"POST /log/rotate-key": s.rlog.RotateKey(s.cfg.KeySealer, s.clock.Now)}}
}

// AdminHandler is the admin listener's handler (Config.AdminAddr, package
// internal/admin): /metrics, the detailed /readyz, the runtime metrics and,
// with Config.Pprof, /debug/pprof. Never expose it publicly.
func (s *Server) AdminHandler() http.Handler { return admin.Handler(s.adminConfig()) }

// AdminAddr is the admin listener's bound address once serving ("" if none).
func (s *Server) AdminAddr() string { return s.adminAddr }
