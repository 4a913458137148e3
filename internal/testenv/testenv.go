// Package testenv gives tests the real services of the development machine
// (ARCHITECTURE.md "Real parts in tests"): the Postgres and Redis to use,
// checked once per process, and a fresh Postgres schema or Redis key prefix
// per test, removed when the test ends, so tests run in parallel without
// stepping on each other.
//
// VENUE_TEST_DATABASE_URL and VENUE_TEST_REDIS_URL point at other servers;
// VENUE_TEST_SKIP_SERVICES=1 skips (instead of failing) the tests whose
// service is unreachable.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

// Defaults: the development machines' services.
const (
	DefaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	DefaultRedisURL    = "redis://127.0.0.1:6379/0"
)

// SkipServicesEnv set to 1 skips tests whose Postgres or Redis is
// unreachable; otherwise they fail.
const SkipServicesEnv = "VENUE_TEST_SKIP_SERVICES"

// service is one external service, reached once per process.
type service struct {
	name, env, def string
	once           sync.Once
	err            error
	ping           func(ctx context.Context, url string) error
}

func (s *service) url(t testing.TB) string {
	t.Helper()
	url := os.Getenv(s.env)
	if url == "" {
		url = s.def
	}
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.err = s.ping(ctx, url)
	})
	if s.err != nil {
		if os.Getenv(SkipServicesEnv) == "1" {
			t.Skipf("%s unreachable (%s=1): %v", s.name, SkipServicesEnv, s.err)
		}
		t.Fatalf("%s unreachable: %v (start it, set %s, or set %s=1 to skip)", s.name, s.err, s.env, SkipServicesEnv)
	}
	return url
}

var (
	postgresService = &service{name: "Postgres", env: "VENUE_TEST_DATABASE_URL", def: DefaultDatabaseURL,
		ping: func(ctx context.Context, url string) error {
			conn, err := pgx.Connect(ctx, url)
			if err != nil {
				return err
			}
			defer conn.Close(ctx)
			return conn.Ping(ctx)
		}}
	redisService = &service{name: "Redis", env: "VENUE_TEST_REDIS_URL", def: DefaultRedisURL,
		ping: func(ctx context.Context, url string) error {
			opts, err := redis.ParseURL(url)
			if err != nil {
				return err
			}
			rdb := redis.NewClient(opts)
			defer rdb.Close()
			return rdb.Ping(ctx).Err()
		}}
)

// DatabaseURL returns the test Postgres (VENUE_TEST_DATABASE_URL, default
// DefaultDatabaseURL) after checking once per process that it answers.
func DatabaseURL(t testing.TB) string { return postgresService.url(t) }

// RedisURL returns the test Redis (VENUE_TEST_REDIS_URL, default
// DefaultRedisURL) after checking once per process that it answers.
func RedisURL(t testing.TB) string { return redisService.url(t) }

// name returns "venue_test_" + 12 random hex digits.
func name() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "venue_test_" + hex.EncodeToString(b)
}

// Schema returns a fresh schema name for t. It does not create the schema
// (postgres.Store.Migrate with WithSchema does); it drops it, with
// everything in it, when t ends. Register it before the stores using it, so
// they are closed first.
func Schema(t testing.TB, databaseURL string) string {
	t.Helper()
	schema := name()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, databaseURL)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return schema
}

// KeyPrefix returns a fresh Redis key and channel prefix for t; every key
// under it is deleted when t ends.
func KeyPrefix(t testing.TB, redisURL string) string {
	t.Helper()
	prefix := name()
	t.Cleanup(func() {
		opts, err := redis.ParseURL(redisURL)
		if err != nil {
			t.Errorf("clean up %s: %v", prefix, err)
			return
		}
		rdb := redis.NewClient(opts)
		defer rdb.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		iter := rdb.Scan(ctx, 0, prefix+"*", 100).Iterator()
		for iter.Next(ctx) {
			rdb.Del(ctx, iter.Val())
		}
		if err := iter.Err(); err != nil {
			t.Errorf("clean up %s: %v", prefix, err)
		}
	})
	return prefix
}
