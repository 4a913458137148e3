package venue_test

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/venuehq/venue/admission"
	"github.com/venuehq/venue/admission/redislimit"
	"github.com/venuehq/venue/bus/bustest"
	"github.com/venuehq/venue/bus/redisbus"
	"github.com/venuehq/venue/venue"
)

// refused dials path and requires a 429 with Retry-After before the upgrade.
func (v *e2eVenue) refused(path string, h http.Header) {
	v.t.Helper()
	_, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(v.url, "http")+path, h)
	if err == nil {
		v.t.Fatalf("%s: upgraded over a cap", path)
	}
	if resp == nil || resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		v.t.Fatalf("%s: %v %v, want 429 with Retry-After", path, resp, err)
	}
}

// admittedSoon dials until the server has released a closed socket's slot.
func (v *e2eVenue) admittedSoon(path string) *e2eConn {
	v.t.Helper()
	deadline := time.Now().Add(e2eWait)
	for {
		c, resp, err := v.tryDial(path)
		if err == nil {
			return c
		}
		if resp == nil || resp.StatusCode != http.StatusTooManyRequests || time.Now().After(deadline) {
			v.t.Fatalf("%s: %v %v", path, resp, err)
		}
		time.Sleep(10 * time.Millisecond) // the closed socket's handler is finishing
	}
}

// TestSecurityObserverCap: observers per negotiation are capped; a closed
// observer's slot is free again.
func TestSecurityObserverCap(t *testing.T) {
	t.Parallel()
	v := newE2E(t, func(c *venue.Config) { c.Caps.ObserversPerNegotiation = 3 })
	negID, _, _ := v.match(v.register("Acme", "brand"), v.register("Letters", "bouncer"), false)
	path := "/v1/negotiations/" + negID + "/ws/observe"
	obs := []*e2eConn{v.dial(path), v.dial(path), v.dial(path)}
	v.refused(path, nil)
	obs[0].ws.Close()
	v.admittedSoon(path)
}

// TestSecurityAddressCap: sockets per client address are capped, whatever
// they are.
func TestSecurityAddressCap(t *testing.T) {
	t.Parallel()
	v := newE2E(t, func(c *venue.Config) { c.Caps.SocketsPerAddress = 3 })
	brand, bouncer := v.register("Acme", "brand"), v.register("Letters", "bouncer")
	negID, _, _ := v.match(brand, bouncer, false) // two lobby sockets
	v.dial("/v1/negotiations/" + negID + "/ws/observe")
	v.refused("/v1/negotiations/"+negID+"/ws/observe", nil)
	v.refused("/v1/agents/"+brand.id+"/ws?token="+brand.key, nil)
}

// TestSecurityLobbyCap: lobby sockets per agent are capped.
func TestSecurityLobbyCap(t *testing.T) {
	t.Parallel()
	v := newE2E(t, func(c *venue.Config) { c.Caps.LobbyPerAgent = 2 })
	brand := v.register("Acme", "brand")
	v.lobby(brand)
	v.lobby(brand)
	v.refused("/v1/agents/"+brand.id+"/ws?token="+brand.key, nil)
	other := v.register("Other", "brand")
	v.lobby(other) // another agent is not affected
}

// TestSecurityPartySocketsShareBudget: party sockets per agent and
// negotiation are capped, and the sockets an agent has in one negotiation
// draw on one frame budget: two sockets do not send twice as much.
func TestSecurityPartySocketsShareBudget(t *testing.T) {
	t.Parallel()
	v := newE2E(t, func(c *venue.Config) {
		c.Caps.PartyPerNegotiation = 2
		c.Limits = venue.Limits{FramesPerSecond: 0.001, FrameBurst: 4} // no refill within the test
	})
	brand, bouncer := v.register("Acme", "brand"), v.register("Letters", "bouncer")
	negID, _, _ := v.match(brand, bouncer, false)
	s1, s2 := v.room(bouncer, negID, ""), v.room(bouncer, negID, "")
	v.refused("/v1/negotiations/"+negID+"/ws?token="+bouncer.key, nil)
	s1.expect("negotiation_started")
	s2.expect("negotiation_started")
	for range 4 {
		s1.send(`{"type":"message","content":"hi"}`)
		s2.send(`{"type":"message","content":"hi"}`)
	}
	landed, limited := 0, 0
	for _, s := range []*e2eConn{s1, s2} {
		for range 4 {
			m := s.next()
			switch {
			case m["type"] == "message_ack":
				landed++
			case m["type"] == "error" && m["code"] == "rate_limited":
				limited++
			default:
				if m["type"] == "negotiation_message" { // the other socket's frame: not counted
					continue
				}
				t.Fatalf("unexpected %v", m)
			}
		}
	}
	if landed != 4 || limited != 4 {
		t.Fatalf("two sockets landed %d frames and were refused %d, want 4 and 4 (one budget of 4)", landed, limited)
	}
}

// TestSecurityGlobalConnectionCap: connections over the node's cap get 503
// with Retry-After at accept, before a byte of theirs is read.
func TestSecurityGlobalConnectionCap(t *testing.T) {
	t.Parallel()
	v := newE2E(t, func(c *venue.Config) { c.Caps.Connections = 2 })
	addr := strings.TrimPrefix(v.url, "http://")
	for range 2 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		// A whole request proves the connection was accepted and counted.
		_, _ = c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"))
		if resp, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil || resp.StatusCode != 200 {
			t.Fatalf("under the cap: %v %v", resp, err)
		}
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(e2eWait))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("over the cap: %v %v", resp, err)
	}
}

