package venue_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/venuehq/venue/venue"
)

// TestE2EBadFrames: every bad input of PROTOCOL.md "Limits and close codes" gets an error frame with
// a named code, the socket stays open, nothing changes and the other side
// and observers see nothing.
func TestE2EBadFrames(t *testing.T) {
	t.Parallel()
	v := newE2E(t, func(c *venue.Config) { c.Limits.FramesPerSecond, c.Limits.FrameBurst = 1000, 1000 })
	_, _, negID, b, k, obs := v.watched(false)
	for _, tc := range []struct{ frame, code string }{
		{`not json`, "invalid_json"},
		{`[1,2]`, "invalid_json"},
		{`"message"`, "invalid_json"},
		{`{"type":"message","content":"a"} trailing`, "invalid_json"},
		{`{"type":"message","content":"a","content":"b"}`, "invalid_json"},
		{`{"type":"message","content":"a","Content":"b"}`, "invalid_json"},
		{`{"type":"propose_terms","terms":{"amount_usd":NaN}}`, "invalid_json"},
		{`{"type":"propose_terms","terms":{"amount_usd":Infinity}}`, "invalid_json"},
		{`{"type":"dance"}`, "unknown_type"},
		{`{"content":"no type"}`, "invalid_argument"},
		{`{"type":7}`, "invalid_argument"},
		{`{"type":"message"}`, "invalid_argument"},
		{`{"type":"message","content":42}`, "invalid_argument"},
		{`{"type":"propose_terms"}`, "invalid_argument"},
		{`{"type":"propose_terms","terms":{"amount_usd":"3200"}}`, "invalid_argument"},
		{`{"type":"propose_terms","terms":{"amount_usd":3200.123}}`, "invalid_argument"},
		{`{"type":"propose_terms","terms":{"amount_usd":-5}}`, "invalid_argument"},
		{`{"type":"propose_terms","terms":{"amount_usd":10000000.01}}`, "invalid_argument"},
		{`{"type":"propose_terms","terms":{"amount_usd":3200},"ttl_seconds":"60"}`, "invalid_argument"},
		{`{"type":"propose_terms","terms":{"amount_usd":3200,"sends":0}}`, "invalid_argument"},
		{`{"type":"propose_terms","terms":[3200]}`, "invalid_argument"},
		{`{"type":"message","content":"` + strings.Repeat("x", 4001) + `"}`, "invalid_argument"},
		{`{"type":"message","id":"` + strings.Repeat("i", 65) + `","content":"x"}`, "invalid_argument"},
		{`{"type":"counter_terms","terms":{"amount_usd":1}}`, "invalid_state"},
		{`{"type":"withdraw"}`, "invalid_state"},
		{`{"type":"reject"}`, "invalid_state"},
	} {
		b.send(map[string]any{"type": "message", "content": "sync"})
		b.expect("message_ack")
		k.expect("negotiation_message")
		obs.expect("negotiation_message")
		b.send(tc.frame)
		e := b.expect("error")
		if e["code"] != tc.code {
			t.Errorf("%.60s: code %v, want %s (%v)", tc.frame, e["code"], tc.code, e["message"])
		}
	}
	// An error carries re when the frame had an id.
	b.send(`{"type":"dance","id":"d1"}`)
	if e := b.expect("error"); e["re"] != "d1" {
		t.Errorf("error without re: %v", e)
	}
	// Nothing landed: the seqs are exactly the "sync" messages, and the
	// table is empty.
	_, nv := v.do("GET", "/v1/negotiations/"+negID, "", nil)
	if nv["standing"] != nil || nv["status"] != "live" {
		t.Fatalf("a bad frame changed the room: %v", nv)
	}
	k.quiet()
	obs.quiet()
}

