package venue_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/venuehq/venue/grants"
	"github.com/venuehq/venue/receipt"
	"github.com/venuehq/venue/store/memory"
	"github.com/venuehq/venue/venue"
)

// The security suite: one test per item of SECURITY.md's threat model, each
// over real sockets against a real server.

// revoke has a's principal sign a revocation and posts it with no API key.
func (v *e2eVenue) revoke(a e2eAgent, c grants.RevocationClaims) (int, map[string]any) {
	v.t.Helper()
	now := v.clock.Now()
	c.Subject, c.Audience, c.IssuedAt, c.ExpiresAt = a.id, "venue", now, now.Add(10*time.Minute)
	tok, err := grants.SignRevocation(a.principal, c)
	if err != nil {
		v.t.Fatal(err)
	}
	return v.do("POST", "/v1/revocations", "", map[string]any{"token": tok})
}

// TestSecurityAgentCannotReviveOlderGrant: the principal signs A (max
// 10,000) then B (max 100); the agent revokes B with its own key. Its
// proposal of 5,000 is still blocked: A never comes back.
func TestSecurityAgentCannotReviveOlderGrant(t *testing.T) {
	t.Parallel()
	v := newE2E(t)
	brand := v.registerBare("Acme", "brand")
	v.grant(brand, grants.Scope{Amount: &grants.AmountLimit{MaxCents: cents(1000000)}})
	v.clock.Advance(time.Second)
	b := v.grant(brand, grants.Scope{Amount: &grants.AmountLimit{MaxCents: cents(10000)}})
	bouncer := v.register("Letters", "bouncer")
	negID, _, _ := v.match(brand, bouncer, false)
	room := v.room(brand, negID, "")
	room.expect("negotiation_started")
	proposal := `{"type":"propose_terms","id":"p1","terms":{"amount_usd":5000,"category":"primary_slot","sends":1}}`
	room.send(proposal)
	room.expect("scope_block")
	if code, m := v.do("DELETE", "/v1/grants/"+b, brand.key, nil); code != 200 {
		t.Fatalf("revoke B: %d %v", code, m)
	}
	room.send(strings.Replace(proposal, `"p1"`, `"p2"`, 1))
	sb := room.expect("scope_block")
	if c := sb["checks"].([]any)[0].(map[string]any); c["check"] != "grant" {
		t.Fatalf("after revoking B: %v, want the grant check to fail", sb)
	}
}

// TestSecurityPrincipalRevokesGrant: the principal revokes the grant its
// agent proposed under, with no API key; the standing proposal is withdrawn
// for everyone and can no longer be accepted. A grant revoked before its
// upload is stored revoked.
func TestSecurityPrincipalRevokesGrant(t *testing.T) {
	t.Parallel()
	v := newE2E(t)
	brand := v.registerBare("Acme", "brand")
	jti := v.grant(brand, grants.Scope{})
	bouncer := v.register("Letters", "bouncer")
	negID, _, _ := v.match(brand, bouncer, false)
	b, k := v.room(brand, negID, ""), v.room(bouncer, negID, "")
	obs := v.dial("/v1/negotiations/" + negID + "/ws/observe")
	for _, c := range []*e2eConn{b, k, obs} {
		c.expect("negotiation_started")
	}
	b.send(`{"type":"propose_terms","id":"p1","terms":{"amount_usd":5000,"category":"primary_slot","sends":1}}`)
	pid := b.expect("message_ack")["proposal_id"]
	k.expect("negotiation_message")
	obs.expect("negotiation_message")

	code, m := v.revoke(brand, grants.RevocationClaims{Kind: grants.RevokeGrant, GrantJTI: jti})
	if code != 200 || m["uploaded"] != true || len(m["withdrawn"].([]any)) != 1 {
		t.Fatalf("revocation: %d %v", code, m)
	}
	for _, c := range []*e2eConn{b, k, obs} {
		w := c.expect("proposal_withdrawn")
		if w["proposal_id"] != pid || w["reason"] != "grant_revoked" || w["by"] != brand.id {
			t.Fatalf("proposal_withdrawn: %v", w)
		}
	}
	k.send(`{"type":"accept","id":"a1"}`)
	if e := k.expect("error"); e["code"] != "invalid_state" {
		t.Fatalf("accept after withdrawal: %v", e)
	}
	// Posting it again changes nothing.
	if code, m := v.revoke(brand, grants.RevocationClaims{Kind: grants.RevokeGrant, GrantJTI: jti}); code != 200 || len(m["withdrawn"].([]any)) != 0 {
		t.Fatalf("second revocation: %d %v", code, m)
	}
	// Revoked before the agent uploads it: stored revoked.
	now := v.clock.Now()
	tok, err := grants.SignGrant(brand.principal, grants.GrantClaims{Subject: brand.id, Audience: "venue", IssuedAt: now,
		ExpiresAt: now.Add(time.Hour), JTI: "later-grant"})
	if err != nil {
		t.Fatal(err)
	}
	if code, m := v.revoke(brand, grants.RevocationClaims{Kind: grants.RevokeGrant, GrantJTI: "later-grant"}); code != 200 || m["uploaded"] != false {
		t.Fatalf("pre-emptive revocation: %d %v", code, m)
	}
	if code, m := v.do("POST", "/v1/grants", brand.key, map[string]any{"token": tok}); code != 201 || m["status"] != "revoked" {
		t.Fatalf("upload of a revoked grant: %d %v", code, m)
	}
	// Another principal's key cannot revoke it; nor can a bad token.
	mallory := v.registerBare("Mallory", "brand")
	forged := brand
	forged.principal = mallory.principal
	if code, m := v.revoke(forged, grants.RevocationClaims{Kind: grants.RevokeGrant, GrantJTI: jti}); code != 401 {
		t.Fatalf("forged revocation: %d %v", code, m)
	}
	if code, _ := v.do("POST", "/v1/revocations", "", map[string]any{"token": "a.b.c"}); code != 422 {
		t.Fatalf("garbage token: %d", code)
	}
}

