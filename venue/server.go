// Package venue is the wiring of a node (ARCHITECTURE.md "Packages",
// "The rule of the house"): the one router every package mounts its routes
// on, authentication, the socket handlers (authenticate, caps, upgrade,
// hand frames to a lobby or room session over an internal/wsconn
// connection), and the construction and lifecycle of hub, directory,
// lobby, briefs, delegation, deliveries, handshake and the arena's pieces
// on the backends of Config. The rules live in the packages named after
// them; this package only carries them over HTTP.
package venue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/labstack/echo/v4"
	"golang.org/x/time/rate"

	"github.com/venuehq/venue/admission"
	"github.com/venuehq/venue/arena"
	"github.com/venuehq/venue/briefs"
	"github.com/venuehq/venue/bus"
	"github.com/venuehq/venue/clock"
	"github.com/venuehq/venue/delegation"
	"github.com/venuehq/venue/deliveries"
	"github.com/venuehq/venue/directory"
	"github.com/venuehq/venue/events"
	"github.com/venuehq/venue/handshake"
	hsmemory "github.com/venuehq/venue/handshake/memory"
	"github.com/venuehq/venue/hub"
	"github.com/venuehq/venue/idempotency"
	"github.com/venuehq/venue/internal/admin"
	"github.com/venuehq/venue/internal/httpapi"
	"github.com/venuehq/venue/internal/mine"
	"github.com/venuehq/venue/internal/nosocket"
	"github.com/venuehq/venue/internal/promreg"
	"github.com/venuehq/venue/internal/wsconn"
	"github.com/venuehq/venue/keyring"
	"github.com/venuehq/venue/lobby"
	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/receipt"
	"github.com/venuehq/venue/receiptlog"
	"github.com/venuehq/venue/receiptlog/logapi"
	"github.com/venuehq/venue/settlement"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/store/memory"
	"github.com/venuehq/venue/timers"
	"github.com/venuehq/venue/watchers"
	"github.com/venuehq/venue/webhooks"
	"github.com/venuehq/venue/wire"
)

// Version of the venue, reported by /v1/info.
const Version = "0.1.0"

// MaxBodyBytes is the REST body limit (PROTOCOL.md "Limits and close codes"): over it, 413.
const MaxBodyBytes = httpapi.MaxBodyBytes

