package webhooks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/venuehq/venue/clock"
	"github.com/venuehq/venue/events"
	"github.com/venuehq/venue/events/eventspg"
	"github.com/venuehq/venue/store/postgres"
	"github.com/venuehq/venue/store/storetest"
	"github.com/venuehq/venue/webhooks"
	"github.com/venuehq/venue/webhooks/webhookspg"
	"github.com/venuehq/venue/webhooks/webhookstest"
)

var t0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

// hit is one request the receiver took.
type hit struct {
	ID   string
	Body map[string]any
	Err  error // the signature check
}

// receiver is a real HTTP receiver: answer decides each answer (it may
// block); every request is verified and sent on hits.
type receiver struct {
	*httptest.Server
	secret string
	clk    clock.Clock
	hits   chan hit
	mu     sync.Mutex
	answer func(n int, r *http.Request) int
	n      int
}

func newReceiver(t *testing.T, clk clock.Clock, answer func(n int, r *http.Request) int) *receiver {
	rc := &receiver{clk: clk, hits: make(chan hit, 1000), answer: answer}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.n++
		n, secret := rc.n, rc.secret
		rc.mu.Unlock()
		h := hit{ID: r.Header.Get("webhook-id"), Err: webhookstest.Verify(secret, r.Header, body, rc.clk.Now())}
		if err := json.Unmarshal(body, &h.Body); err != nil {
			h.Err = err
		} else if h.Body["id"] != h.ID {
			h.Err = fmt.Errorf("body id %v, header %s", h.Body["id"], h.ID)
		}
		rc.hits <- h
		w.WriteHeader(rc.answer(n, r))
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) next(t *testing.T) hit {
	t.Helper()
	select {
	case h := <-rc.hits:
		if h.Err != nil {
			t.Fatalf("delivery %s: %v", h.ID, h.Err)
		}
		return h
	case <-time.After(20 * time.Second):
		t.Fatal("no delivery within 20 s")
	}
	return hit{}
}

func (rc *receiver) none(t *testing.T) {
	t.Helper()
	select {
	case h := <-rc.hits:
		t.Fatalf("unexpected delivery %s", h.ID)
	default:
	}
}

// node is one venue node's webhooks: its store and sender.
type node struct {
	store  webhooks.Store
	events events.Store
	sender *webhooks.Sender
}

func newNode(s webhooks.Store, ev events.Store, clk clock.Clock, g webhooks.Guard) *node {
	return &node{store: s, events: ev, sender: &webhooks.Sender{Store: s, Clock: clk, Client: g.Client()}}
}