// TestSecurityPrincipalRevokesAPIKey: the principal kills a leaked key and
// names the new one: the old key's lobby socket closes (1008), REST answers
// 401, the new key works, and a replay touches nothing.
func TestSecurityPrincipalRevokesAPIKey(t *testing.T) {
	t.Parallel()
	v := newE2E(t)
	brand := v.register("Acme", "brand")
	lobby := v.lobby(brand)
	v.clock.Advance(time.Second) // the revocation is issued after the key
	newKey := "bsk_" + strings.Repeat("A", 43)
	sum := sha256.Sum256([]byte(newKey))
	code, m := v.revoke(brand, grants.RevocationClaims{Kind: grants.RevokeAPIKey, NewKeyHash: hex.EncodeToString(sum[:])})
	if code != 200 || m["replaced"] != true {
		t.Fatalf("revoke api key: %d %v", code, m)
	}
	if c := lobby.closeCode(); c != websocket.ClosePolicyViolation {
		t.Fatalf("lobby socket closed with %d, want 1008", c)
	}
	if code, _ := v.do("GET", "/v1/agents/me", brand.key, nil); code != 401 {
		t.Fatalf("old key: %d, want 401", code)
	}
	if code, _ := v.do("GET", "/v1/agents/me", newKey, nil); code != 200 {
		t.Fatalf("new key: %d", code)
	}
	if code, m := v.revoke(brand, grants.RevocationClaims{Kind: grants.RevokeAPIKey}); code != 200 || m["replaced"] != false {
		t.Fatalf("replayed revocation at the same second: %d %v", code, m)
	}
	if code, _ := v.do("GET", "/v1/agents/me", newKey, nil); code != 200 {
		t.Fatalf("new key after the replay: %d", code)
	}
}

// TestSecurityRotateAPIKey: an agent replaces its own key; the old one is
// dead at once, REST and sockets alike.
func TestSecurityRotateAPIKey(t *testing.T) {
	t.Parallel()
	v := newE2E(t)
	brand := v.register("Acme", "brand")
	lobby := v.lobby(brand)
	v.clock.Advance(time.Second)
	code, m := v.do("POST", "/v1/agents/me/api-key", brand.key, nil)
	if code != 201 || !strings.HasPrefix(str(m["api_key"]), "bsk_") || m["agent_id"] != brand.id {
		t.Fatalf("rotate: %d %v", code, m)
	}
	if c := lobby.closeCode(); c != websocket.ClosePolicyViolation {
		t.Fatalf("old socket closed with %d", c)
	}
	if code, _ := v.do("GET", "/v1/agents/me", brand.key, nil); code != 401 {
		t.Fatalf("old key: %d", code)
	}
	if code, _ := v.do("GET", "/v1/agents/me", m["api_key"].(string), nil); code != 200 {
		t.Fatalf("new key: %d", code)
	}
}