// Config is everything a Server needs; cmd fills it from flags and
// environment. Zero values take the embedded default.
type Config struct {
	// Addr is HOST:PORT to listen on (default 127.0.0.1:8080).
	Addr string
	// PublicURL is how agents reach this venue (for the socket URLs of
	// negotiation_accepted); default http://Addr.
	PublicURL string
	// Audience is the grant audience `aud` (default "venue").
	Audience string
	// Store, Handshake, Bus and Timers default to memory, in-process bus
	// and heap; package backends opens them all (the handshake's store on
	// the same Postgres schema as Store).
	Store     store.Store
	Handshake handshake.Store
	// Idempotency keeps the answers of requests sent with an
	// Idempotency-Key (default in memory; on Postgres idempotency/idempg on
	// the same schema, shared by the nodes).
	Idempotency idempotency.Store
	// Briefs keeps sealed briefs and their quotes (default in memory; on
	// Postgres briefs/briefspg on the same schema).
	Briefs briefs.Store
	// Events is the per-agent event log (default in memory; on Postgres
	// events/eventspg on the same schema).
	Events events.Store
	Bus    bus.Bus
	Timers timers.Timers
	// Webhooks keeps the agents' webhooks and their queued deliveries
	// (default in memory over Events; on Postgres webhooks/webhookspg on
	// the same schema, shared by the nodes).
	Webhooks webhooks.Store
	// WebhooksAllowPrivate lets webhooks use http and private, loopback
	// and link-local addresses (`venue serve --webhooks-allow-private`).
	WebhooksAllowPrivate bool
	// Clock defaults to the wall clock; tests pass a clock.Fake.
	Clock clock.Clock
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// RegisterPerMinute is the registration rate per client address
	// (default 10, bursts of 10).
	RegisterPerMinute float64
	// Limits are the per-connection limits (PROTOCOL.md "Limits and close codes" defaults).
	Limits Limits
	// RegisterLimiter, if set, counts registrations per client address for
	// every node together (Redis); the node's own limit still applies when
	// it fails.
	RegisterLimiter SharedLimiter
	// FrameLimiter, if set, is the frame budget of an agent in a negotiation
	// counted by every node together (Redis), on top of this node's own.
	FrameLimiter SharedLimiter
	// Caps are the connection caps (see Caps for the defaults).
	Caps Caps
	// MaxActiveGrants caps the active grants an agent holds, counted in
	// the store across every node (409 too_many_grants over it;
	// DELEGATION.md "Uploading, listing, revoking"): 0 is
	// delegation.DefaultMaxActiveGrants, negative no cap.
	MaxActiveGrants int
	// LobbyQuotas bound the pending requests to a bouncer (zero fields:
	// lobby.DefaultPendingPerPair, lobby.DefaultPendingPerBouncer).
	LobbyQuotas LobbyQuotas
	// TrustedProxies are the reverse proxies whose X-Forwarded-For names
	// the client address; none: the TCP peer is the client.
	TrustedProxies []*net.IPNet
	// KeyFile, if set, holds the venue's Ed25519 receipt key (PKCS#8 PEM),
	// created on first start; otherwise the key is kept in the store.
	KeyFile string
	// KeySealer, if set, seals the receipt private key where it is stored
	// (the store or KeyFile); without it the venue warns at start.
	KeySealer *receipt.Sealer
	// AdminAddr is HOST:PORT of the admin listener: /metrics, the detailed
	// /readyz and, with Pprof, /debug/pprof ("" none; cmd defaults it to
	// loopback). The public listener serves none of them.
	AdminAddr string
	// HTTPTimeouts shorten the public listener's timeouts (tests); zero
	// takes httpapi.ReadHeaderTimeout, ReadTimeout, WriteTimeout and IdleTimeout.
	HTTPTimeouts HTTPTimeouts
	// Pprof mounts net/http/pprof at /debug/pprof on the admin listener.
	Pprof bool
	// Backend names the backends for the first log line and /readyz.
	Backend string
	// HouseAgents runs the house sparring partners on this node (`venue
	// serve` turns them on unless --no-house-agents).
	HouseAgents bool
	// ArenaRetention is how long arena negotiations are kept: the purge
	// loop deletes those created longer ago (when over), with their
	// transcripts (default DefaultArenaRetention; `venue serve
	// --arena-retention`).
	ArenaRetention time.Duration
	// HandshakeRetention is how long the handshake keeps sign-ins, the
	// audit log, direct messages, decided requests and answered tasks: the
	// purge loop deletes what is older (PIRCAN.md "Retention"; `venue
	// serve --retention-*`). nil: handshake.DefaultRetention; a zero field
	// keeps that kind for ever; a field under a day is refused by New.
	HandshakeRetention *handshake.Retention
	// ObserveDelay runs every public read of a live non-arena negotiation
	// this far behind the parties (PROTOCOL.md "Observe delay"; `venue
	// serve --observe-delay`); 0: none.
	ObserveDelay time.Duration
	// Watchers counts observer sockets per negotiation (nil: this node's
	// alone; `venue serve` with Redis: every node's, watchers.Shared).
	Watchers watchers.Counter
	// IRCBridge says a PIRCAN bridge runs with this node (`venue serve`
	// with PIRCAN_ADDR): the owner portal hands out sign-in codes and the
	// pages link to it only then.
	IRCBridge bool
	// Settler carries out live deals' settlement instructions and is told
	// of each change (default: settlement.Recorder, which moves no money).
	Settler settlement.Settler
	// Deliveries keeps the deals' deliveries and settlement statuses
	// (default in memory; on Postgres deliveries/deliverypg on the same
	// schema).
	Deliveries deliveries.Store
	// DeliveryApprovalWindow is how long a delivery may stay unanswered
	// before the venue approves it (default
	// deliveries.DefaultApprovalWindow, 14 days).
	DeliveryApprovalWindow time.Duration
	// Accounts binds IRC accounts to agents (the PIRCAN bridge's); nil: no owners.
	Accounts handshake.Accounts
	// Metrics is where the node registers its series (the sockets', the
	// hub's; cmd gives the PIRCAN bridge the same) and what the admin
	// /metrics serves. Default: a registry of the node's own, with the Go
	// runtime and process collectors (promreg.NewRegistry); two nodes in
	// one process then count apart.
	Metrics Registry
	// ReceiptLog keeps the public receipt log (PROTOCOL.md "The receipt
	// log"), shared by every node: pglog on Postgres; nil keeps it in
	// memory beside the store (the embedded default).
	ReceiptLog receiptlog.Store
	// LogOrigin names the receipt log (default: the public URL's host and
	// path, then "/log").
	LogOrigin string
	// ReadyInfo adds state to the admin /readyz body, by name, without changing
	// readiness (the PIRCAN bridge's status: connected, identified, joined).
	ReadyInfo map[string]func() any
}

