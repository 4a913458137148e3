package watchers_test

import (
	"context"
	"testing"
	"time"

	"github.com/venuehq/venue/bus/bustest"
	"github.com/venuehq/venue/bus/redisbus"
	"github.com/venuehq/venue/clock"
	"github.com/venuehq/venue/watchers"
)

// TestLocal: one node's count goes up and down with its sockets; a
// release called twice counts once.
func TestLocal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l := watchers.NewLocal()
	a := l.Open(ctx, "neg_1")
	b := l.Open(ctx, "neg_1")
	c := l.Open(ctx, "neg_2")
	want := func(id string, n int) {
		t.Helper()
		if got, err := l.Count(ctx, id); err != nil || got != n {
			t.Fatalf("%s: %d %v, want %d", id, got, err, n)
		}
	}
	want("neg_1", 2)
	want("neg_2", 1)
	a()
	a()
	want("neg_1", 1)
	b()
	c()
	want("neg_1", 0)
	want("neg_2", 0)
}

// TestSharedAcrossNodes: three nodes on one Redis see the sum of their
// observers; a node that stops renewing (it died) stops counting once its
// counts expire on the clock; one that renews keeps counting.
func TestSharedAcrossNodes(t *testing.T) {
	t.Parallel()
	url := bustest.RedisURL(t)
	prefix := bustest.KeyPrefix(t, url)
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	node := func() *watchers.Shared {
		c, err := redisbus.Client(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return &watchers.Shared{Client: c, Prefix: prefix, Clock: clk}
	}
	a, b, c := node(), node(), node()
	want := func(on *watchers.Shared, id string, n int) {
		t.Helper()
		if got, err := on.Count(ctx, id); err != nil || got != n {
			t.Fatalf("%s: %d %v, want %d", id, got, err, n)
		}
	}
	ra1 := a.Open(ctx, "neg_1")
	ra2 := a.Open(ctx, "neg_1")
	rb := b.Open(ctx, "neg_1")
	c.Open(ctx, "neg_1") // c dies with it open
	b.Open(ctx, "neg_2")
	for _, on := range []*watchers.Shared{a, b, c} {
		want(on, "neg_1", 4)
		want(on, "neg_2", 1)
	}
	ra1()
	want(b, "neg_1", 3)
	// Past the TTL: a and b renewed, c did not.
	clk.Advance(watchers.TTL / 2)
	a.Renew(ctx)
	b.Renew(ctx)
	clk.Advance(watchers.TTL/2 + time.Second)
	want(a, "neg_1", 2) // a's 1 and b's 1
	want(c, "neg_2", 1)
	ra2()
	rb()
	want(c, "neg_1", 0)
	want(a, "nobody", 0)
}