// TestSecurityJTIPerIssuer: two principals may use the same jti; neither
// learns of the other's.
func TestSecurityJTIPerIssuer(t *testing.T) {
	t.Parallel()
	v := newE2E(t)
	upload := func(a e2eAgent) (int, map[string]any) {
		now := v.clock.Now()
		tok, err := grants.SignGrant(a.principal, grants.GrantClaims{Subject: a.id, Audience: "venue", IssuedAt: now,
			ExpiresAt: now.Add(time.Hour), JTI: "grant-1"})
		if err != nil {
			t.Fatal(err)
		}
		return v.do("POST", "/v1/grants", a.key, map[string]any{"token": tok})
	}
	alice, bob := v.registerBare("Alice", "brand"), v.registerBare("Bob", "brand")
	if code, m := upload(alice); code != 201 {
		t.Fatalf("alice: %d %v", code, m)
	}
	if code, m := upload(bob); code != 201 {
		t.Fatalf("bob's grant with alice's jti: %d %v", code, m)
	}
	if code, m := upload(alice); code != 409 || m["error"].(map[string]any)["code"] != "duplicate_jti" {
		t.Fatalf("alice again: %d %v", code, m)
	}
}

// TestSecurityDateClaims: exp 1e30 or a date in a string is 422 malformed,
// for grants and decisions alike, never "expired".
func TestSecurityDateClaims(t *testing.T) {
	t.Parallel()
	v := newE2E(t)
	brand := v.registerBare("Acme", "brand")
	thumb := grants.Thumbprint(grants.PublicJWK(brand.principal.Public().(ed25519PublicKey)))
	for _, exp := range []string{`1e30`, `"1796112000"`, `-1`} {
		claims := `{"iss":"` + thumb + `","sub":"` + brand.id + `","aud":"venue","iat":1796025600,"exp":` + exp + `,"jti":"j","grant":{}}`
		code, m := v.do("POST", "/v1/grants", brand.key, map[string]any{"token": signRawToken(brand, grants.TypeGrant, claims)})
		if code != 422 || m["error"].(map[string]any)["code"] != "malformed" {
			t.Fatalf("exp %s: %d %v", exp, code, m)
		}
	}
}

// TestSecuritySocketBearer: sockets take the key in Authorization: Bearer,
// so it need not sit in a proxy's access log.
func TestSecuritySocketBearer(t *testing.T) {
	t.Parallel()
	v := newE2E(t)
	brand := v.register("Acme", "brand")
	h := http.Header{"Authorization": {"Bearer " + brand.key}}
	ws, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(v.url, "http")+"/v1/agents/"+brand.id+"/ws", h)
	if err != nil {
		t.Fatalf("lobby with a Bearer header: %v %v", err, resp)
	}
	ws.Close()
	h.Set("Authorization", "Bearer bsk_wrong")
	if _, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(v.url, "http")+"/v1/agents/"+brand.id+"/ws", h); err == nil || resp.StatusCode != 401 {
		t.Fatalf("a wrong Bearer key: %v %v", err, resp)
	}
}

func signRawToken(a e2eAgent, typ, claims string) string {
	enc := base64.RawURLEncoding
	in := enc.EncodeToString([]byte(`{"alg":"EdDSA","typ":"`+typ+`"}`)) + "." + enc.EncodeToString([]byte(claims))
	return in + "." + enc.EncodeToString(ed25519Sign(a.principal, []byte(in)))
}

type ed25519PublicKey = ed25519.PublicKey

var ed25519Sign = ed25519.Sign