// Server is one venue node.
type Server struct {
	cfg    Config
	store  store.Store
	events events.Store
	// recorder writes the event log (PROTOCOL.md "Without a socket").
	recorder *nosocket.Recorder
	idem     idempotency.Store
	hooks    *webhooks.Node
	bus      bus.Bus
	timers   timers.Timers
	clock    clock.Clock
	log      *slog.Logger
	hub      *hub.Hub
	dir      *directory.Service
	lobby    *lobby.Service
	briefs   *briefs.Service
	echo     *echo.Echo
	upgrader websocket.Upgrader
	// keys signs receipts (DELEGATION.md "Receipts"); loaded by Start.
	keys *keyring.Ring
	// rlog is the node's view of the receipt log, opened by Start.
	rlog logapi.API

	sockets wsconn.Set        // open sockets, their handlers still running (their frames' store steps)
	admits  admission.Sockets // held sockets under Config.Caps, shared frame budgets

	arena    *arena.Node // feed, settler, routes, house agents
	watchers watchers.Counter
	presence *lobby.Presence // this node's lobby sockets (PROTOCOL.md "Presence")
	metrics  *metrics
	bgCtx    context.Context

	httpSrv   *http.Server
	adminAddr string
	cancel    context.CancelFunc
	bg        sync.WaitGroup

	// handshake is the brokered handshake (venue/handshake.go).
	handshake *handshake.Service
	// delegation is grants, revocations and escalation decisions.
	delegation *delegation.Service
	// deliveries is the deal after the deal (venue/deliveries.go).
	deliveries *deliveries.Service
}

// setDefaults fills what cfg leaves unset: the embedded default's
// backends (setBackendDefaults), the real clock, the default logger and
// registry, and the documented limits (README "venue serve" flags).
func (cfg *Config) setDefaults() {
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:8080"
	}
	if cfg.Audience == "" {
		cfg.Audience = "venue"
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Metrics == nil {
		cfg.Metrics = promreg.NewRegistry()
	}
	cfg.setBackendDefaults()
	cfg.Limits = cfg.Limits.withDefaults()
	cfg.Caps = cfg.Caps.WithDefaults()
	if cfg.RegisterPerMinute == 0 {
		cfg.RegisterPerMinute = 10
	}
	if cfg.ArenaRetention <= 0 {
		cfg.ArenaRetention = DefaultArenaRetention
	}
	cfg.HandshakeRetention = retentionOr(cfg.HandshakeRetention)
}

// setBackendDefaults gives every store, the bus and the timers cfg leaves
// unset the embedded default's (in memory, in process; the timers on
// cfg.Clock, which setDefaults set first) and names it in Backend.
func (cfg *Config) setBackendDefaults() {
	if cfg.Store == nil {
		cfg.Store = memory.New()
	}
	if cfg.Handshake == nil {
		cfg.Handshake = hsmemory.New()
	}
	if cfg.Briefs == nil {
		cfg.Briefs = briefs.NewMemory()
	}
	if cfg.Events == nil {
		cfg.Events = events.NewMemory()
	}
	if cfg.Webhooks == nil {
		cfg.Webhooks = webhooks.NewMemory(cfg.Events)
	}
	if cfg.Idempotency == nil {
		cfg.Idempotency = idempotency.NewMemory()
	}
	if cfg.Deliveries == nil {
		cfg.Deliveries = deliveries.NewMemory()
	}
	if cfg.Bus == nil {
		cfg.Bus = bus.NewLocal()
	}
	if cfg.Timers == nil {
		cfg.Timers = timers.NewLocal(cfg.Clock)
	}
	if cfg.Backend == "" {
		cfg.Backend = "embedded default (in-memory store, in-process timers and bus)"
	}
}

