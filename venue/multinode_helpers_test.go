package venue_test

// Helpers of the multi-node tests (multinode_test.go): a cluster of venue
// nodes in this process sharing one Postgres schema and one Redis prefix,
// and bare WebSocket/HTTP clients. Names start with mn so they stay apart
// from the other tests' helpers of this package.

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/venuehq/venue/bus/bustest"
	"github.com/venuehq/venue/bus/redisbus"
	"github.com/venuehq/venue/clock"
	"github.com/venuehq/venue/events/eventspg"
	"github.com/venuehq/venue/grants"
	hspostgres "github.com/venuehq/venue/handshake/postgres"
	"github.com/venuehq/venue/idempotency/idempg"
	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/receiptlog/pglog"
	"github.com/venuehq/venue/store/postgres"
	"github.com/venuehq/venue/store/storetest"
	"github.com/venuehq/venue/timers/redistimers"
	"github.com/venuehq/venue/venue"
	"github.com/venuehq/venue/webhooks/webhookspg"
)

// mnCluster is the shared backends of a venue run as several nodes: one
// Postgres schema (migrated once), one Redis prefix, one fake clock (the
// nodes' synchronised wall clock; only the test moves it).
type mnCluster struct {
	t        *testing.T
	dbURL    string
	schema   string
	redisURL string
	prefix   string
	clock    *clock.Fake
}

func newMNCluster(t *testing.T, start time.Time) *mnCluster {
	t.Helper()
	c := &mnCluster{t: t, clock: clock.NewFake(start)}
	c.dbURL = storetest.DatabaseURL(t)
	c.redisURL = bustest.RedisURL(t)
	c.schema = storetest.Schema(t, c.dbURL)
	c.prefix = bustest.KeyPrefix(t, c.redisURL)
	s, err := postgres.New(t.Context(), c.dbURL, postgres.WithSchema(c.schema))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	return c
}

// forgetTimers deletes the Redis sorted set of due times: after it only the
// store knows the clocks.
func (c *mnCluster) forgetTimers() {
	c.t.Helper()
	opts, err := redis.ParseURL(c.redisURL)
	if err != nil {
		c.t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	if err := rdb.Del(c.t.Context(), c.prefix+":timers").Err(); err != nil {
		c.t.Fatal(err)
	}
}

// mnNode is one venue server on a loopback port with its own Postgres pool,
// Redis bus and Redis timers.
type mnNode struct {
	t    *testing.T
	name string
	url  string // http://127.0.0.1:port
	stop func() // idempotent: shuts the server down, then closes its backends
	srv  *venue.Server
}

func (c *mnCluster) node(name string) *mnNode { return c.nodeWith(name, nil) }

// nodeWith is node with mut applied to the node's venue.Config.
func (c *mnCluster) nodeWith(name string, mut func(*venue.Config)) *mnNode {
	c.t.Helper()
	n, err := c.startNode(name, mut)
	if err != nil {
		c.t.Fatalf("node %s: %v", name, err)
	}
	return n
}

// startNode is nodeWith returning the error of a node that did not start
// (its backends closed).
func (c *mnCluster) startNode(name string, mut func(*venue.Config)) (*mnNode, error) {
	t := c.t
	t.Helper()
	ctx := t.Context()
	st, err := postgres.New(ctx, c.dbURL, postgres.WithSchema(c.schema))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("VENUE_TEST_LOG") == "1" {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("node", name)
	}
	b, err := redisbus.New(ctx, c.redisURL, redisbus.Options{Prefix: c.prefix, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	tm, err := redistimers.New(ctx, c.redisURL, redistimers.Options{Prefix: c.prefix, Clock: c.clock, Poll: 10 * time.Millisecond, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	cfg := venue.Config{
		Addr: "127.0.0.1:0", Store: st, Handshake: hspostgres.New(st.Pool()), Events: eventspg.New(st.Pool()), Webhooks: webhookspg.New(st.Pool()), Idempotency: idempg.New(st.Pool()), Bus: b, Timers: tm, Clock: c.clock, Logger: log, ReceiptLog: pglog.New(st.Pool()),
		Backend: "postgres+redis", RegisterPerMinute: 1e6,
		Limits: venue.Limits{FramesPerSecond: 1e6, FrameBurst: 1e6},
		// One test client opens hundreds of sockets and requests.
		Caps:        venue.Caps{SocketsPerAddress: -1, ObserversPerNegotiation: -1},
		LobbyQuotas: venue.LobbyQuotas{PendingPerPair: 1000, PendingPerBouncer: 1000},
	}
	if mut != nil {
		mut(&cfg)
	}
	srv, err := venue.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- srv.ServeListener(sctx, ln, ready) }()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		cancel()
		_ = tm.Close()
		_ = b.Close()
		st.Close()
		return nil, err
	}
	var once sync.Once
	n := &mnNode{t: t, name: name, url: "http://" + addr, srv: srv}
	n.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("node %s: serve: %v", name, err)
			}
			_ = tm.Close()
			_ = b.Close()
			st.Close()
		})
	}
	t.Cleanup(n.stop)
	return n, nil
}

