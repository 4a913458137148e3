package venue

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/venuehq/venue/internal/httpapi"
	"github.com/venuehq/venue/internal/rtmetrics"
)

// HTTP limits of the public listener (PROTOCOL.md "Limits and close codes").
// The WebSocket routes set their own deadlines once upgraded.
const (
	ReadHeaderTimeout = 10 * time.Second  // the request line and headers
	ReadTimeout       = 30 * time.Second  // the whole request, body included
	WriteTimeout      = 30 * time.Second  // the whole answer
	IdleTimeout       = 120 * time.Second // a keep-alive connection between requests
	MaxHeaderBytes    = 16 << 10          // request line and headers; over it, 431
	MaxQueryBytes     = 2 << 10           // the query string; over it, 414
)

// HTTPTimeouts override the public listener's timeouts; zero fields take
// the constants above (tests shorten them).
type HTTPTimeouts struct {
	ReadHeader, Read, Write, Idle time.Duration
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// publicServer is the http.Server of the public listener with its limits.
func (s *Server) publicServer() *http.Server {
	t := s.cfg.HTTPTimeouts
	return &http.Server{
		Handler: s.echo, ReadHeaderTimeout: orDefault(t.ReadHeader, ReadHeaderTimeout),
		ReadTimeout: orDefault(t.Read, ReadTimeout), WriteTimeout: orDefault(t.Write, WriteTimeout),
		IdleTimeout: orDefault(t.Idle, IdleTimeout), MaxHeaderBytes: MaxHeaderBytes,
	}
}

// handlePublicReady is the public GET /readyz: ready or not, nothing about
// why (backend names and errors are for the admin listener).
func (s *Server) handlePublicReady(c echo.Context) error {
	ready, _ := s.readiness(c.Request().Context())
	status := http.StatusOK
	if !ready {
		status = http.StatusServiceUnavailable
	}
	return c.JSON(status, map[string]bool{"ready": ready})
}

// readiness pings the store and the bus (if it can be pinged).
func (s *Server) readiness(ctx context.Context) (bool, map[string]string) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	checks := map[string]string{"store": "ok"}
	ready := true
	if err := s.store.Ping(ctx); err != nil {
		checks["store"], ready = err.Error(), false
	}
	if p, ok := s.bus.(Pinger); ok {
		checks["bus"] = "ok"
		if err := p.Ping(ctx); err != nil {
			checks["bus"], ready = err.Error(), false
		}
	}
	return ready, checks
}

// AdminHandler is the admin listener's handler (Config.AdminAddr):
// POST /log/rotate-key (`venue log rotate-key --admin-url`), /metrics,
// the detailed /readyz (backend, each check's error), the Go runtime's
// runtime/metrics as JSON at /debug/runtime-metrics (allocations, GC,
// scheduling latency: what `venue bench` reads per phase) and, with
// Config.Pprof, /debug/pprof. Never expose it publicly: pprof's cmdline
// shows every flag (SECURITY.md "Deployment").
func (s *Server) AdminHandler() http.Handler {
	e := httpapi.New(s.cfg.TrustedProxies, s.log)
	e.Any("/metrics", echo.WrapHandler(promhttp.InstrumentMetricHandler(s.cfg.Metrics, promhttp.HandlerFor(s.cfg.Metrics, promhttp.HandlerOpts{}))))
	e.Any(rtmetrics.Path, echo.WrapHandler(rtmetrics.Handler()))
	e.Any("/readyz", func(c echo.Context) error {
		ready, checks := s.readiness(c.Request().Context())
		status := http.StatusOK
		if !ready {
			status = http.StatusServiceUnavailable
		}
		body := map[string]any{"ready": ready, "backend": s.cfg.Backend, "checks": checks}
		for name, info := range s.cfg.ReadyInfo {
			body[name] = info()
		}
		return c.JSON(status, body)
	})
	if s.cfg.Pprof {
		e.Any("/debug/pprof/*", echo.WrapHandler(http.DefaultServeMux))
	}
	e.POST("/log/rotate-key", s.handleRotateLogKey)
	return e
}

// Sampling of the block and mutex profiles while Config.Pprof is on: one
// contention event in mutexProfileFraction, blocking events of about
// blockProfileRate ns and longer. Off (the runtime's default) otherwise:
// they cost time on every contended lock and channel wait.
const (
	mutexProfileFraction = 100
	blockProfileRate     = 10_000
)

// profileContention turns the block and mutex profiles on for a server
// with Config.Pprof (they are process-wide settings of the runtime).
func profileContention() {
	runtime.SetMutexProfileFraction(mutexProfileFraction)
	runtime.SetBlockProfileRate(blockProfileRate)
}

// serveAdmin listens on cfg.AdminAddr (if set) until ctx is done.
func (s *Server) serveAdmin(ctx context.Context) error {
	if s.cfg.AdminAddr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", s.cfg.AdminAddr)
	if err != nil {
		return fmt.Errorf("venue: admin listener on %s: %w", s.cfg.AdminAddr, err)
	}
	s.adminAddr = ln.Addr().String()
	if s.cfg.Pprof {
		profileContention()
	}
	srv := &http.Server{Handler: s.AdminHandler(), ReadHeaderTimeout: ReadHeaderTimeout, MaxHeaderBytes: MaxHeaderBytes}
	s.bg.Add(2)
	go func() {
		defer s.bg.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("admin listener", "err", err)
		}
	}()
	go func() {
		defer s.bg.Done()
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	s.log.Info("admin listener (metrics, readiness, pprof)", "addr", s.adminAddr)
	return nil
}

// AdminAddr is the admin listener's bound address once serving ("" if none).
func (s *Server) AdminAddr() string { return s.adminAddr }