// New builds a server from cfg; it does not listen yet (see Serve). It
// fails when cfg cannot make a node (the handshake service refuses it).
func New(cfg Config) (*Server, error) {
	cfg.setDefaults()
	if err := cfg.HandshakeRetention.Validate(); err != nil {
		return nil, err
	}
	s := &Server{
		cfg: cfg, store: cfg.Store, idem: cfg.Idempotency, bus: cfg.Bus, timers: cfg.Timers, clock: cfg.Clock, log: cfg.Logger,
		metrics: newMetrics(cfg.Metrics),
		// A read buffer of its own (readBufferBytes) and write buffers from
		// a pool only while a frame is written (PROTOCOL.md "Limits and
		// close codes", memory per socket).
		upgrader: websocket.Upgrader{ReadBufferSize: readBufferBytes, WriteBufferPool: &sync.Pool{}, CheckOrigin: func(*http.Request) bool { return true }},
	}
	// Every append on the node wakes its webhooks (PROTOCOL.md "Webhooks").
	s.hooks = webhooks.NewNode(cfg.Webhooks, webhooks.Guard{AllowPrivate: cfg.WebhooksAllowPrivate}, cfg.Clock, cfg.Logger)
	s.events = s.hooks.Tap(cfg.Events)
	s.initArena()
	s.watchers = cfg.Watchers
	if s.watchers == nil {
		s.watchers = watchers.NewLocal()
	}
	s.presence = lobby.NewPresence(s.store, s.clock, s.log)
	s.recorder = &nosocket.Recorder{Events: s.events, Now: s.clock.Now, Wake: s.hooks.Wake, Log: s.log}
	s.hub = hub.New(hub.Config{Store: s.store, Bus: s.bus, Timers: s.timers, Clock: s.clock, Log: s.log, Committed: s.committed, Pushed: s.recorder.Pushed, Metrics: cfg.Metrics})
	s.recorder.Rooms = s.hub
	s.recorder.InTx(s.store, cfg.Events)
	s.dir = &directory.Service{Store: s.store, Now: s.clock.Now}
	s.lobby = &lobby.Service{
		Store: s.store, Rooms: s.hub, Now: s.clock.Now, NewID: directory.NewID,
		SocketURL:      func(id string) string { return s.wsURL("/v1/negotiations/" + id + "/ws") },
		ObserveURL:     func(id string) string { return s.wsURL("/v1/negotiations/" + id + "/ws/observe") },
		PendingPerPair: cfg.LobbyQuotas.PendingPerPair, PendingPerBouncer: cfg.LobbyQuotas.PendingPerBouncer,
	}
	s.briefs = &briefs.Service{Store: cfg.Briefs, Agents: s.store, Rooms: s.hub, Timers: s.timers, Clock: s.clock, Now: s.clock.Now,
		NewID: directory.NewID, SocketURL: s.lobby.SocketURL, ObserveURL: s.lobby.ObserveURL, Log: s.log}
	s.lobby.Briefs = s.briefs
	s.hub.HandleWakes(briefs.WakePrefix, s.briefs.Fire)
	s.keys = &keyring.Ring{File: cfg.KeyFile, Store: s.store, Sealer: cfg.KeySealer, OnChange: s.hub.SetReceipts}
	s.delegation = &delegation.Service{
		Store: s.store, Agents: s.dir, Rooms: s.hub, Audience: cfg.Audience, Log: s.log,
		OnKeyReplaced: s.announceKeyReplaced, MaxActiveGrants: activeGrantsCap(cfg.MaxActiveGrants),
	}
	s.admits.Caps = cfg.Caps
	s.admits.Budgets = admission.Budgets{Rate: rate.Limit(cfg.Limits.FramesPerSecond), Burst: cfg.Limits.FrameBurst}
	s.newDeliveries()
	if err := s.newHandshake(); err != nil {
		return nil, fmt.Errorf("venue: %w", err)
	}
	s.echo = s.routes()
	return s, nil
}

// Handler returns the server's http.Handler.
func (s *Server) Handler() http.Handler { return s.echo }

