package backends

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	hsmemory "github.com/venuehq/venue/handshake/memory"
	hspostgres "github.com/venuehq/venue/handshake/postgres"
	"github.com/venuehq/venue/internal/testenv"
	"github.com/venuehq/venue/pircan"
	"github.com/venuehq/venue/pircan/pgstate"
	"github.com/venuehq/venue/store/postgres"
)

// TestOpenUnreachable: a configured but unreachable backend stops the
// start with a message naming it, and never shows the password.
func TestOpenUnreachable(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct{ db, redis, names string }{
		{"postgres://venue:s3cret-pw@127.0.0.1:1/venue?sslmode=disable&connect_timeout=2", "", "DATABASE_URL"},
		{"", "redis://:s3cret-pw@127.0.0.1:1/0", "REDIS_URL"},
	} {
		b, err := Open(ctx, Config{DatabaseURL: tc.db, RedisURL: tc.redis, Logger: log})
		if err == nil {
			_ = b.Close()
			t.Fatalf("%s: unreachable backend accepted", tc.names)
		}
		if msg := err.Error(); !strings.Contains(msg, tc.names) || strings.Contains(msg, "s3cret-pw") {
			t.Errorf("%s: error %q should name it and hide the password", tc.names, msg)
		}
	}
	b, err := Open(ctx, Config{Logger: log})
	if err != nil || !strings.Contains(b.Name, "embedded") {
		t.Fatalf("no URLs: %v", err)
	}
	if _, ok := b.Handshake.(*hsmemory.Store); !ok {
		t.Errorf("embedded handshake store is %T", b.Handshake)
	}
	if _, ok := b.Bridge.(*pircan.MemoryState); !ok {
		t.Errorf("embedded bridge state is %T", b.Bridge)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestOpenPostgresRedis: with both URLs every store is on Postgres (the
// handshake's and the bridge's in the same schema), the bus and timers and
// the limiters' client on Redis; Close releases them.
func TestOpenPostgresRedis(t *testing.T) {
	t.Parallel()
	dbURL, redisURL := testenv.DatabaseURL(t), testenv.RedisURL(t)
	schema, prefix := testenv.Schema(t, dbURL), testenv.KeyPrefix(t, redisURL)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	b, err := Open(t.Context(), Config{DatabaseURL: dbURL, Schema: schema, RedisURL: redisURL, RedisPrefix: prefix, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := b.Close(); err != nil {
			t.Error(err)
		}
	}()
	if b.Name != "postgres+redis" || b.RedisPrefix != prefix {
		t.Errorf("name %q prefix %q", b.Name, b.RedisPrefix)
	}
	if _, ok := b.Store.(*postgres.Store); !ok {
		t.Errorf("store is %T", b.Store)
	}
	if _, ok := b.Handshake.(*hspostgres.Store); !ok {
		t.Errorf("handshake store is %T", b.Handshake)
	}
	if _, ok := b.Bridge.(*pgstate.State); !ok {
		t.Errorf("bridge state is %T", b.Bridge)
	}
	if b.Redis == nil || b.Redis.Ping(t.Context()).Err() != nil {
		t.Error("no Redis client for the limiters")
	}
}
