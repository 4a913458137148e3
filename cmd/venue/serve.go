package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/url"
	"os"
	"os/signal"
	"runtime/debug"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/venuehq/venue/admission"
	"github.com/venuehq/venue/admission/redislimit"
	"github.com/venuehq/venue/backends"
	"github.com/venuehq/venue/clock"
	"github.com/venuehq/venue/delegation"
	"github.com/venuehq/venue/deliveries"
	"github.com/venuehq/venue/directory"
	"github.com/venuehq/venue/handshake"
	"github.com/venuehq/venue/internal/promreg"
	"github.com/venuehq/venue/pircan"
	pircanrun "github.com/venuehq/venue/pircan/run"
	"github.com/venuehq/venue/store/postgres"
	"github.com/venuehq/venue/venue"
	"github.com/venuehq/venue/watchers"
)

// serveOptions are the flags of `venue serve`; each has an environment
// variable that the flag overrides.
type serveOptions struct {
	addr      string
	publicURL string
	audience  string
	logLevel  string
	logFormat string
	keyFile   string
	regRate   float64
	frameRate float64
	pprof     bool
	adminAddr string
	proxies   string
	caps      venue.Caps
	maxGrants int
	noHouse   bool
	// hooksPrivate: --webhooks-allow-private.
	hooksPrivate bool
	arenaKeep    time.Duration
	keep         handshake.Retention
	approveIn    time.Duration
	delay        int // --observe-delay, seconds
	// One venue clock (ARCHITECTURE.md "One venue clock"): the bound on
	// this node's own clock offset, and a test-only offset of it.
	clockSkewMax    time.Duration
	testClockOffset time.Duration
	database        string
	redis           string
	redisPfx        string
	logOrigin       string
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func serveCmd() *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the venue server (the default command)",
		Long: `Run the venue server.

With nothing configured it runs on the embedded default: an in-memory store and
in-process timers and fan-out (nothing survives a restart). It says so in its
first log line. SIGINT or SIGTERM shut it down gracefully: every socket gets a
close frame (1001) and in-flight frames finish first.

VENUE_KEY_ENCRYPTION_KEY (base64 of 32 bytes), when set, seals the receipt and
receipt-log keys where they are stored; without it they are stored in the
clear, and the venue warns.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runServe(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.addr, "addr", envOr("VENUE_ADDR", "127.0.0.1:8080"), "HOST:PORT to listen on (env VENUE_ADDR)")
	f.StringVar(&o.publicURL, "public-url", envOr("VENUE_PUBLIC_URL", ""), "base URL agents use to reach this venue, for socket URLs in negotiation_accepted (env VENUE_PUBLIC_URL; default http://ADDR)")
	f.StringVar(&o.logOrigin, "log-origin", envOr("VENUE_LOG_ORIGIN", ""), "the receipt log's origin, the first line of its checkpoints (env VENUE_LOG_ORIGIN; default: the public URL's host and path, then /log)")
	f.StringVar(&o.audience, "audience", envOr("VENUE_AUDIENCE", "venue"), "the grant audience (aud) this venue accepts (env VENUE_AUDIENCE)")
	f.StringVar(&o.keyFile, "key-file", envOr("VENUE_KEY_FILE", ""), "the venue's Ed25519 receipt key (PKCS#8 PEM), created on first start if missing (env VENUE_KEY_FILE; default: kept in the store)")
	f.Float64Var(&o.regRate, "register-per-minute", 10, "registrations allowed per client address per minute (bursts of the same size)")
	f.Float64Var(&o.frameRate, "frames-per-second", venue.FramesPerSecond, "frames a socket may send per second (bursts of twice that); raise it only for load tests")
	f.StringVar(&o.database, "database-url", os.Getenv("DATABASE_URL"), "PostgreSQL URL: the store (migrations are applied on start) (env DATABASE_URL; default: in memory)")
	f.StringVar(&o.redis, "redis-url", os.Getenv("REDIS_URL"), "Redis URL: timers and fan-out across nodes (env REDIS_URL; default: in process)")
	f.StringVar(&o.redisPfx, "redis-prefix", envOr("VENUE_REDIS_PREFIX", backends.DefaultRedisPrefix), "prefix of this venue's Redis keys and channels: the same on every node of one venue, different for two venues on one Redis database (env VENUE_REDIS_PREFIX)")
	f.StringVar(&o.adminAddr, "admin-addr", envOr("VENUE_ADMIN_ADDR", "127.0.0.1:9090"), "HOST:PORT of the admin listener: /metrics, detailed /readyz, /debug/runtime-metrics, POST /debug/gc, POST /log/rotate-key, /debug/pprof with --pprof; keep it private; \"off\" for none (env VENUE_ADMIN_ADDR)")
	f.StringVar(&o.proxies, "trusted-proxies", envOr("VENUE_TRUSTED_PROXIES", ""), "CIDR,... of reverse proxies whose X-Forwarded-For names the client (env VENUE_TRUSTED_PROXIES; default none: the TCP peer is the client)")
	f.IntVar(&o.caps.Connections, "max-connections", venue.DefaultConnections, "open connections per node, checked at accept (503 over it; -1 no cap)")
	f.IntVar(&o.caps.SocketsPerAddress, "max-sockets-per-address", venue.DefaultSocketsPerAddress, "WebSockets per client address, IPv6 per /64 (429 over it; -1 no cap)")
	f.IntVar(&o.caps.LobbyPerAgent, "max-lobby-sockets", venue.DefaultLobbyPerAgent, "lobby sockets per agent (-1 no cap)")
	f.IntVar(&o.caps.PartyPerNegotiation, "max-party-sockets", venue.DefaultPartyPerNegotiation, "sockets per agent in one negotiation (-1 no cap)")
	f.IntVar(&o.caps.ObserversPerNegotiation, "max-observers", venue.DefaultObserversPerNegotiation, "observer sockets per negotiation (-1 no cap)")
	f.IntVar(&o.delay, "observe-delay", 0, "SECONDS every public read of a live non-arena negotiation runs behind its parties (PROTOCOL.md \"Observe delay\"); 0: none")
	f.IntVar(&o.maxGrants, "max-active-grants", delegation.DefaultMaxActiveGrants, "active grants (neither revoked nor expired) an agent may hold, across every node (409 too_many_grants over it; -1 no cap)")
	f.DurationVar(&o.arenaKeep, "arena-retention", venue.DefaultArenaRetention, "delete arena negotiations (with their transcripts) this long after they were created")
	d := handshake.DefaultRetention
	f.DurationVar(&o.keep.SignIns, "retention-sign-ins", d.SignIns, "delete owner portal sign-ins (codes and sessions) this long after they started; 0 keeps them (PIRCAN.md \"Retention\")")
	f.DurationVar(&o.keep.Audit, "retention-audit", d.Audit, "delete handshake audit log entries this long after they were written; 0 keeps them")
	f.DurationVar(&o.keep.Messages, "retention-messages", d.Messages, "delete direct messages this long after they were sent, read or not; 0 keeps them")
	f.DurationVar(&o.keep.Requests, "retention-requests", d.Requests, "delete contact requests this long after they were decided or expired; 0 keeps them")
	f.DurationVar(&o.keep.Tasks, "retention-tasks", d.Tasks, "delete answered tasks this long after they were answered; 0 keeps them")
	f.DurationVar(&o.approveIn, "delivery-approval-window", deliveries.DefaultApprovalWindow, "a delivery the brand leaves unanswered this long is approved by the venue (PROTOCOL.md \"Deliveries\")")
	f.BoolVar(&o.noHouse, "no-house-agents", envOr("VENUE_NO_HOUSE_AGENTS", "") != "", "do not run the house sparring partners (a bouncer and a brand that play arena negotiations) (env VENUE_NO_HOUSE_AGENTS)")
	f.BoolVar(&o.hooksPrivate, "webhooks-allow-private", envOr("VENUE_WEBHOOKS_ALLOW_PRIVATE", "") != "", "let webhooks use http and private, loopback and link-local addresses (tests, private networks) (env VENUE_WEBHOOKS_ALLOW_PRIVATE)")
	f.BoolVar(&o.pprof, "pprof", false, "serve Go's profiler at /debug/pprof on the admin listener")
	f.DurationVar(&o.clockSkewMax, "clock-skew-max", clock.DefaultMaxSkew, "how far this node's own clock may be off the venue clock (the store's) before /readyz and the logs say so; the venue clock is used either way")
	f.DurationVar(&o.testClockOffset, "test-clock-offset", 0, "tests only: run this node's own clock this far off (the chaos run's skewed node)")
	_ = f.MarkHidden("test-clock-offset")

	f.StringVar(&o.logLevel, "log-level", envOr("VENUE_LOG_LEVEL", "info"), "debug, info, warn or error (env VENUE_LOG_LEVEL)")
	f.StringVar(&o.logFormat, "log-format", envOr("VENUE_LOG_FORMAT", "text"), "text (key=value) or json (one JSON object a line), on stderr (env VENUE_LOG_FORMAT)")
	return cmd
}

func newLogger(level, format string) (*slog.Logger, error) {
	return newLoggerTo(os.Stderr, level, format)
}

// redisLogger is go-redis's internal logger as slog warnings.
type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(_ context.Context, format string, v ...any) {
	l.log.Warn("redis: " + fmt.Sprintf(format, v...))
}

// newLoggerTo is the logger of serve, writing to w.
func newLoggerTo(w io.Writer, level, format string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: l}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}

// check refuses flag values the venue cannot run with, naming the flag.
func (o serveOptions) check() error {
	if !(o.frameRate > 0) {
		return fmt.Errorf("--frames-per-second %v: must be above 0", o.frameRate)
	}
	if !(o.regRate > 0) {
		return fmt.Errorf("--register-per-minute %v: must be above 0", o.regRate)
	}
	if o.publicURL != "" {
		u, err := url.Parse(o.publicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return fmt.Errorf("--public-url %q: want an http:// or https:// base URL such as https://venue.example.com", o.publicURL)
		}
	}
	return nil
}

func runServe(ctx context.Context, o serveOptions) error {
	if err := o.check(); err != nil {
		return err
	}
	log, err := newLogger(o.logLevel, o.logFormat)
	if err != nil {
		return err
	}
	// go-redis logs through its own logger: route it into the venue's, so
	// --log-format json output stays JSON.
	redis.SetLogger(redisLogger{log})
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if os.Getenv("GOGC") == "" {
		// The venue's heap is mostly sockets and rooms that live long; the
		// garbage is per frame. Collecting at 11x the live heap instead of
		// 2x makes GC cycles (and the latency tail they cause) rare; the
		// soft memory limit below makes them frequent again before the heap
		// grows past it. GOGC and GOMEMLIMIT in the environment override.
		debug.SetGCPercent(defaultGCPercent)
		if os.Getenv("GOMEMLIMIT") == "" {
			debug.SetMemoryLimit(defaultMemoryLimit)
		}
	}
	if o.database == "" && o.redis == "" {
		log.Info("venue starting on the embedded default: in-memory store, in-process timers and bus; nothing survives a restart",
			"addr", o.addr, "version", venue.Version)
	} else {
		store, fanout := "memory", "local"
		if o.database != "" {
			store = "postgres"
		}
		if o.redis != "" {
			fanout = "redis"
		}
		log.Info("venue starting on "+store+"+"+fanout, "addr", o.addr, "version", venue.Version)
	}
	// What the runtime runs with (godebug.go: `venue serve` starts itself
	// again with serveGODEBUG unless GODEBUG names the setting).
	log.Info("go runtime", "GODEBUG", os.Getenv("GODEBUG"))
	// Every socket is a descriptor: say how many this process can hold.
	if limit, sockets := raiseOpenFiles(log, openFilesReserve); limit > 0 {
		log.Info("open files", "limit", limit, "sockets", sockets)
		if sockets < 4096 {
			log.Warn("the open-files limit holds few sockets; raise it (ulimit -n, LimitNOFILE=)", "sockets", sockets)
		}
	}
	sealer, err := sealerFromEnv()
	if err != nil {
		return err
	}
	proxies, err := admission.ParseCIDRs(o.proxies)
	if err != nil {
		return fmt.Errorf("--trusted-proxies %q: %w", o.proxies, err)
	}
	var nodeClock clock.Clock = clock.Real{}
	if o.testClockOffset != 0 {
		// Tests only (the chaos run): the node's own clock off by the
		// offset, stepped 10 minutes forward by SIGUSR1 and back by SIGUSR2.
		stepped := clock.NewStepped(clock.Real{}, o.testClockOffset)
		steps := make(chan os.Signal, 4)
		signal.Notify(steps, syscall.SIGUSR1, syscall.SIGUSR2)
		defer signal.Stop(steps)
		go func() {
			for sig := range steps {
				d := 10 * time.Minute
				if sig == syscall.SIGUSR2 {
					d = -d
				}
				stepped.Step(d)
				log.Warn("test clock stepped", "by", d.String())
			}
		}()
		nodeClock = stepped
	}
	venueClock := clock.NewVenue(nodeClock, o.clockSkewMax, log)
	b, err := backends.Open(ctx, backends.Config{DatabaseURL: o.database, RedisURL: o.redis, RedisPrefix: o.redisPfx, Clock: venueClock, Logger: log})
	if err != nil {
		return err
	}
	defer closeBackends(b, log)
	// The store's clock is the venue's, where the store has one (Postgres).
	if ref, ok := b.Store.(interface {
		Now(context.Context) (time.Time, error)
	}); ok {
		venueClock.SetReference(ref.Now)
		if err := venueClock.Sync(ctx); err != nil {
			log.Warn("read the venue clock (the store's)", "err", err)
		}
		go venueClock.Run(ctx, 0)
	}
	po, err := pircanrun.FromEnv()
	if err != nil {
		return err
	}
	// The bridge starts after the node (it calls the node's handshake);
	// /readyz reads its status once it is there.
	var bridge atomic.Pointer[pircan.Bridge]
	readyInfo := map[string]func() any{"clock": func() any { return venueClock.Status() }}
	if po.Addr != "" {
		readyInfo["pircan"] = (func() any {
			if br := bridge.Load(); br != nil {
				return br.Status()
			}
			return pircan.Status{}
		})
	}
	if ws, ok := b.Store.(writerStatser); ok { // Postgres with group commit: the admin /readyz shows its writer
		readyInfo["store_writer"] = func() any { return ws.WriterStats() }
	}
	reg := promreg.NewRegistry() // the node's and the bridge's series, on the admin /metrics
	cfg := venue.Config{ReadyInfo: readyInfo, Accounts: directory.IRCAccounts{Store: b.Store}, Addr: o.addr, PublicURL: o.publicURL, Audience: o.audience, Logger: log, KeyFile: o.keyFile,
		KeySealer: sealer, Pprof: o.pprof, AdminAddr: adminAddr(o.adminAddr), TrustedProxies: proxies, Caps: o.caps, MaxActiveGrants: o.maxGrants,
		RegisterPerMinute: o.regRate, HouseAgents: !o.noHouse, ArenaRetention: o.arenaKeep, HandshakeRetention: &o.keep, DeliveryApprovalWindow: o.approveIn, Deliveries: b.Deliveries, IRCBridge: po.Addr != "",
		Limits:  venue.Limits{FramesPerSecond: o.frameRate, FrameBurst: int(2 * o.frameRate)},
		Metrics: reg, Store: b.Store, Handshake: b.Handshake, Events: b.Events, Briefs: b.Briefs, Idempotency: b.Idempotency, Webhooks: b.Webhooks, WebhooksAllowPrivate: o.hooksPrivate, Bus: b.Bus, Timers: b.Timers, Clock: venueClock, Backend: b.Name,
		ReceiptLog: b.ReceiptLog, LogOrigin: o.logOrigin, ObserveDelay: time.Duration(o.delay) * time.Second}
	if o.delay < 0 {
		return fmt.Errorf("--observe-delay must be 0 or more seconds, not %d", o.delay)
	}
	if b.Redis != nil {
		cfg.Watchers = &watchers.Shared{Client: b.Redis, Prefix: o.redisPfx, Logger: log}
		cfg.RegisterLimiter = &redislimit.Limiter{Client: b.Redis, Prefix: o.redisPfx + ":register:",
			Limit: int(math.Ceil(o.regRate)), Window: time.Minute}
		// The frame budget across nodes: the burst per burst/rate seconds,
		// so the same average rate as each socket's own bucket.
		burst := 2 * o.frameRate
		// A node takes an eighth of a window's budget a round trip (not one
		// round trip a frame, on the sender's path).
		limit := int(math.Ceil(burst))
		cfg.FrameLimiter = &redislimit.Limiter{Client: b.Redis, Prefix: o.redisPfx + ":frames:",
			Limit: limit, Window: time.Duration(burst / o.frameRate * float64(time.Second)), Reserve: max(1, limit/8)}
	}
	srv, err := venue.New(cfg)
	if err != nil {
		return err
	}
	if po.Addr != "" {
		svc, portal := srv.Handshake()
		br, stopPircan, err := pircanrun.Serve(ctx, po, b, pircanrun.Links{Handshake: svc, Portal: portal, Events: pircan.BusEvents{Bus: b.Bus}, Metrics: reg}, log)
		if err != nil {
			return err
		}
		bridge.Store(br)
		defer stopPircan()
	}
	ready := make(chan string, 1)
	go func() {
		if addr, ok := <-ready; ok {
			log.Info("venue listening", "addr", addr, "url", "http://"+addr)
		}
	}()
	if err := srv.Serve(ctx, ready); err != nil {
		return err
	}
	log.Info("venue stopped")
	return nil
}

// openFilesReserve is the descriptors serve keeps for other than agents'
// sockets: the Postgres pool, Redis connections, listeners, logs.
const openFilesReserve = 256

// writerStatser is a store with a group-commit writer whose counters the
// admin /readyz shows (store/postgres).
type writerStatser interface {
	WriterStats() postgres.WriterStats
}

// GC settings of serve when GOGC is not set (see runServe).
const (
	defaultGCPercent   = 1000
	defaultMemoryLimit = 1 << 30 // bytes
)

// signalContext is ctx cancelled on SIGINT or SIGTERM.
func signalContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
}

// adminAddr is the --admin-addr value for venue.Config ("off": none).
func adminAddr(v string) string {
	if v == "off" {
		return ""
	}
	return v
}