func (s *Server) wsURL(path string) string {
	base := s.cfg.PublicURL
	if base == "" {
		base = "http://" + s.cfg.Addr
	}
	base = strings.TrimRight(base, "/")
	switch {
	case strings.HasPrefix(base, "https://"):
		base = "wss://" + strings.TrimPrefix(base, "https://")
	case strings.HasPrefix(base, "http://"):
		base = "ws://" + strings.TrimPrefix(base, "http://")
	}
	return base + path
}

func (s *Server) routes() *echo.Echo {
	e := httpapi.New(s.cfg.TrustedProxies, s.log)
	e.Use(httpapi.LimitQuery(httpapi.MaxQueryBytes), httpapi.LimitBody, httpapi.AccessLog(s.log))

	e.GET("/healthz", func(c echo.Context) error { return c.JSON(http.StatusOK, map[string]string{"status": "ok"}) })
	e.GET("/readyz", s.handlePublicReady)
	e.GET("/v1/info", s.handleInfo)
	e.GET("/openapi.json", s.handleOpenAPI)

	regLimit := httpapi.RateLimit(rate.Limit(s.cfg.RegisterPerMinute/60), int(s.cfg.RegisterPerMinute), func() error {
		return wire.Errorf(wire.CodeRateLimited, "too many registrations from this address; try again in a minute")
	})
	e.POST("/v1/register", s.handleRegister, httpapi.SharedLimit(s.cfg.RegisterLimiter, regLimit, s.log,
		"too many registrations from this address; try again later"))

	auth := s.requireAgent
	// Authenticated writes take an Idempotency-Key (idempotent); the
	// api_key rotation does not (its answer is a secret the venue keeps
	// only a hash of).
	keyed := []echo.MiddlewareFunc{auth, idempotency.Middleware(s.idem, s.clock.Now, s.log)}
	e.GET("/v1/agents/me", s.handleMe, auth)
	e.PUT("/v1/agents/me/profile", s.handleSetProfile, keyed...)
	e.PUT("/v1/agents/me/principal-key", s.handleSetPrincipalKey, keyed...)
	e.POST("/v1/agents/me/api-key", s.handleRotateKey, auth)
	e.POST("/v1/revocations", s.handleRevocation, principalLimit())
	e.GET("/v1/agents/:id/profile", s.handleProfile)
	e.GET("/v1/agents/:id/ws", s.handleLobby)
	e.POST("/v1/grants", s.handleUploadGrant, keyed...)
	e.GET("/v1/grants", s.handleListGrants, auth)
	e.DELETE("/v1/grants/:jti", s.handleRevokeGrant, keyed...)
	e.POST("/v1/escalations/:id/decision", s.handleDecision, principalLimit())
	e.GET("/.well-known/jwks.json", s.handleJWKS)
	e.GET("/v1/negotiations/:id/receipt", s.handleReceipt)
	lists := mine.Lists{Store: s.store}
	e.GET("/v1/negotiations", lists.Negotiations, auth)
	e.GET("/v1/offers", lists.Offers, auth)
	e.GET("/v1/negotiations/:id", s.handleNegotiation)
	e.GET("/v1/negotiations/:id/transcript", s.handleTranscript)
	e.GET("/v1/negotiations/:id/ws", s.handleRoom(false))
	twins := &nosocket.Twins{Lobby: s.lobby, Rooms: s.hub, Negotiation: s.store.Negotiation, MaxFrameBytes: MaxFrameBytes,
		FramesPerSecond: s.cfg.Limits.FramesPerSecond, FrameBurst: s.cfg.Limits.FrameBurst, Shared: s.sharedFrame, Count: s.countFrame, Log: s.log}
	twins.Init()
	e.POST("/v1/negotiations/:id/frames", twins.RoomFrame, keyed...)
	e.POST("/v1/agents/me/lobby", twins.LobbyFrame, keyed...)
	e.GET("/v1/events", nosocket.Events(s.events), auth)
	e.GET("/v1/briefs/:id", func(c echo.Context) error { return s.briefs.Get(c) }, auth)
	e.GET("/v1/negotiations/:id/ws/observe", s.handleRoom(true))
	s.mountArena(e)
	s.mountDeliveries(e, keyed...)
	s.mountHandshake(e)
	s.rlog.Mount(e)
	s.hooks.Mount(e, auth, keyed...)
	if err := s.mountPages(e); err != nil {
		panic(err) // the embedded documents render: a test renders them
	}
	return e
}

