package redistimers_test

import (
	"context"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/venuehq/venue/bus/bustest"
	"github.com/venuehq/venue/clock"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/timers"
	"github.com/venuehq/venue/timers/redistimers"
)

// flushDB is a Redis database of its own for the tests that flush it:
// FLUSHDB there is what FLUSHALL (or a restart without persistence, or a
// failover to an empty replica) does to the venue's keys, without touching
// the other tests sharing the test Redis.
const flushDB = "14"

var flushMu sync.Mutex // the flush tests take turns on flushDB

func flushURL(t *testing.T) string {
	t.Helper()
	u, err := url.Parse(bustest.RedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + flushDB
	return u.String()
}

// wakeMap is a store's wakes (timers.WakeStore) held in memory.
type wakeMap struct {
	mu sync.Mutex
	at map[string]time.Time
}

func (m *wakeMap) Wakes(context.Context) ([]store.Wake, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []store.Wake
	for id, at := range m.at {
		out = append(out, store.Wake{NegotiationID: id, At: at})
	}
	return out, nil
}

func (m *wakeMap) Overdue(_ context.Context, before time.Time, limit int) ([]store.Wake, error) {
	ws, _ := m.Wakes(context.Background())
	var out []store.Wake
	for _, w := range ws {
		if w.At.Before(before) && len(out) < limit {
			out = append(out, w)
		}
	}
	return out, nil
}

func (m *wakeMap) done(id string) {
	m.mu.Lock()
	delete(m.at, id)
	m.mu.Unlock()
}

// A venue's Redis emptied mid-negotiation (FLUSHDB standing for FLUSHALL):
// Run notices the wake set lost within a poll and signals Lost, the
// Sweeper re-arms from the store, and the clocks fire when due, once each.
// SCRIPT FLUSH drops the claim script: it is loaded again and wakes keep
// firing.
func TestWakesLostAndRearmed(t *testing.T) {
	flushMu.Lock()
	defer flushMu.Unlock()
	u := flushURL(t)
	start := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	c := clock.NewFake(start)
	tm, err := redistimers.New(t.Context(), u, redistimers.Options{Prefix: bustest.KeyPrefix(t, u), Clock: c, Poll: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tm.Close() })
	opts, _ := redis.ParseURL(u)
	admin := redis.NewClient(opts)
	t.Cleanup(func() { _ = admin.Close() })

	st := &wakeMap{at: map[string]time.Time{
		"neg:turn":     start.Add(60 * time.Second),
		"neg:proposal": start.Add(10 * time.Second),
	}}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	fired := make(chan string, 16)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() {
		_ = tm.Run(ctx, func(_ context.Context, key string) { st.done(key); fired <- key })
	})
	sw := &timers.Sweeper{Store: st, Timers: tm, Clock: c, Every: time.Hour, Lost: tm.Lost()}
	if _, err := sw.Rearm(ctx); err != nil { // what the venue does on start
		t.Fatal(err)
	}
	if n, err := tm.Len(ctx); err != nil || n != 2 {
		t.Fatalf("Len = %d, %v; want 2", n, err)
	}
	select {
	case <-tm.Lost():
		t.Fatal("Lost signalled with the set intact")
	default:
	}

	// Redis loses everything.
	if err := admin.FlushDB(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-tm.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("an emptied wake set was not noticed")
	}
	if n, _ := tm.Len(ctx); n != 0 {
		t.Fatalf("Len = %d after the flush", n)
	}
	// The signal is for the sweeper: hand it one and let it re-arm.
	lost := make(chan struct{}, 1)
	lost <- struct{}{}
	sw.Lost = lost
	swept := make(chan struct{})
	wg.Go(func() {
		_ = sw.Run(ctx)
	})
	go func() {
		for {
			if n, _ := tm.Len(ctx); n == 2 {
				close(swept)
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	select {
	case <-swept:
	case <-time.After(10 * time.Second):
		t.Fatal("the sweeper did not re-arm the clocks")
	}

	// The claim script is dropped too: wakes still fire.
	if err := admin.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	c.Set(start.Add(11 * time.Second))
	wait := func(want string) {
		t.Helper()
		select {
		case got := <-fired:
			if got != want {
				t.Fatalf("fired %s, want %s", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s did not fire", want)
		}
	}
	wait("neg:proposal")
	c.Set(start.Add(61 * time.Second))
	wait("neg:turn")
	select {
	case k := <-fired:
		t.Fatalf("%s fired twice", k)
	default:
	}
}

// A wake lost without trace (claimed by a node that died before settling
// it, or deleted): the periodic sweep finds the clock overdue in the store
// and arms it, so it fires. Driven by the fake clock.
func TestSweepArmsOverdue(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	c := clock.NewFake(start)
	tm := newTimers(t, 1, c)[0]
	st := &wakeMap{at: map[string]time.Time{"neg:lost": start.Add(time.Second), "neg:later": start.Add(time.Hour)}}
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	fired := make(chan string, 4)
	wg.Go(func() { _ = tm.Run(ctx, func(_ context.Context, key string) { st.done(key); fired <- key }) })
	sw := &timers.Sweeper{Store: st, Timers: tm, Clock: c, Every: 5 * time.Second, Grace: 2 * time.Second}
	// Nothing armed (the wake was lost); the clock runs out.
	c.Set(start.Add(4 * time.Second)) // 3 s overdue: past the grace
	n, err := sw.Sweep(ctx)
	if err != nil || n != 1 {
		t.Fatalf("Sweep = %d, %v; want the one overdue clock", n, err)
	}
	select {
	case k := <-fired:
		if k != "neg:lost" {
			t.Fatalf("fired %s", k)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the swept clock did not fire")
	}
	if n, err := sw.Sweep(ctx); err != nil || n != 0 {
		t.Fatalf("second Sweep = %d, %v; want nothing overdue", n, err)
	}
}

// proxy is a TCP proxy to Redis that the test can stop (Redis down: every
// connection cut, new ones refused) and start again on the same address.
type proxy struct {
	t      *testing.T
	addr   string
	target string
	mu     sync.Mutex
	ln     net.Listener
	conns  []net.Conn
}

func newProxy(t *testing.T, target string) *proxy {
	p := &proxy{t: t, target: target}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr = ln.Addr().String()
	p.serve(ln)
	t.Cleanup(p.stop)
	return p
}

func (p *proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			r, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, r)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(r, c); r.Close() }()
			go func() { _, _ = io.Copy(c, r); c.Close() }()
		}
	}()
}

func (p *proxy) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *proxy) start() {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.t.Fatal(err)
	}
	p.serve(ln)
}

