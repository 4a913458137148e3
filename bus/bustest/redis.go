package bustest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultRedisURL is the development machines' Redis (ARCHITECTURE.md "Real
// parts in tests").
const DefaultRedisURL = "redis://127.0.0.1:6379/0"

var (
	redisOnce sync.Once
	redisErr  error
)

// RedisURL returns the test Redis (VENUE_TEST_REDIS_URL, default
// DefaultRedisURL) after checking once per process that it answers. When it
// does not, the test fails, or is skipped if VENUE_TEST_SKIP_SERVICES=1.
func RedisURL(t testing.TB) string {
	t.Helper()
	url := os.Getenv("VENUE_TEST_REDIS_URL")
	if url == "" {
		url = DefaultRedisURL
	}
	redisOnce.Do(func() {
		opts, err := redis.ParseURL(url)
		if err != nil {
			redisErr = err
			return
		}
		rdb := redis.NewClient(opts)
		defer rdb.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		redisErr = rdb.Ping(ctx).Err()
	})
	if redisErr != nil {
		if os.Getenv("VENUE_TEST_SKIP_SERVICES") == "1" {
			t.Skipf("Redis unreachable (VENUE_TEST_SKIP_SERVICES=1): %v", redisErr)
		}
		t.Fatalf("Redis unreachable: %v (start it, set VENUE_TEST_REDIS_URL, or set VENUE_TEST_SKIP_SERVICES=1 to skip)", redisErr)
	}
	return url
}

// KeyPrefix returns a fresh key and channel prefix for t ("venue_test_" +
// random hex); every key under it is deleted when t ends.
func KeyPrefix(t testing.TB, redisURL string) string {
	t.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	prefix := "venue_test_" + hex.EncodeToString(b)
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
