package venue_test

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
	"testing"
	"time"

	"github.com/venuehq/venue/clock"
	"github.com/venuehq/venue/grants"
	"github.com/venuehq/venue/venue"
)

// e2eStart is the fake clock's reading when a test venue starts.
var e2eStart = time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)

// e2eVenue is a real venue server on a loopback port with a fake clock.
type e2eVenue struct {
	t     testing.TB
	url   string // http://127.0.0.1:port
	clock *clock.Fake
	srv   *venue.Server
}

func newE2E(t testing.TB, mut ...func(*venue.Config)) *e2eVenue {
	t.Helper()
	fc := clock.NewFake(e2eStart)
	cfg := venue.Config{Addr: "127.0.0.1:0", AdminAddr: "127.0.0.1:0", Clock: fc, Logger: slog.New(slog.NewTextHandler(e2eLogOut(), nil))}
	for _, m := range mut {
		m(&cfg)
	}
	srv, err := venue.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- srv.ServeListener(ctx, ln, ready) }()
	addr := <-ready
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return &e2eVenue{t: t, url: "http://" + addr, clock: fc, srv: srv}
}

// do makes a REST call and decodes the JSON answer.
func (v *e2eVenue) do(method, path, key string, body any) (int, map[string]any) {
	v.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		rd = bytes.NewReader(j)
	}
	req, _ := http.NewRequest(method, v.url+path, rd)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := apiClient(v.t).Do(req)
	if err != nil {
		v.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var m map[string]any
	raw, _ := io.ReadAll(resp.Body)
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &m); err != nil {
			v.t.Fatalf("%s %s: body is not JSON: %q", method, path, raw)
		}
	}
	return resp.StatusCode, m
}

type e2eAgent struct {
	id, key, role string
	principal     ed25519.PrivateKey
}

// register registers an agent whose principal granted it everything (no
// limits, 24 hours): the tests of the room rules are not about grants.
func (v *e2eVenue) register(name, role string) e2eAgent {
	v.t.Helper()
	a := v.registerBare(name, role)
	v.grant(a, grants.Scope{})
	return a
}

// registerBare registers an agent with a principal key and no grant.
func (v *e2eVenue) registerBare(name, role string) e2eAgent {
	v.t.Helper()
	pub, priv, err := grants.GenerateKey()
	if err != nil {
		v.t.Fatal(err)
	}
	code, m := v.do("POST", "/v1/register", "", map[string]any{"name": name, "role": role, "principal_key": grants.PublicJWK(pub)})
	if code != http.StatusCreated {
		v.t.Fatalf("register %s: %d %v", name, code, m)
	}
	return e2eAgent{id: m["agent_id"].(string), key: m["api_key"].(string), role: role, principal: priv}
}

// registerNoKey registers an agent without a principal key.
func (v *e2eVenue) registerNoKey(name, role string) e2eAgent {
	v.t.Helper()
	code, m := v.do("POST", "/v1/register", "", map[string]any{"name": name, "role": role})
	if code != http.StatusCreated {
		v.t.Fatalf("register %s: %d %v", name, code, m)
	}
	return e2eAgent{id: m["agent_id"].(string), key: m["api_key"].(string), role: role}
}

// grant has a's principal sign a grant with scope and uploads it.
func (v *e2eVenue) grant(a e2eAgent, scope grants.Scope) string {
	v.t.Helper()
	now := v.clock.Now()
	tok, err := grants.SignGrant(a.principal, grants.GrantClaims{
		Subject: a.id, Audience: "venue", IssuedAt: now, ExpiresAt: now.Add(24 * time.Hour), Scope: scope,
	})
	if err != nil {
		v.t.Fatal(err)
	}
	code, m := v.do("POST", "/v1/grants", a.key, map[string]any{"token": tok})
	if code != http.StatusCreated {
		v.t.Fatalf("upload grant: %d %v", code, m)
	}
	return m["jti"].(string)
}

func (v *e2eVenue) dial(path string) *e2eConn {
	v.t.Helper()
	c, resp, err := v.tryDial(path)
	if err != nil {
		v.t.Fatalf("dial %s: %v (%v)", path, err, resp)
	}
	return c
}

func (v *e2eVenue) tryDial(path string) (*e2eConn, *http.Response, error) {
	name := path
	if i := strings.IndexByte(name, '?'); i >= 0 {
		name = name[:i]
	}
	return dialSock(v.t, name, "ws"+strings.TrimPrefix(v.url, "http")+path)
}

func (v *e2eVenue) lobby(a e2eAgent) *e2eConn {
	return v.dial("/v1/agents/" + a.id + "/ws?token=" + a.key)
}

func (v *e2eVenue) room(a e2eAgent, negID string, query string) *e2eConn {
	return v.dial("/v1/negotiations/" + negID + "/ws?token=" + a.key + query)
}

// match runs the lobby dance: brand offers, creates, bouncer accepts. It
// returns the negotiation id and both lobby sockets.
func (v *e2eVenue) match(brand, bouncer e2eAgent, arena bool) (string, *e2eConn, *e2eConn) {
	v.t.Helper()
	bl, kl := v.lobby(brand), v.lobby(bouncer)
	bl.send(map[string]any{"type": "submit_offer", "id": "o1", "to": bouncer.id, "arena": arena,
		"offer": map[string]any{"title": "Spring launch", "brief": "Two sends in the primary slot"}})
	off := bl.expect("offer_submitted")
	bl.send(map[string]any{"type": "create_negotiation", "id": "c1", "offer_id": off["offer_id"]})
	created := bl.expect("negotiation_created")
	negID := created["negotiation_id"].(string)
	req := kl.expect("negotiation_requested")
	if req["negotiation_id"] != negID {
		v.t.Fatalf("requested %v, created %s", req, negID)
	}
	kl.send(map[string]any{"type": "accept_negotiation", "id": "a1", "negotiation_id": negID})
	kl.expect("negotiation_accepted")
	bl.expect("negotiation_accepted")
	return negID, bl, kl
}

// live registers a brand and a bouncer, matches them and opens both
// party sockets, each past its negotiation_started.
func (v *e2eVenue) live(arena bool) (brand, bouncer e2eAgent, negID string, b, k *e2eConn) {
	v.t.Helper()
	brand, bouncer = v.register("B", "brand"), v.register("K", "bouncer")
	negID, _, _ = v.match(brand, bouncer, arena)
	b, k = v.room(brand, negID, ""), v.room(bouncer, negID, "")
	b.expect("negotiation_started")
	k.expect("negotiation_started")
	return brand, bouncer, negID, b, k
}

// watched is live with an observer socket too, past its
// negotiation_started.
func (v *e2eVenue) watched(arena bool) (brand, bouncer e2eAgent, negID string, b, k, obs *e2eConn) {
	v.t.Helper()
	brand, bouncer, negID, b, k = v.live(arena)
	obs = v.dial("/v1/negotiations/" + negID + "/ws/observe")
	obs.expect("negotiation_started")
	return brand, bouncer, negID, b, k, obs
}

func num(v any) float64 {
	f, _ := v.(float64)
	return f
}

func str(v any) string { return fmt.Sprint(v) }

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func io_copy(w io.Writer, resp *http.Response) (int64, error) { return io.Copy(w, resp.Body) }

func e2eLogOut() io.Writer {
	if os.Getenv("VENUE_TEST_LOG") != "" {
		return os.Stderr
	}
	return io.Discard
}
