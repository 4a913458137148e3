package venue_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/venuehq/venue/venue"
)

// TestE2EStrictBodies: a REST body with a member the route does not take
// is 422 naming it, and changes nothing (a typo is not an absent field).
func TestE2EStrictBodies(t *testing.T) {
	t.Parallel()
	v := newE2E(t)
	a := v.register("Acme", "brand")
	if code, _ := v.do("PUT", "/v1/agents/me/profile", a.key, map[string]any{"description": "kept"}); code != http.StatusOK {
		t.Fatalf("set profile: %d", code)
	}
	for _, tc := range []struct {
		method, path, key string
		body              any
		field             string
	}{
		{"PUT", "/v1/agents/me/profile", a.key, map[string]any{"descripton": "typo"}, "descripton"},
		{"POST", "/v1/register", "", map[string]any{"name": "X", "role": "brand", "principal_kye": map[string]any{}}, "principal_kye"},
		{"POST", "/v1/grants", a.key, map[string]any{"token": "x", "tokne": "y"}, "tokne"},
		{"PUT", "/v1/agents/me/principal-key", a.key, map[string]any{"principal_key": map[string]any{}, "prof": "x"}, "prof"},
		{"PUT", "/v1/agents/me/principal-key", a.key, map[string]any{"kty": "OKP", "crv": "Ed25519", "x": "AA", "d": "secret"}, "d"},
		{"POST", "/v1/escalations/neg_x.e1/decision", "", map[string]any{"token": "x", "extra": 1}, "extra"},
	} {
		code, m := v.do(tc.method, tc.path, tc.key, tc.body)
		e, _ := m["error"].(map[string]any)
		if code != http.StatusUnprocessableEntity || e["code"] != "invalid_argument" || !strings.Contains(str(e["message"]), `"`+tc.field+`"`) {
			t.Errorf("%s %s with %q: %d %v", tc.method, tc.path, tc.field, code, m)
		}
	}
	if _, p := v.do("GET", "/v1/agents/"+a.id+"/profile", "", nil); p["description"] != "kept" {
		t.Fatalf("a refused body changed the profile: %v", p)
	}
}

// TestE2EBearerScheme: the auth scheme is case-insensitive (RFC 9110).
func TestE2EBearerScheme(t *testing.T) {
	t.Parallel()
	v := newE2E(t)
	a := v.register("Acme", "brand")
	for _, scheme := range []string{"Bearer", "bearer", "BEARER"} {
		req, _ := http.NewRequest("GET", v.url+"/v1/agents/me", nil)
		req.Header.Set("Authorization", scheme+" "+a.key)
		resp, err := apiClient(t).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: %d", scheme, resp.StatusCode)
		}
	}
	for _, h := range []string{"Basic " + a.key, a.key, "Bearer"} {
		req, _ := http.NewRequest("GET", v.url+"/v1/agents/me", nil)
		req.Header.Set("Authorization", h)
		resp, err := apiClient(t).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%q: %d, want 401", h, resp.StatusCode)
		}
	}
}

// TestE2EMine: an agent lists its own negotiations (filtered by status,
// paged) and offers; another agent's are not in them; bad paging is 422.
func TestE2EMine(t *testing.T) {
	t.Parallel()
	v := newE2E(t)
	brand, bouncer, live, _, _ := v.live(true)
	other := v.register("Other", "bouncer")
	code, m := v.do("GET", "/v1/negotiations?role=mine", brand.key, nil)
	items, _ := m["items"].([]any)
	if code != http.StatusOK || len(items) != 1 || num(m["total"]) != 1 || items[0].(map[string]any)["negotiation_id"] != live {
		t.Fatalf("brand's negotiations: %d %v", code, m)
	}
	if _, m := v.do("GET", "/v1/negotiations?role=mine&status=deal", bouncer.key, nil); num(m["total"]) != 0 {
		t.Fatalf("bouncer's deals: %v", m)
	}
	if _, m := v.do("GET", "/v1/negotiations?role=mine&status=live&limit=1", bouncer.key, nil); num(m["total"]) != 1 {
		t.Fatalf("bouncer's live ones: %v", m)
	}
	if _, m := v.do("GET", "/v1/negotiations?role=mine", other.key, nil); num(m["total"]) != 0 {
		t.Fatalf("another agent sees %v", m)
	}
	_, m = v.do("GET", "/v1/offers", brand.key, nil)
	offers, _ := m["items"].([]any)
	if len(offers) != 1 || offers[0].(map[string]any)["negotiation_id"] != live || offers[0].(map[string]any)["to"] != bouncer.id {
		t.Fatalf("brand's offers: %v", m)
	}
	for _, path := range []string{"/v1/negotiations", "/v1/negotiations?role=all", "/v1/negotiations?role=mine&status=won",
		"/v1/negotiations?role=mine&limit=0", "/v1/negotiations?role=mine&limit=101", "/v1/offers?offset=-1", "/v1/offers?limit=x"} {
		if code, _ := v.do("GET", path, brand.key, nil); code != http.StatusUnprocessableEntity {
			t.Errorf("%s: %d, want 422", path, code)
		}
	}
	if code, _ := v.do("GET", "/v1/negotiations?role=mine", "", nil); code != http.StatusUnauthorized {
		t.Errorf("without a key: %d", code)
	}
}

