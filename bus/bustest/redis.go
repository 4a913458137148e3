package bustest

import (
	"testing"

	"github.com/venuehq/venue/internal/testenv"
)

// DefaultRedisURL is the development machines' Redis (ARCHITECTURE.md "Real
// parts in tests").
const DefaultRedisURL = testenv.DefaultRedisURL

// RedisURL returns the test Redis (testenv.RedisURL).
func RedisURL(t testing.TB) string { t.Helper(); return testenv.RedisURL(t) }

// KeyPrefix returns a fresh key and channel prefix for t, cleaned up when t
// ends (testenv.KeyPrefix).
func KeyPrefix(t testing.TB, redisURL string) string {
	t.Helper()
	return testenv.KeyPrefix(t, redisURL)
}
