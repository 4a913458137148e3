// Package backends opens everything a venue node or tool runs on, in one
// place: the store, the handshake's store, the PIRCAN bridge's state, the
// bus, the timers and the Redis client of the shared limiters
// (ARCHITECTURE.md "Packages"). A Postgres store brings the handshake and
// bridge tables of the same schema; without Postgres they live in memory.
// Nothing else finds a backend by asserting the type of another.
package backends

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/venuehq/venue/bus"
	"github.com/venuehq/venue/bus/redisbus"
	"github.com/venuehq/venue/clock"
	"github.com/venuehq/venue/deliveries"
	"github.com/venuehq/venue/deliveries/deliverypg"
	"github.com/venuehq/venue/events"
	"github.com/venuehq/venue/events/eventspg"
	"github.com/venuehq/venue/handshake"
	hsmemory "github.com/venuehq/venue/handshake/memory"
	hspostgres "github.com/venuehq/venue/handshake/postgres"
	"github.com/venuehq/venue/idempotency"
	"github.com/venuehq/venue/idempotency/idempg"
	"github.com/venuehq/venue/pircan"
	"github.com/venuehq/venue/pircan/pgstate"
	"github.com/venuehq/venue/receiptlog"
	"github.com/venuehq/venue/receiptlog/pglog"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/store/memory"
	"github.com/venuehq/venue/store/postgres"
	"github.com/venuehq/venue/timers"
	"github.com/venuehq/venue/timers/redistimers"
	"github.com/venuehq/venue/webhooks"
	"github.com/venuehq/venue/webhooks/webhookspg"
)

// ConnectTimeout bounds reaching Postgres or Redis at start.
const ConnectTimeout = 15 * time.Second

// EmbeddedDefault names the backends when nothing is configured.
const EmbeddedDefault = "embedded default (in-memory store, in-process timers and bus)"

// DefaultPoolConns is the Postgres pool size when DatabaseURL does not set
// pool_max_conns: enough concurrent commits for group commit to pay, well
// under Postgres's default max_connections (100) with a few nodes.
const DefaultPoolConns = 16

// DefaultRedisPrefix is the Redis key and channel prefix of a venue.
const DefaultRedisPrefix = "venue"

// Config says which backends to open; the zero Config is the embedded
// default (everything in memory and in process, on the wall clock).
type Config struct {
	// DatabaseURL is the PostgreSQL URL of the store (DATABASE_URL); empty:
	// the in-memory store.
	DatabaseURL string
	// Schema, if set, is the Postgres schema to use instead of the URL's
	// search_path (tests: one schema each).
	Schema string
	// NoMigrate leaves the schema as it is (tools that only read it);
	// otherwise every pending migration is applied.
	NoMigrate bool
	// RedisURL is the Redis URL of the bus, the timers and the shared
	// limiters (REDIS_URL); empty: the in-process bus and timer heap.
	RedisURL string
	// RedisPrefix names this venue's keys and channels in Redis: the nodes
	// of one venue share it, two venues on one Redis database must not
	// (default DefaultRedisPrefix). A node with Redis and no Postgres
	// shares nothing with other nodes, so it takes a prefix of its own
	// whatever is asked.
	RedisPrefix string
	// Clock is what the timers read (default the wall clock).
	Clock clock.Clock
	// Logger gets the migrations applied and warnings (default slog.Default()).
	Logger *slog.Logger
}

// Set is every backend of a node, opened together by Open and released
// together by Close.
type Set struct {
	Store     store.Store
	Handshake handshake.Store
	Events    events.Store
	// Idempotency keeps Idempotency-Key answers (in memory, or on Postgres
	// shared by the nodes).
	Idempotency idempotency.Store
	// Deliveries keeps the deals' deliveries and settlement statuses (in
	// memory, or on Postgres shared by the nodes).
	Deliveries deliveries.Store
	// Webhooks keeps the agents' webhooks and their deliveries (beside
	// Events: in memory, or on Postgres shared by the nodes).
	Webhooks webhooks.Store
	Bridge   pircan.State
	// ReceiptLog is the receipt log's store on Postgres; nil beside the
	// in-memory store (the venue keeps the log in memory then).
	ReceiptLog receiptlog.Store
	Bus        bus.Bus
	Timers     timers.Timers
	// Redis is the client of the limiters shared by every node (the same
	// server as Bus and Timers), nil without Redis.
	Redis *redis.Client
	// RedisPrefix is the prefix in use (Config.RedisPrefix, or the node's
	// own, see there).
	RedisPrefix string
	// Name says which they are, for the first log line and /readyz:
	// "postgres+redis", "postgres+local", "memory+redis" or EmbeddedDefault.
	Name string

	closers []func() error
}

