package storetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// DefaultDatabaseURL is the development machines' Postgres (ARCHITECTURE.md
// "Real parts in tests").
const DefaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// SkipServicesEnv set to 1 skips tests whose Postgres or Redis is
// unreachable; otherwise they fail.
const SkipServicesEnv = "VENUE_TEST_SKIP_SERVICES"

var (
	pgOnce sync.Once
	pgErr  error
)

// DatabaseURL returns the test Postgres (VENUE_TEST_DATABASE_URL, default
// DefaultDatabaseURL) after checking once per process that it answers. When
// it does not, the test fails, or is skipped if VENUE_TEST_SKIP_SERVICES=1.
func DatabaseURL(t testing.TB) string {
	t.Helper()
	url := os.Getenv("VENUE_TEST_DATABASE_URL")
	if url == "" {
		url = DefaultDatabaseURL
	}
	pgOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			pgErr = err
			return
		}
		pgErr = conn.Ping(ctx)
		_ = conn.Close(ctx)
	})
	if pgErr != nil {
		if os.Getenv(SkipServicesEnv) == "1" {
			t.Skipf("Postgres unreachable (%s=1): %v", SkipServicesEnv, pgErr)
		}
		t.Fatalf("Postgres unreachable: %v (start it, set VENUE_TEST_DATABASE_URL, or set %s=1 to skip)", pgErr, SkipServicesEnv)
	}
	return url
}

// Schema returns a fresh schema name for t ("venue_test_" + random hex).
// It does not create the schema (postgres.Store.Migrate with WithSchema
// does); it drops it, with everything in it, when t ends. Register it
// before the stores using it, so they are closed first.
func Schema(t testing.TB, databaseURL string) string {
	t.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name := "venue_test_" + hex.EncodeToString(b)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, databaseURL)
		if err != nil {
			t.Errorf("drop schema %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{name}.Sanitize()+` CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", name, err)
		}
	})
	return name
}