func (n *node) set(t *testing.T, agent, url string) string {
	t.Helper()
	w := webhooks.Webhook{AgentID: agent, URL: url, Secret: webhooks.NewSecret(), CreatedAt: t0}
	if err := n.store.Put(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	return w.SecretString()
}

func (n *node) emit(t *testing.T, agent string, i int) events.Event {
	t.Helper()
	e := events.New(agent, "neg_1", json.RawMessage(fmt.Sprintf(`{"type":"negotiation_message","negotiation_id":"neg_1","seq":%d}`, i)), t0)
	if err := n.events.Append(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	return e
}

func (n *node) attempts(t *testing.T, agent string) []webhooks.Attempt {
	t.Helper()
	as, err := n.store.Attempts(context.Background(), agent, 100)
	if err != nil {
		t.Fatal(err)
	}
	return as
}

var private = webhooks.Guard{AllowPrivate: true}

func memNode(clk clock.Clock) *node {
	ev := events.NewMemory()
	return newNode(webhooks.NewMemory(ev), ev, clk, private)
}

// pgSchema migrates a fresh schema and returns a node opener on it: each
// call is a node of its own (its own pool), as after a restart.
func pgSchema(t *testing.T, clk clock.Clock) func() *node {
	url := storetest.DatabaseURL(t)
	schema := storetest.Schema(t, url)
	open := func() *postgres.Store {
		s, err := postgres.New(t.Context(), url, postgres.WithSchema(schema), postgres.WithMaxConns(8))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		return s
	}
	if _, err := open().Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	return func() *node {
		s := open()
		return newNode(webhookspg.New(s.Pool()), eventspg.New(s.Pool()), clk, private)
	}
}

// TestDeliverSigned: an event reaches a real receiver once, signed as
// Standard Webhooks verify it, its body the event log's.
func TestDeliverSigned(t *testing.T) {
	clk := clock.NewFake(t0)
	n := memNode(clk)
	rc := newReceiver(t, clk, func(int, *http.Request) int { return http.StatusNoContent })
	rc.secret = n.set(t, "agt_a", rc.URL+"/hook")
	e := n.emit(t, "agt_a", 1)
	if got := n.sender.Step(t.Context()); got != 1 {
		t.Fatalf("Step made %d attempts", got)
	}
	h := rc.next(t)
	want, _ := json.Marshal(e)
	var wantMap map[string]any
	_ = json.Unmarshal(want, &wantMap)
	if h.ID != e.ID || fmt.Sprint(h.Body) != fmt.Sprint(wantMap) || h.Body["negotiation_id"] != "neg_1" {
		t.Fatalf("delivered %s %v, want %s", h.ID, h.Body, want)
	}
	if got := n.sender.Step(t.Context()); got != 0 {
		t.Fatalf("delivered again: %d", got)
	}
	as := n.attempts(t, "agt_a")
	if len(as) != 1 || as[0].Result != webhooks.ResultDelivered || as[0].Status != 204 || as[0].N != 1 {
		t.Fatalf("attempts %+v", as)
	}
	// A wrong secret fails the check (the test's verifier can fail).
	if err := webhookstest.Verify(webhooks.Webhook{Secret: webhooks.NewSecret()}.SecretString(), http.Header{
		"Webhook-Id": {e.ID}, "Webhook-Timestamp": {strconv.FormatInt(t0.Unix(), 10)},
		"Webhook-Signature": {webhooks.Sign([]byte("other"), e.ID, t0, want)}}, want, t0); err == nil {
		t.Fatal("a signature with another key verified")
	}
}

// TestRetryAfter500: a 500 is retried 5 s later (fake clock), with the
// same webhook-id, and the retry's 200 ends it.
func TestRetryAfter500(t *testing.T) {
	clk := clock.NewFake(t0)
	n := memNode(clk)
	rc := newReceiver(t, clk, func(i int, _ *http.Request) int {
		if i == 1 {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	})
	rc.secret = n.set(t, "agt_a", rc.URL)
	e := n.emit(t, "agt_a", 1)
	n.sender.Step(t.Context())
	if h := rc.next(t); h.ID != e.ID {
		t.Fatalf("first attempt %s", h.ID)
	}
	as := n.attempts(t, "agt_a")
	if len(as) != 1 || as[0].Status != 500 || as[0].Result != webhooks.ResultRetrying || !as[0].Next.Equal(t0.Add(5*time.Second)) {
		t.Fatalf("after 500: %+v", as)
	}
	clk.Advance(5*time.Second - time.Millisecond)
	if got := n.sender.Step(t.Context()); got != 0 {
		t.Fatalf("retried early: %d", got)
	}
	clk.Advance(time.Millisecond)
	n.sender.Step(t.Context())
	if h := rc.next(t); h.ID != e.ID {
		t.Fatalf("retry %s", h.ID)
	}
	if as := n.attempts(t, "agt_a"); len(as) != 2 || as[0].Result != webhooks.ResultDelivered || as[0].N != 2 {
		t.Fatalf("after the retry: %+v", as)
	}
}

// TestRetryAfterTimeout: no answer within 10 s (of the fake clock) is a
// failure, retried.
func TestRetryAfterTimeout(t *testing.T) {
	clk := clock.NewFake(t0)
	n := memNode(clk)
	release := make(chan struct{})
	rc := newReceiver(t, clk, func(i int, r *http.Request) int {
		if i == 1 {
			select { // hang until the sender gives up
			case <-r.Context().Done():
			case <-release:
			}
		}
		return http.StatusOK
	})
	defer close(release)
	rc.secret = n.set(t, "agt_a", rc.URL)
	e := n.emit(t, "agt_a", 1)
	done := make(chan int)
	go func() { done <- n.sender.Step(t.Context()) }()
	rc.next(t)
	select {
	case <-done:
		t.Fatal("the attempt ended before its timeout")
	default:
	}
	clk.Advance(webhooks.Timeout)
	<-done
	as := n.attempts(t, "agt_a")
	if len(as) != 1 || as[0].Status != 0 || !strings.Contains(as[0].Error, "timeout") || as[0].Result != webhooks.ResultRetrying ||
		!as[0].Next.Equal(t0.Add(webhooks.Timeout+5*time.Second)) {
		t.Fatalf("after the timeout: %+v", as)
	}
	clk.Advance(5 * time.Second)
	n.sender.Step(t.Context())
	if h := rc.next(t); h.ID != e.ID {
		t.Fatalf("retry of %s", h.ID)
	}
	if as := n.attempts(t, "agt_a"); as[0].Result != webhooks.ResultDelivered {
		t.Fatalf("after the retry: %+v", as)
	}
}

// TestScheduleTo24h: a receiver that always fails gets retries with
// growing delays, the first within 10 s, the last at least 24 h after the
// first attempt; then the delivery is given up.
func TestScheduleTo24h(t *testing.T) {
	clk := clock.NewFake(t0)
	n := memNode(clk)
	rc := newReceiver(t, clk, func(int, *http.Request) int { return http.StatusServiceUnavailable })
	rc.secret = n.set(t, "agt_a", rc.URL)
	n.emit(t, "agt_a", 1)
	var times []time.Time
	for range 20 {
		if n.sender.Step(t.Context()) == 0 {
			break
		}
		rc.next(t)
		times = append(times, clk.Now())
		as := n.attempts(t, "agt_a")
		if as[0].Result != webhooks.ResultRetrying {
			break
		}
		clk.Set(as[0].Next)
	}
	if len(times) != len(webhooks.Retries)+1 {
		t.Fatalf("%d attempts", len(times))
	}
	if d := times[1].Sub(times[0]); d > 10*time.Second {
		t.Fatalf("first retry after %s", d)
	}
	for i := 2; i < len(times); i++ {
		if times[i].Sub(times[i-1]) < times[i-1].Sub(times[i-2]) {
			t.Fatalf("delays shrink at attempt %d: %v", i+1, times)
		}
	}
	if d := times[len(times)-1].Sub(times[0]); d < 24*time.Hour {
		t.Fatalf("last retry %s after the first attempt", d)
	}
	if as := n.attempts(t, "agt_a"); as[0].Result != webhooks.ResultFailed {
		t.Fatalf("last attempt %+v", as[0])
	}
	clk.Advance(100 * time.Hour)
	if n.sender.Step(t.Context()) != 0 {
		t.Fatal("a given-up delivery was attempted again")
	}
}

// Test410Disables: 410 Gone disables the webhook: no more deliveries.
func Test410Disables(t *testing.T) {
	clk := clock.NewFake(t0)
	n := memNode(clk)
	rc := newReceiver(t, clk, func(int, *http.Request) int { return http.StatusGone })
	rc.secret = n.set(t, "agt_a", rc.URL)
	n.emit(t, "agt_a", 1)
	n.sender.Step(t.Context())
	rc.next(t)
	w, err := n.store.Get(t.Context(), "agt_a")
	if err != nil || w.DisabledAt.IsZero() {
		t.Fatalf("webhook %+v, %v", w, err)
	}
	if as := n.attempts(t, "agt_a"); as[0].Result != webhooks.ResultDisabled || as[0].Status != 410 {
		t.Fatalf("attempt %+v", as[0])
	}
	n.emit(t, "agt_a", 2)
	clk.Advance(time.Hour)
	if n.sender.Step(t.Context()) != 0 {
		t.Fatal("a disabled webhook got an attempt")
	}
	rc.none(t)
}

// TestRestartMidRetry (Postgres): a node that failed an attempt, and a
// node killed in the middle of one, are replaced by a new node on the
// same store, which delivers both.
func TestRestartMidRetry(t *testing.T) {
	clk := clock.NewFake(t0)
	open := pgSchema(t, clk)
	hang := make(chan struct{})
	rc := newReceiver(t, clk, func(i int, r *http.Request) int {
		switch i {
		case 1:
			return http.StatusInternalServerError
		case 2:
			select {
			case <-hang:
			case <-r.Context().Done():
			}
		}
		return http.StatusOK
	})
	defer close(hang)
	a := open()
	rc.secret = a.set(t, "agt_a", rc.URL)
	e1 := a.emit(t, "agt_a", 1)
	a.sender.Step(t.Context()) // 500: retry due at +5 s
	rc.next(t)
	e2 := a.emit(t, "agt_a", 2)
	ctx, kill := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { a.sender.Step(ctx); close(done) }() // takes e2, hangs
	if h := rc.next(t); h.ID != e2.ID {
		t.Fatalf("second attempt %s", h.ID)
	}
	kill() // the node dies mid-attempt: nothing recorded
	<-done

	b := open() // the node that replaces it
	clk.Advance(5 * time.Second)
	if got := b.sender.Step(t.Context()); got != 1 {
		t.Fatalf("new node's first pass made %d attempts (want e1's retry only; e2 is leased)", got)
	}
	if h := rc.next(t); h.ID != e1.ID {
		t.Fatalf("retry of %s", h.ID)
	}
	clk.Advance(webhooks.Lease)
	b.sender.Step(t.Context())
	if h := rc.next(t); h.ID != e2.ID {
		t.Fatalf("after the lease: %s", h.ID)
	}
	as := b.attempts(t, "agt_a")
	if len(as) != 3 || as[0].EventID != e2.ID || as[0].N != 2 || as[0].Result != webhooks.ResultDelivered || as[1].Result != webhooks.ResultDelivered {
		t.Fatalf("attempts %+v", as)
	}
	if b.sender.Step(t.Context()) != 0 {
		t.Fatal("delivered again")
	}
}

// TestTwoNodesOnce (Postgres): two nodes passing at once deliver each
// event exactly once.
func TestTwoNodesOnce(t *testing.T) {
	clk := clock.NewFake(t0)
	open := pgSchema(t, clk)
	rc := newReceiver(t, clk, func(int, *http.Request) int { return http.StatusOK })
	a, b := open(), open()
	rc.secret = a.set(t, "agt_a", rc.URL)
	const total = 40
	want := map[string]bool{}
	got := map[string]int{}
	both := func() { // one pass of each node, at once
		var wg sync.WaitGroup
		for _, n := range []*node{a, b} {
			wg.Add(1)
			go func() { defer wg.Done(); n.sender.Step(t.Context()) }()
		}
		wg.Wait()
		for len(rc.hits) > 0 {
			got[rc.next(t).ID]++
		}
	}
	for i := range total {
		n := a
		if i%2 == 1 {
			n = b
		}
		want[n.emit(t, "agt_a", i).ID] = true
		if i%5 == 4 {
			both()
		}
	}
	for range 3 {
		both()
	}
	for id := range want {
		if got[id] != 1 {
			t.Fatalf("event %s delivered %d times", id, got[id])
		}
	}
	if len(got) != total {
		t.Fatalf("%d events delivered, want %d", len(got), total)
	}
}

// flipResolver answers public first, loopback after: DNS rebinding.
type flipResolver struct {
	mu sync.Mutex
	n  int
}

func (f *flipResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	if f.n == 1 {
		return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil
	}
	return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
}

// TestGuard: only https to public addresses unless AllowPrivate; a name
// resolving to loopback is refused when set and at each connection.
func TestGuard(t *testing.T) {
	ctx := t.Context()
	strict := webhooks.Guard{}
	for _, u := range []string{
		"http://93.184.216.34/", "https://localhost/hook", "https://127.0.0.1/", "https://[::1]/", "https://10.1.2.3/",
		"https://192.168.0.1/", "https://169.254.169.254/latest", "https://[fe80::1]/", "https://100.64.0.1/", "https://0.0.0.0/",
		"https://[::ffff:127.0.0.1]/", "https://user:pw@93.184.216.34/", "ftp://93.184.216.34/", "/relative", "https://",
		"https://93.184.216.34/#frag", "https://" + strings.Repeat("a", 2050) + ".com/",
	} {
		if err := strict.CheckURL(ctx, u); err == nil {
			t.Errorf("CheckURL(%.60q) took it", u)
		}
	}
	for _, u := range []string{"https://93.184.216.34/hook", "https://[2606:2800:220:1::1]:8443/x?y=1"} {
		if err := strict.CheckURL(ctx, u); err != nil {
			t.Errorf("CheckURL(%q): %v", u, err)
		}
	}
	for _, u := range []string{"http://localhost:8080/hook", "http://10.0.0.1/", "https://127.0.0.1/"} {
		if err := private.CheckURL(ctx, u); err != nil {
			t.Errorf("AllowPrivate CheckURL(%q): %v", u, err)
		}
	}

	// Rebinding: public when set, loopback when dialled.
	clk := clock.NewFake(t0)
	ev := events.NewMemory()
	g := webhooks.Guard{Resolver: &flipResolver{}}
	n := newNode(webhooks.NewMemory(ev), ev, clk, g)
	rc := newReceiver(t, clk, func(int, *http.Request) int { return http.StatusOK })
	port := rc.URL[strings.LastIndex(rc.URL, ":")+1:]
	u := "https://rebind.example:" + port + "/"
	if err := g.CheckURL(ctx, u); err != nil {
		t.Fatalf("public at registration: %v", err)
	}
	rc.secret = n.set(t, "agt_a", u)
	n.emit(t, "agt_a", 1)
	n.sender.Step(ctx)
	// And a name the system resolves to loopback, dialled straight.
	n2 := newNode(webhooks.NewMemory(ev), ev, clk, strict)
	n2.set(t, "agt_b", "https://localhost:"+port+"/")
	n2.emit(t, "agt_b", 1)
	n2.sender.Step(ctx)
	for _, c := range []struct {
		n     *node
		agent string
	}{{n, "agt_a"}, {n2, "agt_b"}} {
		as := c.n.attempts(t, c.agent)
		if len(as) != 1 || as[0].Status != 0 || !strings.Contains(as[0].Error, "refused") || as[0].Result != webhooks.ResultRetrying {
			t.Fatalf("%s: attempts %+v", c.agent, as)
		}
	}
	rc.none(t)
}

// TestGuardSchemeMessage: a refused scheme is told what the venue takes:
// https, or with AllowPrivate http too (an ftp URL was once told "url must
// be https" by a venue that took http).
func TestGuardSchemeMessage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		g    webhooks.Guard
		want string
	}{
		{webhooks.Guard{}, "url must be https"},
		{webhooks.Guard{AllowPrivate: true}, "url must be http or https"},
	} {
		if err := tc.g.CheckURL(t.Context(), "ftp://93.184.216.34/hook"); err == nil || err.Error() != tc.want {
			t.Errorf("AllowPrivate %v: %v, want %q", tc.g.AllowPrivate, err, tc.want)
		}
	}
}