// TestE2ESocketLimits: 16 KiB read limit (1009), invalid UTF-8 (1007), rate
// limit (rate_limited, then 1008 under sustained abuse).
func TestE2ESocketLimits(t *testing.T) {
	t.Parallel()
	v := newE2E(t)
	brand, bouncer := v.register("B", "brand"), v.register("K", "bouncer")
	negID, _, _ := v.match(brand, bouncer, true)

	big := v.room(brand, negID, "")
	big.expect("negotiation_started")
	big.send(`{"type":"message","content":"` + strings.Repeat("x", venue.MaxFrameBytes) + `"}`)
	if code := big.closeCode(); code != 1009 {
		t.Errorf("frame over 16 KiB closed with %d, want 1009", code)
	}

	utf := v.room(brand, negID, "")
	utf.expect("negotiation_started")
	utf.send([]byte("{\"type\":\"message\",\"content\":\"\xff\xfe\"}"))
	if code := utf.closeCode(); code != 1007 {
		t.Errorf("invalid UTF-8 closed with %d, want 1007", code)
	}
	// A binary frame carries the same JSON and gets the same check.
	bin := v.room(brand, negID, "")
	bin.expect("negotiation_started")
	if err := bin.ws.WriteMessage(websocket.BinaryMessage, []byte("{\"type\":\"message\",\"content\":\"\xff\"}")); err != nil {
		t.Fatal(err)
	}
	if code := bin.closeCode(); code != 1007 {
		t.Errorf("invalid UTF-8 in a binary frame closed with %d, want 1007", code)
	}

	flood := v.room(bouncer, negID, "")
	flood.expect("negotiation_started")
	limited := 0
	for i := 0; i < 200; i++ {
		if flood.ws.WriteMessage(1, []byte(`{"type":"research","content":"spam"}`)) != nil {
			break
		}
	}
	for {
		m, ok := <-flood.frames
		if !ok {
			break
		}
		if m["type"] == "error" && m["code"] == "rate_limited" {
			limited++
		}
	}
	if ce, ok := (<-flood.closed).(interface{ Error() string }); !ok || !strings.Contains(ce.Error(), "1008") {
		t.Errorf("sustained abuse did not close with 1008: %v", ce)
	}
	if limited == 0 {
		t.Errorf("no rate_limited error before the close")
	}
}

