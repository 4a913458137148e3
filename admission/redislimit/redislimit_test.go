package redislimit_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/venuehq/venue/admission/redislimit"
	"github.com/venuehq/venue/bus/bustest"
	"github.com/venuehq/venue/bus/redisbus"
)

// TestSharedAcrossLimiters: two limiters on one Redis (two nodes) share one
// allowance per key; other keys have their own.
func TestSharedAcrossLimiters(t *testing.T) {
	t.Parallel()
	url := bustest.RedisURL(t)
	prefix := bustest.KeyPrefix(t, url)
	ctx := context.Background()
	node := func() *redislimit.Limiter {
		c, err := redisbus.Client(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return &redislimit.Limiter{Client: c, Prefix: prefix + ":register:", Limit: 10, Window: time.Minute}
	}
	a, b := node(), node()
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for i := range 40 {
		l := a
		if i%2 == 1 {
			l = b
		}
		wg.Go(func() {
			ok, _, err := l.Allow(ctx, "203.0.113.7")
			if err != nil {
				t.Error(err)
			}
			if ok {
				allowed.Add(1)
			}
		})
	}
	wg.Wait()
	if n := allowed.Load(); n != 10 {
		t.Fatalf("%d hits allowed on two nodes, want 10", n)
	}
	ok, after, err := a.Allow(ctx, "203.0.113.7")
	if err != nil || ok || after <= 0 || after > time.Minute {
		t.Fatalf("over the limit: ok %v retry after %v, %v", ok, after, err)
	}
	if ok, _, err := b.Allow(ctx, "203.0.113.8"); err != nil || !ok {
		t.Fatalf("another key: %v %v", ok, err)
	}
}
