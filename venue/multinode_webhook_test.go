package venue_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/venue"
	"github.com/venuehq/venue/webhooks/webhookstest"
)

// TestMultiNodeWebhook (Postgres + Redis): events committed on two nodes
// reach one agent's webhook once each; an event whose attempt failed is
// retried by a node started after both were stopped (PROTOCOL.md
// "Webhooks": queued in the store, once per event across the nodes).
func TestMultiNodeWebhook(t *testing.T) {
	t.Parallel()
	c := newMNCluster(t, mnStart)
	private := func(cfg *venue.Config) { cfg.WebhooksAllowPrivate = true }
	a, b := c.nodeWith("A", private), c.nodeWith("B", private)
	brand := a.register(c, "Brand Co", negotiation.RoleBrand)
	bouncer := b.register(c, "Hook Bouncer", negotiation.RoleBouncer)

	var mu sync.Mutex
	var secret string
	failNext := false
	got := make(chan string, 100)
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		sec, fail := secret, failNext
		failNext = false
		mu.Unlock()
		if err := webhookstest.Verify(sec, r.Header, body, c.clock.Now()); err != nil {
			t.Errorf("webhook: %v", err)
		}
		got <- r.Header.Get("webhook-id")
		if fail {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer rc.Close()
	var hook map[string]any
	if code := a.do("PUT", "/v1/agents/me/webhook", bouncer.key, map[string]any{"url": rc.URL, "events": []string{"negotiation_requested"}}, &hook); code != http.StatusOK {
		t.Fatalf("PUT webhook: %d %v", code, hook)
	}
	mu.Lock()
	secret = hook["secret"].(string)
	mu.Unlock()
	next := func() string {
		t.Helper()
		select {
		case id := <-got:
			return id
		case <-time.After(20 * time.Second):
			t.Fatal("no webhook within 20 s")
		}
		return ""
	}
	deliveries := func(n *mnNode) []map[string]any {
		t.Helper()
		var m struct{ Deliveries []map[string]any }
		if code := n.do("GET", "/v1/agents/me/webhook/deliveries?limit=100", bouncer.key, nil, &m); code != http.StatusOK {
			t.Fatalf("deliveries: %d", code)
		}
		return m.Deliveries
	}
	// atLeast polls the list until it has k attempts (each is recorded
	// just after its answer).
	atLeast := func(nd *mnNode, k int) []map[string]any {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			ds := deliveries(nd)
			if len(ds) >= k {
				return ds
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d attempts listed after 20 s, want %d", len(ds), k)
			}
			time.Sleep(5 * time.Millisecond) // polling a condition, not a clock
		}
	}

	// Requests created through both nodes' lobbies: each committed (and
	// its event appended) by the node that took it.
	lobbies := []*mnSock{a.lobby(brand), b.lobby(brand)}
	const n = 6
	seen := map[string]int{}
	for i := range n {
		l := lobbies[i%2]
		l.send(map[string]any{"type": "submit_offer", "id": fmt.Sprint("o", i), "to": bouncer.id, "offer": map[string]any{"title": fmt.Sprint("offer ", i)}})
		off := l.expect("offer_submitted")
		l.send(map[string]any{"type": "create_negotiation", "id": fmt.Sprint("c", i), "offer_id": off["offer_id"]})
		l.expect("negotiation_created")
		seen[next()]++
	}
	ds := atLeast(b, n)
	if len(seen) != n || len(ds) != n {
		t.Fatalf("%d events delivered, %d attempts listed; want %d of each", len(seen), len(ds), n)
	}
	for _, d := range ds {
		if d["result"] != "delivered" || d["attempt"] != float64(1) || seen[d["event_id"].(string)] != 1 {
			t.Fatalf("delivery %v (seen %v)", d, seen)
		}
	}

	// A failed attempt, then every node stops; a new node retries it.
	mu.Lock()
	failNext = true
	mu.Unlock()
	l := lobbies[0]
	l.send(map[string]any{"type": "submit_offer", "id": "of", "to": bouncer.id, "offer": map[string]any{"title": "offer f"}})
	off := l.expect("offer_submitted")
	l.send(map[string]any{"type": "create_negotiation", "id": "cf", "offer_id": off["offer_id"]})
	l.expect("negotiation_created")
	failed := next()
	if ds := atLeast(a, n+1); ds[0]["event_id"] != failed || ds[0]["result"] != "retrying" || ds[0]["status"] != float64(500) {
		t.Fatalf("after the 500: %v", ds[0])
	}
	a.stop()
	b.stop()
	cn := c.nodeWith("C", private)
	var retried string
	for retried == "" { // move the clock until C's sender passes after the retry is due
		c.clock.Advance(time.Second)
		select {
		case retried = <-got:
		case <-time.After(50 * time.Millisecond):
		}
	}
	if retried != failed {
		t.Fatalf("retried %s, want %s", retried, failed)
	}
	if ds := atLeast(cn, n+2); ds[0]["event_id"] != failed || ds[0]["result"] != "delivered" || ds[0]["attempt"] != float64(2) {
		t.Fatalf("the retry: %v", ds[0])
	}
	select {
	case id := <-got:
		t.Fatalf("another delivery: %s", id)
	default:
	}
}