// Serve listens on cfg.Addr and runs until ctx is done, then shuts down
// gracefully: no new connections, every socket gets a close frame (1001),
// timers stop; it returns what Shutdown returns. ready, if not nil,
// receives the bound address.
func (s *Server) Serve(ctx context.Context, ready chan<- string) error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("venue: listen on %s: %w", s.cfg.Addr, err)
	}
	return s.ServeListener(ctx, ln, ready)
}

// ServeListener is Serve on an existing listener.
func (s *Server) ServeListener(ctx context.Context, ln net.Listener, ready chan<- string) error {
	if err := s.Start(ctx); err != nil {
		ln.Close()
		return err
	}
	s.httpSrv = httpapi.Server(s.echo, s.cfg.HTTPTimeouts)
	ln = admission.NewListener(ln, s.cfg.Caps.Connections)
	errc := make(chan error, 1)
	go func() { errc <- s.httpSrv.Serve(ln) }()
	s.startHouse(s.bgCtx, ln.Addr().String())
	if ready != nil {
		ready <- ln.Addr().String()
	}
	select {
	case <-ctx.Done():
	case err := <-errc:
		s.Stop()
		return fmt.Errorf("venue: serve: %w", err)
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return s.Shutdown(shutdownCtx)
}

// Start re-arms the clocks of every running negotiation from the store and
// starts the timer loop. Serve calls it; tests that use Handler directly
// call it themselves.
func (s *Server) Start(ctx context.Context) error {
	if err := s.loadKey(ctx); err != nil {
		return err
	}
	origin := s.cfg.LogOrigin
	if origin == "" {
		origin = receiptlog.DefaultOrigin(s.httpBase())
	}
	if err := s.rlog.Open(ctx, receiptlog.Config{
		Store: s.cfg.ReceiptLog, Origin: origin, Sealer: s.cfg.KeySealer, Clock: s.clock, Logger: s.log,
		Receipt: func(st *negotiation.State) (string, error) { return s.keys.Signer().Receipt(st) },
		// Named by neither --log-origin nor --public-url, the origin is the
		// listen address's: a node on another port keeps the log's own name.
		AdoptOrigin: s.cfg.LogOrigin == "" && s.cfg.PublicURL == "",
	}, s.store); err != nil {
		if oe := (*receiptlog.OriginError)(nil); errors.As(err, &oe) {
			return fmt.Errorf("venue: receipt log: %w; every node of a venue names the log alike: start this node with --log-origin %s (or the same --public-url as the others)", err, oe.Log)
		}
		return fmt.Errorf("venue: receipt log: %w", err)
	}
	n, err := s.hub.Rearm(ctx)
	if err != nil {
		return fmt.Errorf("venue: re-arm clocks from the store: %w", err)
	}
	if n > 0 {
		s.log.Info("clocks re-armed from the store", "negotiations", n)
	}
	bg, cancel := context.WithCancel(context.Background())
	unwatch := s.watchKeys()
	s.cancel, s.bgCtx = func() { unwatch(); cancel() }, bg
	s.bg.Go(func() { s.presence.Run(bg) })
	if s.adminAddr, err = admin.Serve(bg, s.adminConfig(), &s.bg); err != nil {
		s.cancel()
		return err
	}
	if r, ok := s.watchers.(interface{ Run(context.Context) error }); ok {
		s.bg.Go(func() { _ = r.Run(bg) })
	}
	s.bg.Add(6)
	go func() {
		defer s.bg.Done()
		s.hooks.Run(bg)
	}()
	go func() {
		defer s.bg.Done()
		_ = s.hub.Run(bg)
	}()
	go func() {
		defer s.bg.Done()
		_ = s.briefs.Run(bg)
	}()
	go func() {
		defer s.bg.Done()
		s.runDeliveries(bg)
	}()
	go func() {
		defer s.bg.Done()
		_ = s.rlog.Log.Run(bg)
	}()
	go func() {
		defer s.bg.Done()
		s.purgeLoop(bg)
	}()
	return nil
}

// Shutdown stops accepting, closes every socket with 1001 and stops the
// timers. In-flight frames finish their store step first. It returns what
// went wrong: the listener's shutdown error, or ctx's error when socket
// handlers were still running at its deadline (the loops stop anyway).
func (s *Server) Shutdown(ctx context.Context) error {
	var errs []error
	if s.httpSrv != nil {
		s.httpSrv.SetKeepAlivesEnabled(false)
		ln := s.httpSrv
		go func() { _ = ln.Shutdown(ctx) }()
	}
	s.arena.StopHouse()
	s.sockets.CloseAll()
	if s.httpSrv != nil {
		if err := s.httpSrv.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("venue: shutdown: %w", err))
		}
	}
	// Hijacked sockets are not waited for by http.Server.Shutdown: wait for
	// their handlers, so a frame in flight publishes and arms its clock
	// before the backends are closed.
	if err := s.sockets.Wait(ctx); err != nil {
		errs = append(errs, fmt.Errorf("venue: shutdown: socket handlers still running at the deadline: %w", err))
	}
	s.Stop()
	return errors.Join(errs...)
}

