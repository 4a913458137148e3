package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/venuehq/venue/bus"
	"github.com/venuehq/venue/bus/redisbus"
	"github.com/venuehq/venue/clock"
	"github.com/venuehq/venue/receiptlog"
	"github.com/venuehq/venue/receiptlog/pglog"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/store/memory"
	"github.com/venuehq/venue/store/postgres"
	"github.com/venuehq/venue/timers"
	"github.com/venuehq/venue/timers/redistimers"
)

// connectTimeout bounds reaching Postgres or Redis at start.
const connectTimeout = 15 * time.Second

// embeddedDefault names the backends when nothing is configured.
const embeddedDefault = "embedded default (in-memory store, in-process timers and bus)"

// venueBackends are the store, bus and timers a server runs on.
type venueBackends struct {
	Store  store.Store
	Bus    bus.Bus
	Timers timers.Timers
	// ReceiptLog is the receipt log on Postgres; nil beside the in-memory
	// store (the venue keeps it in memory then).
	ReceiptLog receiptlog.Store
	// Name says which they are, for the first log line and /readyz:
	// "postgres+redis", "postgres+local", "memory+redis" or the embedded
	// default's description.
	Name string
	// Close releases them (after the server stopped).
	Close func()
}

// defaultPoolConns is the Postgres pool size when DATABASE_URL does not set
// pool_max_conns: enough concurrent commits for group commit to pay, well
// under Postgres's default max_connections (100) with a few nodes.
const defaultPoolConns = 16

// defaultRedisPrefix is the Redis key and channel prefix of a venue.
const defaultRedisPrefix = "venue"

// openBackends opens the backends configured by DATABASE_URL and REDIS_URL
// (either may be empty):
//   - databaseURL empty: the in-memory store; set: Postgres, with every
//     pending migration applied.
//   - redisURL empty: the in-process bus and timer heap (on clock c); set:
//     Redis pub/sub and the Redis sorted-set timers (reading clock c).
//
// A URL that is set but unreachable is an error naming DATABASE_URL or
// REDIS_URL, with the password redacted; nothing is left open then.
//
// redisPrefix names this venue's keys and channels in Redis: the nodes of
// one venue share it, two venues on one Redis database must not. A node with
// Redis and no Postgres shares nothing with other nodes, so it takes a prefix
// of its own whatever is asked.
func openBackends(ctx context.Context, databaseURL, redisURL, redisPrefix string, c clock.Clock, log *slog.Logger) (venueBackends, error) {
	var closers []func()
	closeAll := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	fail := func(err error) (venueBackends, error) {
		closeAll()
		return venueBackends{}, err
	}
	b := venueBackends{Close: closeAll}
	storeName, fanoutName := "memory", "local"

	if databaseURL == "" {
		b.Store = memory.New()
	} else {
		cctx, cancel := context.WithTimeout(ctx, connectTimeout)
		var opts []postgres.Option
		if !strings.Contains(databaseURL, "pool_max_conns") {
			// pgxpool's default (4 on a small machine) serialises commits;
			// every landed frame is one. pool_max_conns in the URL overrides.
			opts = append(opts, postgres.WithMaxConns(defaultPoolConns))
		}
		pg, err := postgres.New(cctx, databaseURL, opts...)
		cancel()
		if err != nil {
			return fail(fmt.Errorf("DATABASE_URL is set but Postgres cannot be reached: %w", err))
		}
		closers = append(closers, pg.Close)
		applied, err := pg.Migrate(ctx)
		if err != nil {
			return fail(fmt.Errorf("DATABASE_URL: migrate %s: %w", postgres.RedactURL(databaseURL), err))
		}
		for _, m := range applied {
			log.Info("migration applied", "version", m.Version, "file", m.Name, "ms", m.Duration.Milliseconds())
		}
		b.Store, storeName = pg, "postgres"
		b.ReceiptLog = pglog.New(pg.Pool())
	}

	if redisPrefix == "" {
		redisPrefix = defaultRedisPrefix
	}
	if databaseURL == "" && redisURL != "" {
		// Its negotiations are in its own memory: another node taking its
		// wakes (or it taking theirs) would drop them as unknown.
		rnd := make([]byte, 4)
		_, _ = rand.Read(rnd)
		redisPrefix += "-node-" + hex.EncodeToString(rnd)
	}
	if redisURL == "" {
		b.Bus, b.Timers = bus.NewLocal(), timers.NewLocal(c)
	} else {
		cctx, cancel := context.WithTimeout(ctx, connectTimeout)
		defer cancel()
		rb, err := redisbus.New(cctx, redisURL, redisbus.Options{Prefix: redisPrefix, Logger: log})
		if err != nil {
			return fail(fmt.Errorf("REDIS_URL is set but Redis cannot be reached: %w", err))
		}
		closers = append(closers, func() {
			if err := rb.Close(); err != nil {
				log.Warn("close redis bus", "err", err)
			}
		})
		rt, err := redistimers.New(cctx, redisURL, redistimers.Options{Prefix: redisPrefix, Clock: c, Logger: log})
		if err != nil {
			return fail(fmt.Errorf("REDIS_URL is set but Redis cannot be reached: %w", err))
		}
		closers = append(closers, func() { _ = rt.Close() })
		b.Bus, b.Timers, fanoutName = rb, rt, "redis"
	}

	b.Name = storeName + "+" + fanoutName
	if databaseURL == "" && redisURL == "" {
		b.Name = embeddedDefault
	}
	if databaseURL == "" && redisURL != "" {
		log.Warn("REDIS_URL without DATABASE_URL: each node keeps its own in-memory store, so nodes cannot share negotiations", "redis_prefix", redisPrefix)
	}
	return b, nil
}