// do makes a REST call to the node and decodes the JSON answer into out
// (if not nil); it returns the status.
func (n *mnNode) do(method, path, key string, body, out any) int {
	n.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(n.t.Context(), method, n.url+path, rd)
	if err != nil {
		n.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := apiClient(n.t).Do(req)
	if err != nil {
		n.t.Fatalf("%s %s on %s: %v", method, path, n.name, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			n.t.Fatalf("%s %s: %v: %q", method, path, err, raw)
		}
	}
	return resp.StatusCode
}

// mnAgent is a registered agent whose principal granted it everything.
type mnAgent struct {
	id, key string
}

// register registers an agent with a principal key on the node and uploads
// an unlimited grant valid for a day of the cluster's clock.
func (n *mnNode) register(c *mnCluster, name, role string) mnAgent {
	n.t.Helper()
	pub, priv, err := grants.GenerateKey()
	if err != nil {
		n.t.Fatal(err)
	}
	var reg map[string]string
	if code := n.do("POST", "/v1/register", "", map[string]any{"name": name, "role": role, "principal_key": grants.PublicJWK(pub)}, &reg); code != http.StatusCreated {
		n.t.Fatalf("register %s: %d %v", name, code, reg)
	}
	a := mnAgent{id: reg["agent_id"], key: reg["api_key"]}
	n.grant(c, a, priv)
	return a
}

func (n *mnNode) grant(c *mnCluster, a mnAgent, principal ed25519.PrivateKey) {
	n.t.Helper()
	now := c.clock.Now()
	tok, err := grants.SignGrant(principal, grants.GrantClaims{
		Subject: a.id, Audience: "venue", IssuedAt: now, ExpiresAt: now.Add(24 * time.Hour),
	})
	if err != nil {
		n.t.Fatal(err)
	}
	var out map[string]any
	if code := n.do("POST", "/v1/grants", a.key, map[string]any{"token": tok}, &out); code != http.StatusCreated {
		n.t.Fatalf("upload grant: %d %v", code, out)
	}
}

func (n *mnNode) dial(name, path string) *mnSock {
	n.t.Helper()
	s, resp, err := dialSock(n.t, name, "ws"+strings.TrimPrefix(n.url, "http")+path)
	if err != nil {
		n.t.Fatalf("%s: dial %s on %s: %v (%v)", name, strings.Split(path, "?")[0], n.name, err, resp)
	}
	return s
}

func (n *mnNode) lobby(a mnAgent) *mnSock {
	return n.dial("lobby of "+a.id, "/v1/agents/"+a.id+"/ws?token="+a.key)
}

// room opens a party's negotiation socket (query: "" or "&since=N") and
// reads its negotiation_started.
func (n *mnNode) room(name string, a mnAgent, negID, query string) (*mnSock, map[string]any) {
	n.t.Helper()
	s := n.dial(name, "/v1/negotiations/"+negID+"/ws?token="+a.key+query)
	return s, s.expect(negotiation.TypeNegotiationStarted)
}

// observe opens an observer socket and reads its negotiation_started.
func (n *mnNode) observe(name, negID string) *mnSock {
	n.t.Helper()
	s := n.dial(name, "/v1/negotiations/"+negID+"/ws/observe")
	s.expect(negotiation.TypeNegotiationStarted)
	return s
}

// mnMatch runs the lobby: the brand (lobby socket bl) offers to the bouncer
// and asks for a negotiation; the bouncer (lobby socket kl, perhaps on
// another node) gets the request and accepts it. It returns the id.
func mnMatch(t *testing.T, bl, kl *mnSock, bouncer mnAgent, tag string) string {
	t.Helper()
	bl.send(map[string]any{"type": "submit_offer", "id": "o-" + tag, "to": bouncer.id,
		"offer": map[string]any{"title": "Spring launch " + tag, "brief": "Two sends in the primary slot"}})
	off := bl.expect("offer_submitted")
	bl.send(map[string]any{"type": "create_negotiation", "id": "c-" + tag, "offer_id": off["offer_id"]})
	negID := bl.expect("negotiation_created")["negotiation_id"].(string)
	if req := kl.expect("negotiation_requested"); req["negotiation_id"] != negID {
		t.Fatalf("bouncer was asked for %v, brand created %s", req["negotiation_id"], negID)
	}
	kl.send(map[string]any{"type": "accept_negotiation", "id": "a-" + tag, "negotiation_id": negID})
	kl.expect("negotiation_accepted")
	if acc := bl.expect("negotiation_accepted"); acc["negotiation_id"] != negID {
		t.Fatalf("brand told of %v", acc["negotiation_id"])
	}
	return negID
}

// mnTranscript reads GET /v1/negotiations/{id}/transcript from a node,
// checks the hash chain and returns the entries with each frame decoded.
func mnTranscript(t *testing.T, n *mnNode, negID string) ([]negotiation.Entry, []map[string]any) {
	t.Helper()
	var tr struct {
		Entries  []negotiation.Entry `json:"entries"`
		LastSeq  int64               `json:"last_seq"`
		HeadHash string              `json:"head_hash"`
	}
	if code := n.do("GET", "/v1/negotiations/"+negID+"/transcript", "", nil, &tr); code != http.StatusOK {
		t.Fatalf("transcript of %s on %s: %d", negID, n.name, code)
	}
	if head := storetest.VerifyChain(t, tr.Entries); head != tr.HeadHash || int64(len(tr.Entries)) != tr.LastSeq {
		t.Fatalf("transcript of %s: head %s, %d entries; answer says %s, last seq %d", negID, head, len(tr.Entries), tr.HeadHash, tr.LastSeq)
	}
	frames := make([]map[string]any, len(tr.Entries))
	for i, e := range tr.Entries {
		if err := json.Unmarshal(e.Frame, &frames[i]); err != nil {
			t.Fatal(err)
		}
	}
	return tr.Entries, frames
}

// mnTypes lists the transcript frames as type or type/frame_type.
func mnTypes(frames []map[string]any) []string {
	out := make([]string, len(frames))
	for i, f := range frames {
		out[i] = fmt.Sprint(f["type"])
		if ft, ok := f["frame_type"]; ok {
			out[i] += "/" + fmt.Sprint(ft)
		}
	}
	return out
}

func mnInt(v any) int {
	f, _ := v.(float64)
	return int(f)
}

// mnTime parses a wire time (RFC 3339 with milliseconds).
func mnTime(t *testing.T, v any) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339Nano, fmt.Sprint(v))
	if err != nil {
		t.Fatalf("time %v: %v", v, err)
	}
	return at
}