// TestE2ELongReplay: a replay longer than the send queue is paced by the
// client's reading, not cut with 1013 (an observer with ?since=0 of a
// transcript of 300 frames gets all 300, in order).
func TestE2ELongReplay(t *testing.T) {
	t.Parallel()
	v := newE2E(t, func(c *venue.Config) {
		c.Limits.FramesPerSecond, c.Limits.FrameBurst, c.Limits.SendQueue = 1e6, 1e6, 16
	})
	_, _, negID, b, _ := v.live(true)
	const n = 300
	for i := 0; i < n; i++ {
		b.send(`{"type":"message","content":"m"}`)
		b.expect("message_ack")
	}
	obs := v.dial("/v1/negotiations/" + negID + "/ws/observe?since=0")
	obs.expect("negotiation_started")
	for i := 1; i <= n; i++ {
		if m := obs.expect("negotiation_message"); num(m["seq"]) != float64(i) {
			t.Fatalf("replayed seq %v, want %d", m["seq"], i)
		}
	}
}

// TestE2EHead: HEAD is answered wherever GET is, with the GET's status and
// no body.
func TestE2EHead(t *testing.T) {
	t.Parallel()
	v := newE2E(t)
	for _, path := range []string{"/healthz", "/readyz", "/v1/info", "/.well-known/jwks.json", "/openapi.json", "/arena"} {
		req, _ := http.NewRequest(http.MethodHead, v.url+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || n != 0 {
			t.Errorf("HEAD %s: %d with %d body bytes", path, resp.StatusCode, n)
		}
	}
}

// TestE2EZeroLimit: a limit of 0 on the handshake's lists is refused, not
// read as the default (GET /v1/messages marks what it returns read).
func TestE2EZeroLimit(t *testing.T) {
	t.Parallel()
	v := newE2E(t)
	a := v.register("A", "brand")
	for _, path := range []string{"/v1/messages?limit=0", "/v1/tasks?limit=0", "/v1/contacts?limit=0", "/v1/resources?offset=-1"} {
		if code, m := v.do("GET", path, a.key, nil); code != http.StatusUnprocessableEntity {
			t.Errorf("%s: %d %v, want 422", path, code, m)
		}
	}
}

// TestE2EHandshakeUnknownRoute: under the handshake's prefixes an unknown
// path or method gets the venue's JSON error body too.
func TestE2EHandshakeUnknownRoute(t *testing.T) {
	t.Parallel()
	v := newE2E(t)
	a := v.register("A", "brand")
	for _, tc := range []struct {
		method, path string
		status       int
		code         string
	}{
		{"GET", "/v1/contacts/nope/deeper", http.StatusNotFound, "not_found"},
		{"PATCH", "/v1/messages", http.StatusMethodNotAllowed, "method_not_allowed"},
	} {
		req, _ := http.NewRequest(tc.method, v.url+tc.path, nil)
		req.Header.Set("Authorization", "Bearer "+a.key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Error struct{ Code string } `json:"error"`
		}
		err = json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || err != nil || body.Error.Code != tc.code {
			t.Errorf("%s %s: %d %q (%v), want %d %s", tc.method, tc.path, resp.StatusCode, body.Error.Code, err, tc.status, tc.code)
		}
	}
}

// TestE2ETwoAuthorizationHeaders: Authorization is a single field; a
// request with two (the agent's key and another) is refused with 401 and
// says so, on REST, on the contact routes and on a socket upgrade,
// rather than read by whichever one a proxy or library keeps.
func TestE2ETwoAuthorizationHeaders(t *testing.T) {
	t.Parallel()
	v := newE2E(t)
	a := v.register("Acme", "brand")
	for _, path := range []string{"/v1/agents/me", "/v1/contacts"} {
		for _, values := range [][]string{{"Bearer " + a.key}, {"Bearer " + a.key, "Bearer bsk_other"}} {
			req, _ := http.NewRequest("GET", v.url+path, nil)
			req.Header["Authorization"] = values
			resp, err := apiClient(t).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			want := http.StatusOK
			if len(values) == 2 {
				want = http.StatusUnauthorized
			}
			if resp.StatusCode != want || (len(values) == 2 && !strings.Contains(string(body), "2 Authorization headers")) {
				t.Errorf("GET %s with %d Authorization headers: %d %s", path, len(values), resp.StatusCode, body)
			}
		}
	}
	h := http.Header{"Authorization": {"Bearer " + a.key, "Bearer " + a.key}}
	if _, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(v.url, "http")+"/v1/agents/"+a.id+"/ws", h); err == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a lobby socket with two Authorization headers: %v %v", err, resp)
	}
}
