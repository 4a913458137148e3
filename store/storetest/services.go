package storetest

import (
	"testing"

	"github.com/venuehq/venue/internal/testenv"
)

// DefaultDatabaseURL is the development machines' Postgres (ARCHITECTURE.md
// "Real parts in tests").
const DefaultDatabaseURL = testenv.DefaultDatabaseURL

// SkipServicesEnv set to 1 skips tests whose Postgres or Redis is
// unreachable; otherwise they fail.
const SkipServicesEnv = testenv.SkipServicesEnv

// DatabaseURL returns the test Postgres (testenv.DatabaseURL).
func DatabaseURL(t testing.TB) string { t.Helper(); return testenv.DatabaseURL(t) }

// Schema returns a fresh schema name for t, dropped when t ends
// (testenv.Schema).
func Schema(t testing.TB, databaseURL string) string {
	t.Helper()
	return testenv.Schema(t, databaseURL)
}