// Stop ends the background loops (timers). It does not close the store.
func (s *Server) Stop() {
	if s.cancel != nil {
		s.cancel()
	}
	s.bg.Wait()
	// The arena feed and the settler hear of every step committed so far
	// (they run after the sender's reply, off its path).
	ctx, cancel := context.WithTimeout(context.Background(), committedWait)
	defer cancel()
	if err := s.hub.WaitCommitted(ctx); err != nil {
		s.log.Warn("stop: the settler or the arena feed still busy at the deadline", "err", err)
	}
	if err := s.deliveries.Wait(ctx); err != nil {
		s.log.Warn("stop: the settler still busy with settlement changes at the deadline", "err", err)
	}
	s.arena.Feed.Close()
}

// committedWait bounds how long Stop waits for the settler and the arena
// feed to hear of the steps already committed.
const committedWait = 10 * time.Second

func (s *Server) handleInfo(c echo.Context) error {
	info := map[string]any{
		"name": "venue", "version": Version, "aud": s.cfg.Audience,
		"jwks_uri": strings.TrimRight(s.httpBase(), "/") + "/.well-known/jwks.json",
		"backend":  s.cfg.Backend,
		"limits": map[string]any{
			"frame_bytes": MaxFrameBytes, "body_bytes": MaxBodyBytes,
			"frames_per_second": s.cfg.Limits.FramesPerSecond, "frame_burst": s.cfg.Limits.FrameBurst,
			"send_queue_frames": s.cfg.Limits.SendQueue, "ping_interval_seconds": int(PingInterval.Seconds()),
			"pong_wait_seconds": int(s.cfg.Limits.PongWait.Seconds()), "content_chars": negotiation.MaxContentLen,
			"id_chars": negotiation.MaxIDLen, "terms_bytes": negotiation.MaxTermsBytes, "terms_depth": negotiation.MaxTermsDepth,
			"ttl_seconds_min": negotiation.MinTTLSeconds, "ttl_seconds_max": negotiation.MaxTTLSeconds,
			"turn_seconds": int(negotiation.TurnTime.Seconds()), "deadline_seconds": int(negotiation.Deadline.Seconds()),
			"escalation_seconds": int(negotiation.EscalationLapse.Seconds()), "request_lapse_seconds": int(negotiation.RequestLapse.Seconds()),
			"register_per_minute": s.cfg.RegisterPerMinute,
		},
	}
	maps.Copy(info, s.rlog.Info(s.httpBase()))
	return c.JSON(http.StatusOK, info)
}

// ReceiptLog is the node's view of the receipt log (nil before Start).
func (s *Server) ReceiptLog() *receiptlog.Log { return s.rlog.Log }

func (s *Server) httpBase() string {
	if s.cfg.PublicURL != "" {
		return s.cfg.PublicURL
	}
	return "http://" + s.cfg.Addr
}

// activeGrantsCap is Config.MaxActiveGrants as delegation.Service takes it
// (0 or less: no cap).
func activeGrantsCap(n int) int {
	if n == 0 {
		return delegation.DefaultMaxActiveGrants
	}
	return max(n, 0)
}