// TestE2ELobby: roles, addressees, bad requests, re-push of pending
// requests on reconnect and the 2-minute lapse.
func TestE2ELobby(t *testing.T) {
	t.Parallel()
	v := newE2E(t, func(c *venue.Config) { c.Limits.FramesPerSecond, c.Limits.FrameBurst = 1000, 1000 })
	brand, bouncer := v.register("Acme", "brand"), v.register("Letters", "bouncer")
	other := v.register("Other Bouncer", "bouncer")
	code, _ := v.do("PUT", "/v1/agents/me/profile", bouncer.key, map[string]any{
		"description": "A weekly letter on tools", "categories": []string{"primary_slot", "footer"}, "audience": map[string]any{"subscribers": 42000}})
	if code != 200 {
		t.Fatalf("profile: %d", code)
	}
	bl, kl := v.lobby(brand), v.lobby(bouncer)
	bl.send(`{"type":"browse_bouncers","id":"br","category":"primary_slot"}`)
	br := bl.expect("bouncers")
	if br["re"] != "br" || num(br["total"]) != 1 || br["items"].([]any)[0].(map[string]any)["agent_id"] != bouncer.id {
		t.Fatalf("browse: %v", br)
	}
	bl.send(`{"type":"browse_bouncers","q":"bouncer"}`)
	if br := bl.expect("bouncers"); num(br["total"]) != 1 {
		t.Fatalf("browse q: %v", br)
	}
	bl.send(map[string]any{"type": "get_profile", "id": "gp", "agent_id": bouncer.id})
	if p := bl.expect("profile"); p["description"] != "A weekly letter on tools" || p["re"] != "gp" {
		t.Fatalf("profile: %v", p)
	}
	for _, tc := range []struct {
		c    *e2eConn
		req  string
		code string
	}{
		{kl, `{"type":"submit_offer","id":"x","to":"` + other.id + `","offer":{"title":"t"}}`, "forbidden"},
		{bl, `{"type":"submit_offer","id":"x","to":"` + brand.id + `","offer":{"title":"t"}}`, "invalid_argument"},
		{bl, `{"type":"submit_offer","id":"x","to":"nobody","offer":{"title":"t"}}`, "not_found"},
		{bl, `{"type":"submit_offer","id":"x","to":"` + bouncer.id + `","offer":"t"}`, "invalid_argument"},
		{bl, `{"type":"submit_offer","id":"x","to":"` + bouncer.id + `","offer":{"title":"t","terms":{"amount_usd":"1"}}}`, "invalid_argument"},
		{bl, `{"type":"create_negotiation","id":"x","offer_id":"off_nope"}`, "not_found"},
		{bl, `{"type":"browse_bouncers","id":"x","limit":51}`, "invalid_argument"},
		{bl, `{"type":"browse_bouncers","id":"x","limit":"5"}`, "invalid_argument"},
		{bl, `{"type":"get_profile","id":"x"}`, "invalid_argument"},
		{bl, `{"type":"teleport","id":"x"}`, "unknown_type"},
		{bl, `{"type":"get_profile","id":"x","id":"y"}`, "invalid_json"},
		{bl, `nope`, "invalid_json"},
		{bl, `{"type":"accept_negotiation","id":"x","negotiation_id":"neg_nope"}`, "forbidden"},
		{kl, `{"type":"accept_negotiation","id":"x","negotiation_id":"neg_nope"}`, "not_found"},
	} {
		tc.c.send(tc.req)
		e := tc.c.expect("error")
		if e["code"] != tc.code {
			t.Errorf("%s: %v, want %s", tc.req, e, tc.code)
		}
	}
	bl.send(map[string]any{"type": "submit_offer", "id": "o", "to": bouncer.id, "offer": map[string]any{"title": "Launch"}})
	off := bl.expect("offer_submitted")
	bl.send(map[string]any{"type": "create_negotiation", "id": "c", "offer_id": off["offer_id"]})
	negID := bl.expect("negotiation_created")["negotiation_id"].(string)
	if req := kl.expect("negotiation_requested"); req["brand"].(map[string]any)["agent_id"] != brand.id || req["expires_at"] != "2026-11-30T08:02:00.000Z" {
		t.Fatalf("requested: %v", req)
	}
	// A second negotiation for the same offer is a conflict.
	bl.send(map[string]any{"type": "create_negotiation", "id": "c2", "offer_id": off["offer_id"]})
	if e := bl.expect("error"); e["code"] != "conflict" {
		t.Fatalf("second create: %v", e)
	}
	// Another bouncer cannot accept it.
	ol := v.lobby(other)
	ol.send(map[string]any{"type": "accept_negotiation", "id": "x", "negotiation_id": negID})
	if e := ol.expect("error"); e["code"] != "forbidden" {
		t.Fatalf("wrong addressee: %v", e)
	}
	// The bouncer reconnects: the pending request is pushed again.
	kl.ws.Close()
	kl2 := v.lobby(bouncer)
	if req := kl2.expect("negotiation_requested"); req["negotiation_id"] != negID {
		t.Fatalf("re-push: %v", req)
	}
	// Two minutes pass: the request lapses for both.
	v.clock.Advance(2 * time.Minute)
	for _, c := range []*e2eConn{bl, kl2} {
		if d := c.expect("negotiation_declined"); d["reason"] != "expired" || d["negotiation_id"] != negID {
			t.Fatalf("lapse: %v", d)
		}
	}
	kl2.send(map[string]any{"type": "accept_negotiation", "id": "late", "negotiation_id": negID})
	if e := kl2.expect("error"); e["code"] != "invalid_state" || e["re"] != "late" {
		t.Fatalf("accept after lapse: %v", e)
	}
}