// TestSecurityPingsCounted: a client's pings draw on the socket's frame
// budget: a flood gets as many pongs as the budget allows, not one each.
func TestSecurityPingsCounted(t *testing.T) {
	t.Parallel()
	v := newE2E(t, func(c *venue.Config) { c.Limits = venue.Limits{FramesPerSecond: 0.001, FrameBurst: 5} })
	brand := v.register("Acme", "brand")
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(v.url, "http")+"/v1/agents/"+brand.id+"/ws?token="+brand.key, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	pongs := 0
	ws.SetPongHandler(func(string) error { pongs++; return nil })
	for range 15 {
		if err := ws.WriteControl(websocket.PingMessage, []byte("p"), time.Now().Add(time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	// A frame after the pings: its answer comes after every pong the venue sent.
	if err := ws.WriteMessage(websocket.TextMessage, []byte(`{"type":"browse_bouncers","id":"b1"}`)); err != nil {
		t.Fatal(err)
	}
	_ = ws.SetReadDeadline(time.Now().Add(e2eWait))
	if _, _, err := ws.ReadMessage(); err != nil {
		t.Fatal(err)
	}
	if pongs != 5 {
		t.Fatalf("%d pongs for 15 pings, want 5 (the budget)", pongs)
	}
}

// TestSecurityTrustedProxies: behind a trusted proxy each client has its own
// registration limit (IPv6 by /64) and every 429 says when to retry; from
// an untrusted peer X-Forwarded-For is ignored.
func TestSecurityTrustedProxies(t *testing.T) {
	t.Parallel()
	register := func(v *e2eVenue, xff string) *http.Response {
		req, _ := http.NewRequest("POST", v.url+"/v1/register", strings.NewReader(`{"name":"A","role":"brand"}`))
		req.Header.Set("X-Forwarded-For", xff)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	loopback, err := admission.ParseCIDRs("127.0.0.1/32")
	if err != nil {
		t.Fatal(err)
	}
	v := newE2E(t, func(c *venue.Config) { c.RegisterPerMinute, c.TrustedProxies = 1, loopback })
	for _, tc := range []struct {
		xff  string
		want int
	}{
		{"203.0.113.1", 201}, {"203.0.113.1", 429}, {"203.0.113.2", 201},
		{"2001:db8:1:2::1", 201}, {"2001:db8:1:2::99", 429}, {"2001:db8:1:3::1", 201},
	} {
		resp := register(v, tc.xff)
		if resp.StatusCode != tc.want {
			t.Fatalf("X-Forwarded-For %s: %d, want %d", tc.xff, resp.StatusCode, tc.want)
		}
		if tc.want == 429 && resp.Header.Get("Retry-After") == "" {
			t.Fatalf("429 without Retry-After")
		}
	}
	untrusted := newE2E(t, func(c *venue.Config) { c.RegisterPerMinute = 1 })
	if register(untrusted, "203.0.113.1").StatusCode != 201 || register(untrusted, "203.0.113.2").StatusCode != 429 {
		t.Fatal("X-Forwarded-For from an untrusted peer picked the rate-limit key")
	}
}

// TestSecurityRegistrationLimitAcrossNodes: on Redis, two nodes count one
// client's registrations together, and the 429 says when to retry.
func TestSecurityRegistrationLimitAcrossNodes(t *testing.T) {
	t.Parallel()
	url := bustest.RedisURL(t)
	prefix := bustest.KeyPrefix(t, url)
	rdb, err := redisbus.Client(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	shared := &redislimit.Limiter{Client: rdb, Prefix: prefix + ":register:", Limit: 3, Window: time.Minute}
	a := newE2E(t, func(c *venue.Config) { c.RegisterLimiter = shared })
	b := newE2E(t, func(c *venue.Config) { c.RegisterLimiter = shared })
	created := 0
	for i := range 6 {
		v := a
		if i%2 == 1 {
			v = b
		}
		req, _ := http.NewRequest("POST", v.url+"/v1/register", strings.NewReader(`{"name":"A","role":"brand"}`))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		switch resp.StatusCode {
		case 201:
			created++
		case 429:
			if ra := resp.Header.Get("Retry-After"); ra == "" || ra == "0" {
				t.Fatalf("429 with Retry-After %q", ra)
			}
		default:
			t.Fatalf("register: %d", resp.StatusCode)
		}
	}
	if created != 3 {
		t.Fatalf("%d registrations over two nodes, want 3", created)
	}
}

// TestSecuritySharedFrameBudget: with a frame budget kept in Redis, an
// agent's frames in a negotiation are counted for every node together:
// over it, rate_limited, though this node's own budget has room.
func TestSecuritySharedFrameBudget(t *testing.T) {
	t.Parallel()
	url := bustest.RedisURL(t)
	prefix := bustest.KeyPrefix(t, url)
	rdb, err := redisbus.Client(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Close() })
	shared := &redislimit.Limiter{Client: rdb, Prefix: prefix + ":frames:", Limit: 3, Window: time.Minute}
	v := newE2E(t, func(c *venue.Config) { c.FrameLimiter = shared })
	brand, bouncer := v.register("Acme", "brand"), v.register("Letters", "bouncer")
	negID, _, _ := v.match(brand, bouncer, false)
	// Another node already counted two of the bouncer's frames here.
	for range 2 {
		if ok, _, err := shared.Allow(context.Background(), bouncer.id+" "+negID); err != nil || !ok {
			t.Fatal(ok, err)
		}
	}
	k := v.room(bouncer, negID, "")
	k.expect("negotiation_started")
	k.send(`{"type":"message","id":"m1","content":"one"}`)
	k.send(`{"type":"message","id":"m2","content":"two"}`)
	k.expect("message_ack") // the third frame: within the shared budget
	if e := k.expect("error"); e["code"] != "rate_limited" || e["re"] != "m2" {
		t.Fatalf("the frame over the shared budget: %v", e)
	}
}