// TestSecurityReceiptKeyRotation: after a rotation the JWKS lists the new
// key first and keeps the old one, so a receipt signed before still
// verifies; with a key-encryption key the stored keys are sealed.
func TestSecurityReceiptKeyRotation(t *testing.T) {
	t.Parallel()
	st := memory.New()
	sealer, err := receipt.NewSealer(bytes.Repeat([]byte{9}, 32))
	if err != nil {
		t.Fatal(err)
	}
	old, err := receipt.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	sealedOld, err := sealer.Seal(old)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.VenueKey(t.Context(), func() ([]byte, error) { return sealedOld, nil }); err != nil {
		t.Fatal(err)
	}
	oldReceipt, err := receipt.Sign(old, receipt.Claims{NegotiationID: "neg_1", Brand: "a", Bouncer: "b", Status: receipt.StatusWalked,
		StartedAt: "2026-11-30T08:00:00.000Z", EndedAt: "2026-11-30T08:01:00.000Z", JTI: "neg_1", IssuedAt: e2eStart})
	if err != nil {
		t.Fatal(err)
	}
	next, err := receipt.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	sealedNext, err := sealer.Seal(next)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.RotateVenueKey(t.Context(), sealedNext, e2eStart); err != nil {
		t.Fatal(err)
	}
	v := newE2E(t, func(c *venue.Config) { c.Store, c.KeySealer = st, sealer })
	resp, err := http.Get(v.url + "/.well-known/jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	jwks, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.HasPrefix(string(jwks), `{"keys":[{"kty":"OKP","crv":"Ed25519","x":"`+grants.PublicJWK(next.Public()).X) ||
		!strings.Contains(string(jwks), old.KID) {
		t.Fatalf("JWKS: %s", jwks)
	}
	if _, err := receipt.Verify(oldReceipt, jwks); err != nil {
		t.Fatalf("a receipt of the retired key: %v", err)
	}
	keys, err := st.VenueKeys(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if !receipt.IsSealed(k.Key) {
			t.Fatalf("key %d stored in the clear", k.ID)
		}
	}
	// A node without the key-encryption key cannot start on sealed keys.
	srv, err := venue.New(venue.Config{Store: st, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(t.Context()); !errors.Is(err, receipt.ErrSealed) {
		t.Fatalf("start without the key-encryption key: %v", err)
	}
}

// TestSecurityLobbyErrorsFixed: a store error reaches a lobby client as a
// fixed message, never the backend's text.
func TestSecurityLobbyErrorsFixed(t *testing.T) {
	t.Parallel()
	v := newE2E(t)
	brand := v.register("Acme", "brand")
	l := v.lobby(brand)
	l.send(`{"type":"get_profile","id":"g1","agent_id":"agt_nobody"}`)
	e := l.expect("error")
	msg := str(e["message"])
	if e["code"] != "not_found" || strings.Contains(msg, "store") || strings.Contains(msg, "agt_nobody") || strings.Contains(msg, "postgres") {
		t.Fatalf("lobby error: %v", e)
	}
}

// TestSecurityLobbyQuotas: a brand cannot flood a bouncer with requests; a
// bouncer can block a brand; old requests leave the store.
func TestSecurityLobbyQuotas(t *testing.T) {
	t.Parallel()
	v := newE2E(t)
	brand, bouncer := v.register("Acme", "brand"), v.register("Letters", "bouncer")
	bl := v.lobby(brand)
	next := func() map[string]any { // skipping the pushes of lapsed requests
		for {
			if m := bl.next(); m["type"] != "negotiation_declined" {
				return m
			}
		}
	}
	request := func(i int) map[string]any {
		bl.send(map[string]any{"type": "submit_offer", "id": "o", "to": bouncer.id, "offer": map[string]any{"title": "Spam"}})
		off := next()
		if off["type"] != "offer_submitted" {
			t.Fatalf("submit %d: %v", i, off)
		}
		bl.send(map[string]any{"type": "create_negotiation", "id": "c", "offer_id": off["offer_id"]})
		return next()
	}
	for i := range 3 {
		if m := request(i); m["type"] != "negotiation_created" {
			t.Fatalf("request %d: %v", i, m)
		}
	}
	if m := request(3); m["type"] != "error" || m["code"] != "rate_limited" {
		t.Fatalf("a 4th pending request to one bouncer: %v", m)
	}
	// The bouncer sees the three on connect, and blocks the brand.
	kl := v.lobby(bouncer)
	for range 3 {
		kl.expect("negotiation_requested")
	}
	kl.send(map[string]any{"type": "block_brand", "id": "b", "brand": brand.id})
	if m := kl.expect("brand_blocked"); m["blocked"] != true {
		t.Fatalf("block: %v", m)
	}
	v.clock.Advance(3 * time.Minute) // the three lapse
	for range 3 {                    // settled: they no longer count
		bl.expect("negotiation_declined")
	}
	if m := request(4); m["type"] != "error" || m["code"] != "forbidden" {
		t.Fatalf("a request from a blocked brand: %v", m)
	}
	kl.send(map[string]any{"type": "unblock_brand", "id": "u", "brand": brand.id})
	for m := kl.next(); m["type"] != "brand_blocked"; m = kl.next() {
		if m["type"] != "negotiation_declined" {
			t.Fatalf("unblock: %v", m)
		}
	}
	if m := request(5); m["type"] != "negotiation_created" {
		t.Fatalf("after unblocking and the lapse: %v", m)
	}
	// A brand cannot block.
	bl.send(map[string]any{"type": "block_brand", "id": "x", "brand": bouncer.id})
	if m := next(); m["type"] != "error" || m["code"] != "forbidden" {
		t.Fatalf("a brand blocking: %v", m)
	}
}

// TestSecurityRequestsPurged: a request that never went live leaves the
// store an hour on (the node's purge runs every 10 minutes).
func TestSecurityRequestsPurged(t *testing.T) {
	t.Parallel()
	v := newE2E(t)
	brand, bouncer := v.register("Acme", "brand"), v.register("Letters", "bouncer")
	bl := v.lobby(brand)
	bl.send(map[string]any{"type": "submit_offer", "id": "o", "to": bouncer.id, "offer": map[string]any{"title": "Spam"}})
	off := bl.expect("offer_submitted")
	bl.send(map[string]any{"type": "create_negotiation", "id": "c", "offer_id": off["offer_id"]})
	negID := str(bl.expect("negotiation_created")["negotiation_id"])
	if code, _ := v.do("GET", "/v1/negotiations/"+negID, "", nil); code != 200 {
		t.Fatalf("the request before the purge: %d", code)
	}
	v.clock.Advance(2 * time.Hour)
	deadline := time.Now().Add(e2eWait)
	for {
		v.clock.Advance(10 * time.Minute) // whenever the loop armed its timer, it fires
		code, _ := v.do("GET", "/v1/negotiations/"+negID, "", nil)
		if code == 404 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the request is still stored two hours on: %d", code)
		}
		time.Sleep(10 * time.Millisecond) // the purge runs on the node's own goroutine
	}
}

// TestSecurityReceiptKeyReload: a node picks up a rotation made while it
// runs (venue rotate-venue-key) within purgeEvery, with no restart.
func TestSecurityReceiptKeyReload(t *testing.T) {
	t.Parallel()
	st := memory.New()
	v := newE2E(t, func(c *venue.Config) { c.Store = st })
	next, err := receipt.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	if err := st.RotateVenueKey(t.Context(), next.PEM(), v.clock.Now()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(e2eWait)
	for {
		// The node's loop may not have armed its timer yet: every turn
		// moves the clock on by a whole period.
		v.clock.Advance(10 * time.Minute)
		_, body := get(t, v.url+"/.well-known/jwks.json")
		first := strings.Index(body, `"kid":"`)
		if first >= 0 && strings.HasPrefix(body[first+len(`"kid":"`):], next.KID) && strings.Count(body, `"kid"`) == 2 {
			return // the new key signs, the old one is kept
		}
		if time.Now().After(deadline) {
			t.Fatalf("JWKS after a rotation and the reload: %s", body)
		}
		time.Sleep(10 * time.Millisecond) // the reload runs on the node's own goroutine
	}
}

// TestSecurityRevocationsRateLimited: the principal's route needs no API
// key, so it is limited per client address; a flood of forged tokens gets
// 429 with Retry-After.
func TestSecurityRevocationsRateLimited(t *testing.T) {
	t.Parallel()
	v := newE2E(t)
	limited := 0
	const tries = 2 * venue.PrincipalPerMinute // refills during the loop are few
	for range tries {
		req, _ := http.NewRequest("POST", v.url+"/v1/revocations", strings.NewReader(`{"token":"a.b.c"}`))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusTooManyRequests {
			if resp.Header.Get("Retry-After") == "" {
				t.Fatal("429 without Retry-After")
			}
			limited++
		}
	}
	if limited < venue.PrincipalPerMinute/2 {
		t.Fatalf("%d of %d forged revocations limited, want at least %d", limited, tries, venue.PrincipalPerMinute/2)
	}
}