// Redis stopped, a wake scheduled while it is down (refused), Redis back:
// Run logs the errors, and once Redis answers again it signals Lost, so the
// sweeper re-arms what was refused meanwhile.
func TestRedisDownAndBack(t *testing.T) {
	t.Parallel()
	u, err := url.Parse(bustest.RedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	prefix := bustest.KeyPrefix(t, u.String())
	p := newProxy(t, u.Host)
	u.Host = p.addr
	tm, err := redistimers.New(t.Context(), u.String()+"?max_retries=-1&dial_timeout=200ms", redistimers.Options{Prefix: prefix, Poll: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tm.Close() })
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() { _ = tm.Run(ctx, func(context.Context, string) {}) })

	p.stop()
	// A schedule while Redis is down fails (the venue logs it).
	refused := false
	for range 50 {
		if err := tm.Schedule(ctx, "neg:while-down", time.Now().Add(time.Hour)); err != nil {
			refused = true
			break
		}
	}
	if !refused {
		t.Fatal("Schedule succeeded with Redis down")
	}
	select {
	case <-tm.Lost():
		t.Fatal("Lost signalled while Redis is still down: nothing can be re-armed yet")
	default:
	}
	p.start()
	select {
	case <-tm.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("Redis came back and Lost was not signalled")
	}
}