// TestE2EREST: status codes and JSON error bodies of the REST routes.
func TestE2EREST(t *testing.T) {
	t.Parallel()
	v := newE2E(t, func(c *venue.Config) { c.RegisterPerMinute = 5 })
	a := v.registerNoKey("Agent", "brand")
	for _, tc := range []struct {
		method, path, key string
		body              any
		status            int
		code              string
	}{
		{"POST", "/v1/register", "", `{"name":"","role":"brand"}`, 422, "invalid_argument"},
		{"POST", "/v1/register", "", `{"name":"x","role":"admin"}`, 422, "invalid_argument"},
		{"POST", "/v1/register", "", `not json`, 400, "invalid_json"},
		{"POST", "/v1/register", "", []byte("{\"name\":\"\xff\",\"role\":\"brand\"}"), 400, "invalid_json"},
		{"DELETE", "/v1/agents/me/profile", a.key, nil, 405, "method_not_allowed"},
		{"GET", "/v1/agents/me", "", nil, 401, "unauthorized"},
		{"GET", "/v1/agents/me", "bsk_wrong", nil, 401, "unauthorized"},
		{"PUT", "/v1/agents/me/profile", a.key, `{"categories":"x"}`, 422, "invalid_argument"},
		{"PUT", "/v1/agents/me/principal-key", a.key, `{"kty":"RSA"}`, 422, "invalid_argument"},
		{"PUT", "/v1/agents/me/profile", a.key, `{"description":"` + strings.Repeat("x", 70<<10) + `"}`, 413, "too_large"},
		{"GET", "/v1/agents/nobody/profile", "", nil, 404, "not_found"},
		{"GET", "/v1/negotiations/nope", "", nil, 404, "not_found"},
		{"GET", "/v1/negotiations/nope/transcript", "", nil, 404, "not_found"},
		{"GET", "/v1/nothing-here", "", nil, 404, "not_found"},
	} {
		code, m := v.do(tc.method, tc.path, tc.key, tc.body)
		e, _ := m["error"].(map[string]any)
		if code != tc.status || e == nil || e["code"] != tc.code || e["message"] == "" {
			t.Errorf("%s %s: %d %v, want %d %s", tc.method, tc.path, code, m, tc.status, tc.code)
		}
	}
	code, me := v.do("GET", "/v1/agents/me", a.key, nil)
	if code != 200 || me["agent_id"] != a.id || me["role"] != "brand" {
		t.Fatalf("me: %d %v", code, me)
	}
	jwk := `{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}`
	code, pk := v.do("PUT", "/v1/agents/me/principal-key", a.key, jwk)
	if code != 200 || pk["thumbprint"] != "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k" {
		t.Fatalf("principal key: %d %v", code, pk)
	}
	// Registration is rate limited per address (5 a minute here, all used above).
	limited := false
	for i := 0; i < 5 && !limited; i++ {
		code, m := v.do("POST", "/v1/register", "", `{"name":"n","role":"brand"}`)
		limited = code == http.StatusTooManyRequests && m["error"].(map[string]any)["code"] == "rate_limited"
	}
	if !limited {
		t.Fatal("registration was not rate limited")
	}
	if code, _ := v.do("GET", "/healthz", "", nil); code != 200 {
		t.Fatalf("healthz: %d", code)
	}
}

// TestE2EDecline: the bouncer's decline answers the bouncer once (with re)
// and reaches the brand once.
func TestE2EDecline(t *testing.T) {
	t.Parallel()
	v := newE2E(t)
	brand, bouncer := v.register("B", "brand"), v.register("K", "bouncer")
	bl, kl := v.lobby(brand), v.lobby(bouncer)
	bl.send(map[string]any{"type": "submit_offer", "id": "o", "to": bouncer.id, "offer": map[string]any{"title": "t"}})
	off := bl.expect("offer_submitted")
	bl.send(map[string]any{"type": "create_negotiation", "id": "c", "offer_id": off["offer_id"]})
	negID := bl.expect("negotiation_created")["negotiation_id"]
	kl.expect("negotiation_requested")
	kl.send(map[string]any{"type": "decline_negotiation", "id": "d", "negotiation_id": negID, "reason": "expired"})
	if d := kl.expect("negotiation_declined"); d["re"] != "d" || d["reason"] != "expired" {
		t.Fatalf("bouncer's reply: %v", d)
	}
	if d := bl.expect("negotiation_declined"); d["negotiation_id"] != negID {
		t.Fatalf("brand's push: %v", d)
	}
	// A round trip on each socket proves nothing else was queued before it.
	for _, c := range []*e2eConn{kl, bl} {
		c.send(`{"type":"get_profile","id":"sync","agent_id":"` + brand.id + `"}`)
		if p := c.expect("profile"); p["re"] != "sync" {
			t.Fatalf("after decline: %v", p)
		}
	}
	_, nv := v.do("GET", "/v1/negotiations/"+str(negID), "", nil)
	if nv["status"] != "declined" {
		t.Fatalf("status: %v", nv)
	}
}