// Open opens the backends of c. A URL that is set but unreachable is an
// error naming DATABASE_URL or REDIS_URL, with the password redacted;
// nothing is left open then.
func Open(ctx context.Context, c Config) (*Set, error) {
	if c.Clock == nil {
		c.Clock = clock.Real{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	s := &Set{}
	fail := func(err error) (*Set, error) {
		return nil, errors.Join(err, s.Close())
	}
	if err := s.openStore(ctx, c); err != nil {
		return fail(err)
	}
	if err := s.openRedis(ctx, c); err != nil {
		return fail(err)
	}
	switch {
	case c.DatabaseURL == "" && c.RedisURL == "":
		s.Name = EmbeddedDefault
	case c.DatabaseURL == "":
		s.Name = "memory+redis"
		c.Logger.Warn("REDIS_URL without DATABASE_URL: each node keeps its own in-memory store, so nodes cannot share negotiations", "redis_prefix", s.RedisPrefix)
	case c.RedisURL == "":
		s.Name = "postgres+local"
	default:
		s.Name = "postgres+redis"
	}
	return s, nil
}

// openStore opens the store, the handshake's store and the bridge's state.
func (s *Set) openStore(ctx context.Context, c Config) error {
	if c.DatabaseURL == "" {
		s.Store, s.Handshake, s.Bridge, s.Events = memory.New(), hsmemory.New(), pircan.NewMemoryState(), events.NewMemory()
		s.Idempotency = idempotency.NewMemory()
		s.Deliveries = deliveries.NewMemory()
		s.Webhooks = webhooks.NewMemory(s.Events)
		return nil
	}
	var opts []postgres.Option
	if !strings.Contains(c.DatabaseURL, "pool_max_conns") {
		// pgxpool's default (4 on a small machine) serialises commits;
		// every landed frame is one. pool_max_conns in the URL overrides.
		opts = append(opts, postgres.WithMaxConns(DefaultPoolConns))
	}
	if c.Schema != "" {
		opts = append(opts, postgres.WithSchema(c.Schema))
	}
	cctx, cancel := context.WithTimeout(ctx, ConnectTimeout)
	pg, err := postgres.New(cctx, c.DatabaseURL, opts...)
	cancel()
	if err != nil {
		return fmt.Errorf("DATABASE_URL is set but Postgres cannot be reached: %w", err)
	}
	s.closers = append(s.closers, func() error { pg.Close(); return nil })
	if !c.NoMigrate {
		applied, err := pg.Migrate(ctx)
		if err != nil {
			return fmt.Errorf("DATABASE_URL: migrate %s: %w", postgres.RedactURL(c.DatabaseURL), err)
		}
		for _, m := range applied {
			c.Logger.Info("migration applied", "version", m.Version, "file", m.Name, "ms", m.Duration.Milliseconds())
		}
	}
	// The handshake and bridge tables are in the store's schema
	// (migrations/00005_pircan.sql, 00006_handshake.sql): the same pool serves them.
	s.Store, s.Handshake, s.Bridge, s.Events = pg, hspostgres.New(pg.Pool()), pgstate.New(pg.Pool()), eventspg.New(pg.Pool())
	s.ReceiptLog = pglog.New(pg.Pool())
	s.Idempotency = idempg.New(pg.Pool())
	s.Deliveries = deliverypg.New(pg.Pool())
	s.Webhooks = webhookspg.New(pg.Pool())
	return nil
}

// openRedis opens the bus, the timers and the limiters' client.
func (s *Set) openRedis(ctx context.Context, c Config) error {
	s.RedisPrefix = c.RedisPrefix
	if s.RedisPrefix == "" {
		s.RedisPrefix = DefaultRedisPrefix
	}
	if c.RedisURL == "" {
		s.Bus, s.Timers = bus.NewLocal(), timers.NewLocal(c.Clock)
		return nil
	}
	if c.DatabaseURL == "" {
		// Its negotiations are in its own memory: another node taking its
		// wakes (or it taking theirs) would drop them as unknown.
		rnd := make([]byte, 4)
		_, _ = rand.Read(rnd)
		s.RedisPrefix += "-node-" + hex.EncodeToString(rnd)
	}
	cctx, cancel := context.WithTimeout(ctx, ConnectTimeout)
	defer cancel()
	unreachable := func(err error) error {
		return fmt.Errorf("REDIS_URL is set but Redis cannot be reached: %w", err)
	}
	rb, err := redisbus.New(cctx, c.RedisURL, redisbus.Options{Prefix: s.RedisPrefix, Logger: c.Logger})
	if err != nil {
		return unreachable(err)
	}
	s.closers = append(s.closers, rb.Close)
	rt, err := redistimers.New(cctx, c.RedisURL, redistimers.Options{Prefix: s.RedisPrefix, Clock: c.Clock, Logger: c.Logger})
	if err != nil {
		return unreachable(err)
	}
	s.closers = append(s.closers, rt.Close)
	rdb, err := redisbus.Client(cctx, c.RedisURL)
	if err != nil {
		return unreachable(err)
	}
	s.closers = append(s.closers, rdb.Close)
	s.Bus, s.Timers, s.Redis = rb, rt, rdb
	return nil
}

// Close releases every backend, last opened first (after the server
// stopped), and returns what went wrong.
func (s *Set) Close() error {
	var errs []error
	for i := len(s.closers) - 1; i >= 0; i-- {
		errs = append(errs, s.closers[i]())
	}
	s.closers = nil
	return errors.Join(errs...)
}
