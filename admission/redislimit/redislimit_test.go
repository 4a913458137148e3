package redislimit_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

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

// TestPipelinedHitsCountOnce: hundreds of hits at once on one limiter share
// round trips and each is counted exactly once: on the shared Redis, and on
// a fresh Redis of our own that does not know the script yet (every
// EVALSHA of the first pipeline is answered NOSCRIPT and runs again as
// EVAL, never twice).
func TestPipelinedHitsCountOnce(t *testing.T) {
	t.Parallel()
	url := bustest.RedisURL(t)
	prefix := bustest.KeyPrefix(t, url)
	ctx := context.Background()
	for _, url := range []string{url, privateRedis(t)} {
		c, err := redisbus.Client(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		l := &redislimit.Limiter{Client: c, Prefix: prefix + ":frames:", Limit: 300, Window: time.Minute}
		var allowed atomic.Int64
		var wg sync.WaitGroup
		for range 500 {
			wg.Go(func() {
				ok, _, err := l.Allow(ctx, "agent neg")
				if err != nil {
					t.Error(err)
				}
				if ok {
					allowed.Add(1)
				}
			})
		}
		wg.Wait()
		if n := allowed.Load(); n != 300 {
			t.Fatalf("%s: %d of 500 hits allowed, want exactly the limit 300", url, n)
		}
		ok, after, err := l.Allow(ctx, "agent neg")
		if err != nil || ok || after <= 0 {
			t.Fatalf("%s: past the limit: %v %v %v", url, ok, after, err)
		}
	}
}

// privateRedis starts a redis-server of the test's own on a free port (no
// persistence) and returns its URL.
func privateRedis(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("no redis-server binary for a private Redis")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	url := fmt.Sprintf("redis://127.0.0.1:%d/0", port)
	opt, _ := redis.ParseURL(url)
	c := redis.NewClient(opt)
	defer c.Close()
	for deadline := time.Now().Add(10 * time.Second); c.Ping(context.Background()).Err() != nil; {
		if time.Now().After(deadline) {
			t.Fatal("private redis-server did not answer")
		}
		time.Sleep(20 * time.Millisecond) // polling a starting process, not a timer
	}
	return url
}

// TestAllowHonoursContext: a caller whose context ends stops waiting.
func TestAllowHonoursContext(t *testing.T) {
	t.Parallel()
	url := bustest.RedisURL(t)
	c, err := redisbus.Client(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	l := &redislimit.Limiter{Client: c, Prefix: bustest.KeyPrefix(t, url) + ":x:", Limit: 1, Window: time.Minute}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := l.Allow(ctx, "k"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Allow with a cancelled context: %v", err)
	}
}

// TestReserve: with Reserve, a node takes Reserve hits a round trip and
// spends them locally; two nodes together get exactly Limit in a window,
// the node's refusal is kept (no round trip) until the window ends, and a
// kept hit past the window's end is not spent.
func TestReserve(t *testing.T) {
	t.Parallel()
	url := bustest.RedisURL(t)
	prefix := bustest.KeyPrefix(t, url)
	ctx := context.Background()
	c, err := redisbus.Client(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var mu sync.Mutex
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	node := func() *redislimit.Limiter {
		return &redislimit.Limiter{Client: c, Prefix: prefix + ":frames:", Limit: 10, Window: time.Minute, Reserve: 4, Now: clock}
	}
	a, b := node(), node()
	key := prefix + ":frames:agent neg"
	count := func() int {
		t.Helper()
		n, err := c.Get(ctx, key).Int()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	allow := func(l *redislimit.Limiter) bool {
		t.Helper()
		ok, _, err := l.Allow(ctx, "agent neg")
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !allow(a) || count() != 4 {
		t.Fatalf("first hit: count %d, want 4 reserved", count())
	}
	for range 3 {
		if !allow(a) {
			t.Fatal("a kept hit was refused")
		}
	}
	if count() != 4 {
		t.Fatalf("kept hits went to Redis: count %d, want 4", count())
	}
	allowed := 4
	for i := range 20 {
		l := a
		if i%2 == 1 {
			l = b
		}
		if allow(l) {
			allowed++
		}
	}
	if allowed != 10 {
		t.Fatalf("%d hits allowed on two nodes, want 10 (Limit)", allowed)
	}
	before := count()
	ok, after, err := a.Allow(ctx, "agent neg")
	if err != nil || ok || after <= 0 || after > time.Minute {
		t.Fatalf("refused hit: %v %v %v, want a refusal within the window", ok, after, err)
	}
	if count() != before {
		t.Fatalf("a kept refusal went to Redis: count %d -> %d", before, count())
	}
	// Past the node's idea of the window's end it asks Redis again (whose
	// window, a minute long, still holds: refused, counted).
	mu.Lock()
	now = now.Add(2 * time.Minute)
	mu.Unlock()
	if allow(a) || count() != before+4 {
		t.Fatalf("after the window: count %d, want %d (asked again)", count(), before+4)
	}
}
