package redisbus_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/venuehq/venue/bus"
	"github.com/venuehq/venue/bus/bustest"
	"github.com/venuehq/venue/bus/redisbus"
)

// newNodes returns n Redis buses sharing a fresh prefix: n nodes of a venue.
func newNodes(t *testing.T, n int) []bus.Bus {
	t.Helper()
	url := bustest.RedisURL(t)
	prefix := bustest.KeyPrefix(t, url)
	nodes := make([]bus.Bus, n)
	for i := range nodes {
		b, err := redisbus.New(t.Context(), url, redisbus.Options{Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := b.Close(); err != nil {
				t.Error(err)
			}
		})
		nodes[i] = b
	}
	return nodes
}

func TestContract(t *testing.T) {
	t.Parallel()
	bustest.Run(t, newNodes)
}

func TestPingAndClose(t *testing.T) {
	t.Parallel()
	b := newNodes(t, 1)[0].(*redisbus.Bus)
	if err := b.Ping(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil { // idempotent
		t.Fatal(err)
	}
	// Publishing on a closed bus fails at once.
	if err := b.Publish(t.Context(), "neg:late", []byte("x")); err == nil {
		t.Fatal("published on a closed bus")
	}
	// Subscribing to a closed bus does not hang.
	done := make(chan struct{})
	go func() { b.Subscribe("neg:late", func([]byte) {})(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Subscribe on a closed bus hangs")
	}
}

func TestUnreachableRedactsPassword(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	const pw = "r3dis-Secret"
	for _, url := range []string{
		"redis://:" + pw + "@127.0.0.1:1/0?max_retries=-1",
		"redis://user:" + pw + "@127.0.0.1:1/0?max_retries=-1",
		"redis://user:" + pw + "@127.0.0.1:1/notadb",
		"redis://user:" + pw + "@[::1/0", // not a URL
	} {
		_, err := redisbus.New(ctx, url, redisbus.Options{})
		if err == nil {
			t.Fatalf("New(%s) connected", redisbus.RedactURL(url))
		}
		if strings.Contains(err.Error(), pw) {
			t.Errorf("error shows the password: %v", err)
		}
	}
}

// TestReconnectSignalsLoss: when Redis drops the node's pub/sub connection
// (a real fault: CLIENT KILL), the bus resubscribes and tells each
// subscriber, with a zero-length message, that it may have missed messages;
// then delivery goes on.
func TestReconnectSignalsLoss(t *testing.T) {
	t.Parallel()
	url := bustest.RedisURL(t)
	prefix := bustest.KeyPrefix(t, url)
	b, err := redisbus.New(t.Context(), url, redisbus.Options{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	got := make(chan []byte, 16)
	cancel := b.Subscribe("neg:reconnect", func(data []byte) { got <- data })
	defer cancel()
	rdb, err := redisbus.Client(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	// Only this bus's pub/sub connection: other tests share the server.
	list, err := rdb.ClientList(t.Context()).Result()
	if err != nil {
		t.Fatal(err)
	}
	killed := 0
	for _, line := range strings.Split(list, "\n") {
		if !strings.Contains(line, " name=venue-bus:"+prefix+" ") || !strings.Contains(line, " cmd=subscribe") {
			continue
		}
		for _, f := range strings.Fields(line) {
			if id, ok := strings.CutPrefix(f, "id="); ok {
				if err := rdb.Do(t.Context(), "CLIENT", "KILL", "ID", id).Err(); err != nil {
					t.Fatalf("client kill: %v", err)
				}
				killed++
			}
		}
	}
	if killed == 0 {
		t.Fatalf("no pub/sub connection named venue-bus:%s in CLIENT LIST:\n%s", prefix, list)
	}
	deadline := time.After(10 * time.Second) // go-redis reconnects with its own backoff
	for {
		select {
		case data := <-got:
			if len(data) != 0 {
				continue
			}
			// Delivery resumes after the resubscription.
			if err := b.Publish(context.Background(), "neg:reconnect", []byte("after")); err != nil {
				t.Fatal(err)
			}
			for {
				select {
				case d := <-got:
					if string(d) == "after" {
						return
					}
				case <-deadline:
					t.Fatal("no delivery after the reconnect")
				}
			}
		case <-deadline:
			t.Fatal("no loss signal after the pub/sub connection was killed")
		}
	}
}

// TestWatched: a node sees another node's subscription within a refresh,
// its own at once, and says true until Redis has answered.
func TestWatched(t *testing.T) {
	t.Parallel()
	nodes := newNodes(t, 2)
	a, b := nodes[0].(bus.Watcher), nodes[1].(bus.Watcher)
	until := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * redisbus.WatchRefresh); !cond(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("not within %v: %s", 10*redisbus.WatchRefresh, what)
			}
		}
	}
	if !b.Watched("feed") {
		t.Fatal("false before Redis answered")
	}
	until("B sees nobody on feed", func() bool { return !b.Watched("feed") })
	cancel := nodes[0].Subscribe("feed", func([]byte) {})
	if !a.Watched("feed") {
		t.Fatal("a node's own subscription is not watched at once")
	}
	until("B sees A's subscription", func() bool { return b.Watched("feed") })
	cancel()
	until("B sees A's cancel", func() bool { return !b.Watched("feed") })
}

// TestLocalFirstOnce: a node's own subscribers get its messages once, in
// order (handed over locally, the echo Redis sends back dropped); another
// node gets them once too, without the origin tag; an untagged message
// (a node of an older build) is delivered as it is.
func TestLocalFirstOnce(t *testing.T) {
	t.Parallel()
	url := bustest.RedisURL(t)
	prefix := bustest.KeyPrefix(t, url)
	nodes := make([]*redisbus.Bus, 2)
	for i := range nodes {
		b, err := redisbus.New(t.Context(), url, redisbus.Options{Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		nodes[i] = b
	}
	gotA, gotB := make(chan string, 16), make(chan string, 16)
	defer nodes[0].Subscribe("neg:x", func(d []byte) { gotA <- string(d) })()
	defer nodes[1].Subscribe("neg:x", func(d []byte) { gotB <- string(d) })()
	next := func(ch chan string, who string) string {
		t.Helper()
		select {
		case s := <-ch:
			return s
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no message", who)
			return ""
		}
	}
	ctx := t.Context()
	msgs := []string{"m1", "m2", "m3"}
	for _, m := range msgs {
		if err := nodes[0].Publish(ctx, "neg:x", []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range msgs {
		if s := next(gotB, "other node"); s != m {
			t.Fatalf("other node got %q, want %q", s, m)
		}
	}
	// Redis sent m3 to every subscriber before B saw it, so the publishing
	// node's echoes (if delivered) come before B's marker.
	if err := nodes[1].Publish(ctx, "neg:x", []byte("end")); err != nil {
		t.Fatal(err)
	}
	rdb, err := redisbus.Client(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	if err := rdb.Publish(ctx, prefix+":neg:x", "raw").Err(); err != nil {
		t.Fatal(err)
	}
	want := []string{"m1", "m2", "m3", "end", "raw"}
	for i, w := range want {
		if s := next(gotA, "publishing node"); s != w {
			t.Fatalf("publishing node's message %d: %q, want %q (all: %v)", i, s, w, want)
		}
	}
}
