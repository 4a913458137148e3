// Package admin is a venue node's admin listener (SECURITY.md
// "Deployment"): /metrics, the detailed /readyz, the Go runtime's
// runtime/metrics as JSON and, when asked, net/http/pprof; and the
// readiness check the public /readyz answers without its details. Never
// expose it publicly: pprof's cmdline shows every flag.
package admin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	_ "net/http/pprof" // mounted only with Config.Pprof
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/venuehq/venue/internal/httpapi"
	"github.com/venuehq/venue/internal/rtmetrics"
)

// Registry is where a node registers its series and what /metrics serves
// (Prometheus text format): a *prometheus.Registry.
type Registry interface {
	prometheus.Registerer
	prometheus.Gatherer
}

// Pinger is an optional ability of a bus (or any backend): a round trip
// that says it is reachable, checked by /readyz.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Readiness pings the store and the bus (if it is a Pinger) within two
// seconds: ready when both answer, and each check's "ok" or error.
func Readiness(ctx context.Context, store Pinger, bus any) (bool, map[string]string) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	checks := map[string]string{"store": "ok"}
	ready := true
	if err := store.Ping(ctx); err != nil {
		checks["store"], ready = err.Error(), false
	}
	if p, ok := bus.(Pinger); ok {
		checks["bus"] = "ok"
		if err := p.Ping(ctx); err != nil {
			checks["bus"], ready = err.Error(), false
		}
	}
	return ready, checks
}

// Config is what the admin listener serves.
type Config struct {
	// Addr is HOST:PORT to listen on ("": no listener).
	Addr    string
	Metrics Registry
	// Ready is the readiness check (Readiness over the node's backends).
	Ready func(ctx context.Context) (bool, map[string]string)
	// Backend names the backends in the /readyz body.
	Backend string
	// ReadyInfo adds state to the /readyz body, by name, without changing
	// readiness.
	ReadyInfo map[string]func() any
	// Pprof mounts net/http/pprof at /debug/pprof and samples the block
	// and mutex profiles.
	Pprof          bool
	TrustedProxies []*net.IPNet
	Log            *slog.Logger
	// Routes are further routes of the node by "METHOD /path" (the
	// receipt log's POST /log/rotate-key).
	Routes map[string]http.Handler
}

// Handler serves /metrics, the detailed /readyz (backend, each check's
// error, ReadyInfo), the runtime/metrics as JSON at rtmetrics.Path
// (allocations, GC, scheduling latency: what `venue bench` reads per
// phase) and, with cfg.Pprof, /debug/pprof.
func Handler(cfg Config) http.Handler {
	e := httpapi.New(cfg.TrustedProxies, cfg.Log)
	e.Any("/metrics", echo.WrapHandler(promhttp.InstrumentMetricHandler(cfg.Metrics, promhttp.HandlerFor(cfg.Metrics, promhttp.HandlerOpts{}))))
	e.Any(rtmetrics.Path, echo.WrapHandler(rtmetrics.Handler()))
	e.Any(rtmetrics.GCPath, echo.WrapHandler(rtmetrics.GCHandler()))
	e.Any("/readyz", func(c echo.Context) error {
		ready, checks := cfg.Ready(c.Request().Context())
		status := http.StatusOK
		if !ready {
			status = http.StatusServiceUnavailable
		}
		body := map[string]any{"ready": ready, "backend": cfg.Backend, "checks": checks}
		for name, info := range cfg.ReadyInfo {
			body[name] = info()
		}
		return c.JSON(status, body)
	})
	if cfg.Pprof {
		e.Any("/debug/pprof/*", echo.WrapHandler(http.DefaultServeMux))
	}
	for route, h := range cfg.Routes {
		method, path, _ := strings.Cut(route, " ")
		e.Add(method, path, echo.WrapHandler(h))
	}
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

// Serve listens on cfg.Addr (nothing when it is "") and serves Handler
// until ctx is done; wg counts its goroutines. It returns the bound
// address.
func Serve(ctx context.Context, cfg Config, wg *sync.WaitGroup) (string, error) {
	if cfg.Addr == "" {
		return "", nil
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return "", fmt.Errorf("venue: admin listener on %s: %w", cfg.Addr, err)
	}
	if cfg.Pprof { // process-wide settings of the runtime
		runtime.SetMutexProfileFraction(mutexProfileFraction)
		runtime.SetBlockProfileRate(blockProfileRate)
	}
	srv := &http.Server{Handler: Handler(cfg), ReadHeaderTimeout: httpapi.ReadHeaderTimeout, MaxHeaderBytes: httpapi.MaxHeaderBytes}
	wg.Add(2)
	go func() {
		defer wg.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			cfg.Log.Error("admin listener", "err", err)
		}
	}()
	go func() {
		defer wg.Done()
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	addr := ln.Addr().String()
	cfg.Log.Info("admin listener (metrics, readiness, pprof)", "addr", addr)
	return addr, nil
}
