package venue_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/venuehq/venue/grants"
	"github.com/venuehq/venue/receipt"
)

func cents(c int64) *int64 { return &c }

// TestE2EScopeBlockAndEscalation: a brand over its ceiling gets a
// scope_block naming amount_usd and category while the bouncer and an
// observer see nothing; an approved escalation lets the same proposal
// through and the turn clock resumes with the time that was left.
func TestE2EScopeBlockAndEscalation(t *testing.T) {
	t.Parallel()
	v := newE2E(t)
	brand := v.registerBare("Acme", "brand")
	v.grant(brand, grants.Scope{Amount: &grants.AmountLimit{MaxCents: cents(300000)}, Categories: []string{"footer"}})
	bouncer := v.register("Letters", "bouncer")
	negID, _, _ := v.match(brand, bouncer, false)
	b, k := v.room(brand, negID, ""), v.room(bouncer, negID, "")
	obs := v.dial("/v1/negotiations/" + negID + "/ws/observe")
	for _, c := range []*e2eConn{b, k, obs} {
		c.expect("negotiation_started")
	}
	proposal := `{"type":"propose_terms","id":"p1","terms":{"amount_usd":3500,"category":"primary_slot","sends":2}}`
	b.send(proposal)
	sb := b.expect("scope_block")
	checks := sb["checks"].([]any)
	if len(checks) != 2 || checks[0].(map[string]any)["check"] != "amount_usd" || checks[1].(map[string]any)["check"] != "category" {
		t.Fatalf("scope_block: %v", sb)
	}
	if c0 := checks[0].(map[string]any); c0["limit"] != "3000.00" || c0["got"] != "3500.00" || sb["re"] != "p1" {
		t.Fatalf("amount check: %v", sb)
	}
	// The turn clock kept running: 20 s pass, then the brand escalates.
	v.clock.Advance(20 * time.Second)
	b.send(`{"type":"escalate","content":"need $3,500 in the primary slot"}`)
	ack := b.expect("message_ack")
	escID := ack["escalation_id"].(string)
	if num(ack["seq"]) != 1 {
		t.Fatalf("the blocked frame consumed a seq: %v", ack)
	}
	for _, c := range []*e2eConn{k, obs} {
		m := c.expect("negotiation_message")
		if m["frame_type"] != "escalate" || strings.Contains(str(m), "3,500") {
			t.Fatalf("the other side learnt of the limit: %v", m)
		}
	}
	// The principal approves three minutes later (the turn clock is paused).
	v.clock.Advance(3 * time.Minute)
	now := v.clock.Now()
	tok, err := grants.SignDecision(brand.principal, grants.DecisionClaims{
		EscalationID: escID, Decision: "approve", Audience: "venue", IssuedAt: now, ExpiresAt: now.Add(10 * time.Minute),
		Grant: &grants.Scope{Amount: &grants.AmountLimit{MaxCents: cents(400000)}, Categories: []string{"primary_slot", "footer"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	code, m := v.do("POST", "/v1/escalations/"+escID+"/decision", "", map[string]any{"token": tok})
	if code != 200 {
		t.Fatalf("decision: %d %v", code, m)
	}
	res := b.expect("escalation_resolved")
	// 40 s were left when the clock paused at 08:00:20; it resumes with them.
	if res["decision"] != "approve" || res["turn_deadline_at"] != "2026-11-30T08:04:00.000Z" {
		t.Fatalf("escalation_resolved: %v", res)
	}
	// The same decision again: closed, nothing changes.
	if code, m := v.do("POST", "/v1/escalations/"+escID+"/decision", "", map[string]any{"token": tok}); code != 409 || m["error"].(map[string]any)["code"] != "escalation_closed" {
		t.Fatalf("second decision: %d %v", code, m)
	}
	b.send(proposal)
	if ack := b.expect("message_ack"); num(ack["seq"]) != 2 {
		t.Fatalf("after approval: %v", ack)
	}
	k.expect("negotiation_message")
	if m := obs.expect("negotiation_message"); m["frame_type"] != "propose_terms" {
		t.Fatalf("observer: %v", m)
	}
	obs.quiet()
	k.quiet()
}

// TestE2EEscalationDeniedAndLapsed: a deny changes nothing but the clock;
// a decision after the 5-minute pause is refused.
func TestE2EEscalationDeniedAndLapsed(t *testing.T) {
	t.Parallel()
	v := newE2E(t)
	brand, bouncer, _, b, k := v.live(true)
	decide := func(escID, decision string, a e2eAgent) (int, map[string]any) {
		now := v.clock.Now()
		c := grants.DecisionClaims{EscalationID: escID, Decision: decision, Audience: "venue", IssuedAt: now, ExpiresAt: now.Add(time.Hour)}
		if decision == "approve" {
			c.Grant = &grants.Scope{}
		}
		tok, err := grants.SignDecision(a.principal, c)
		if err != nil {
			t.Fatal(err)
		}
		return v.do("POST", "/v1/escalations/"+escID+"/decision", "", map[string]any{"token": tok})
	}
	b.send(`{"type":"escalate","content":"more room?"}`)
	esc1 := b.expect("message_ack")["escalation_id"].(string)
	k.expect("negotiation_message")
	// Signed by the wrong principal: 401, nothing changes.
	if code, m := decide(esc1, "deny", bouncer); code != http.StatusUnauthorized {
		t.Fatalf("wrong principal: %d %v", code, m)
	}
	if code, _ := decide(esc1, "deny", brand); code != 200 {
		t.Fatalf("deny: %d", code)
	}
	if r := b.expect("escalation_resolved"); r["decision"] != "deny" {
		t.Fatalf("resolved: %v", r)
	}
	b.send(`{"type":"escalate","content":"please?"}`)
	esc2 := b.expect("message_ack")["escalation_id"].(string)
	k.expect("negotiation_message")
	// The deadline of the negotiation is 8 minutes; the escalation lapses at 5.
	v.clock.Advance(5 * time.Minute)
	if r := b.expect("escalation_resolved"); r["decision"] != "lapsed" || r["escalation_id"] != esc2 {
		t.Fatalf("lapse: %v", r)
	}
	if code, m := decide(esc2, "approve", brand); code != 409 || m["error"].(map[string]any)["code"] != "escalation_closed" {
		t.Fatalf("late decision: %d %v", code, m)
	}
	if code, _ := decide("neg_nope.e1", "approve", brand); code != 404 {
		t.Fatalf("unknown escalation: %d", code)
	}
}

// TestE2EGrantTokens: what POST /v1/grants refuses, and revocation and key
// rotation taking effect on the next binding frame.
func TestE2EGrantTokens(t *testing.T) {
	t.Parallel()
	v := newE2E(t)
	a := v.registerBare("A", "brand")
	noKey := func() e2eAgent {
		code, m := v.do("POST", "/v1/register", "", map[string]any{"name": "nokey", "role": "brand"})
		if code != 201 {
			t.Fatal(m)
		}
		return e2eAgent{id: m["agent_id"].(string), key: m["api_key"].(string)}
	}()
	_, other, _ := grants.GenerateKey()
	now := v.clock.Now()
	sign := func(priv []byte, sub, aud string, iat, exp time.Time) string {
		tok, err := grants.SignGrant(priv, grants.GrantClaims{Subject: sub, Audience: aud, IssuedAt: iat, ExpiresAt: exp})
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	for _, tc := range []struct {
		name, key, token string
		status           int
		code             string
	}{
		{"wrong key", a.key, sign(other, a.id, "venue", now, now.Add(time.Hour)), 401, "bad_signature"},
		{"wrong subject", a.key, sign(a.principal, "agt_other", "venue", now, now.Add(time.Hour)), 403, "wrong_subject"},
		{"wrong audience", a.key, sign(a.principal, a.id, "elsewhere", now, now.Add(time.Hour)), 403, "wrong_audience"},
		{"expired", a.key, sign(a.principal, a.id, "venue", now.Add(-2*time.Hour), now.Add(-time.Hour)), 403, "expired"},
		{"malformed", a.key, "not.a.jwt", 422, "malformed"},
		{"alg none", a.key, "eyJhbGciOiJub25lIiwidHlwIjoiZ3JhbnQrand0In0.eyJzdWIiOiJ4In0.", 401, "wrong_algorithm"},
		{"no principal key", noKey.key, sign(a.principal, noKey.id, "venue", now, now.Add(time.Hour)), 422, "no_principal_key"},
	} {
		code, m := v.do("POST", "/v1/grants", tc.key, map[string]any{"token": tc.token})
		e, _ := m["error"].(map[string]any)
		if code != tc.status || e == nil || e["code"] != tc.code {
			t.Errorf("%s: %d %v, want %d %s", tc.name, code, m, tc.status, tc.code)
		}
	}
	bouncer := v.register("K", "bouncer")
	jti := v.grant(a, grants.Scope{})
	negID, _, _ := v.match(a, bouncer, true)
	b := v.room(a, negID, "")
	b.expect("negotiation_started")
	b.send(`{"type":"propose_terms","terms":{"amount_usd":100}}`)
	b.expect("message_ack")
	// Revoked: the next binding frame is blocked with check grant.
	if code, _ := v.do("DELETE", "/v1/grants/"+jti, a.key, nil); code != 200 {
		t.Fatalf("revoke: %d", code)
	}
	b.send(`{"type":"propose_terms","terms":{"amount_usd":100}}`)
	if c := b.expect("scope_block")["checks"].([]any)[0].(map[string]any); c["check"] != "grant" || c["got"] != "revoked" {
		t.Fatalf("after revoke: %v", c)
	}
	// A new grant, then a key rotation: grants of the old key stop applying.
	v.grant(a, grants.Scope{})
	b.send(`{"type":"propose_terms","terms":{"amount_usd":100}}`)
	b.expect("message_ack")
	pub, newPriv, _ := grants.GenerateKey()
	newThumb := grants.Thumbprint(grants.PublicJWK(pub))
	// The agent cannot swap its principal's key on its own api key...
	if code, m := v.do("PUT", "/v1/agents/me/principal-key", a.key, grants.PublicJWK(pub)); code != 403 || m["error"].(map[string]any)["code"] != "proof_required" {
		t.Fatalf("rotation without proof: %d %v", code, m)
	}
	// ...nor with a proof signed by the new key (its own).
	rot := grants.RotationClaims{Subject: a.id, Audience: "venue", NewThumbprint: newThumb, IssuedAt: v.clock.Now(), ExpiresAt: v.clock.Now().Add(10 * time.Minute)}
	selfProof, _ := grants.SignRotation(newPriv, rot)
	if code, m := v.do("PUT", "/v1/agents/me/principal-key", a.key, map[string]any{"principal_key": grants.PublicJWK(pub), "proof": selfProof}); code != 401 {
		t.Fatalf("self-signed rotation: %d %v", code, m)
	}
	proof, err := grants.SignRotation(a.principal, rot)
	if err != nil {
		t.Fatal(err)
	}
	if code, m := v.do("PUT", "/v1/agents/me/principal-key", a.key, map[string]any{"principal_key": grants.PublicJWK(pub), "proof": proof}); code != 200 {
		t.Fatalf("rotate with the current principal's proof: %d %v", code, m)
	}
	b.send(`{"type":"propose_terms","terms":{"amount_usd":100}}`)
	if c := b.expect("scope_block")["checks"].([]any)[0].(map[string]any); c["check"] != "grant" || c["got"] != "wrong_issuer" {
		t.Fatalf("after rotation: %v", c)
	}
	_, list := v.do("GET", "/v1/grants", a.key, nil)
	items := list["items"].([]any)
	if len(items) != 2 || items[0].(map[string]any)["status"] != "revoked" || items[1].(map[string]any)["status"] != "key_rotated" {
		t.Fatalf("grants: %v", list)
	}
}

// TestE2EBudgetAcrossNegotiations: two live negotiations cannot together
// exceed a brand's budget, whichever is accepted first.
func TestE2EBudgetAcrossNegotiations(t *testing.T) {
	t.Parallel()
	v := newE2E(t)
	brand := v.registerBare("B", "brand")
	v.grant(brand, grants.Scope{BudgetCents: cents(1000000)}) // $10,000
	k1, k2 := v.register("K1", "bouncer"), v.register("K2", "bouncer")
	n1, _, _ := v.match(brand, k1, false)
	n2, _, _ := v.match(brand, k2, false)
	b1, b2 := v.room(brand, n1, ""), v.room(brand, n2, "")
	r1, r2 := v.room(k1, n1, ""), v.room(k2, n2, "")
	for _, c := range []*e2eConn{b1, b2, r1, r2} {
		c.expect("negotiation_started")
	}
	b1.send(`{"type":"propose_terms","terms":{"amount_usd":6000}}`)
	b1.expect("message_ack")
	b2.send(`{"type":"propose_terms","terms":{"amount_usd":6000}}`)
	b2.expect("message_ack")
	r1.expect("negotiation_message")
	r2.expect("negotiation_message")
	r1.send(`{"type":"accept"}`)
	r1.expect("message_ack")
	r1.expect("negotiation_ended")
	r2.send(`{"type":"accept"}`)
	e := r2.expect("error")
	if e["code"] != "invalid_state" || strings.Contains(str(e), "10000") {
		t.Fatalf("second accept over the brand's budget: %v", e)
	}
	// The brand itself is told by scope_block when it tries to go over.
	b2.send(`{"type":"propose_terms","terms":{"amount_usd":4500}}`)
	sb := b2.expect("scope_block")
	if c := sb["checks"].([]any)[0].(map[string]any); c["check"] != "budget" || c["got"] != "10500.00" {
		t.Fatalf("budget scope_block: %v", sb)
	}
}

// TestE2EReceipt: a deal's negotiation_ended carries a receipt that
// verifies against the JWKS and the transcript; one changed byte fails.
func TestE2EReceipt(t *testing.T) {
	t.Parallel()
	v := newE2E(t)
	brand, _, negID, b, k := v.live(false)
	if code, _ := v.do("GET", "/v1/negotiations/"+negID+"/receipt", "", nil); code != 409 {
		t.Fatalf("receipt of a live negotiation: %d", code)
	}
	b.send(`{"type":"propose_terms","terms":{"amount_usd":2000,"sends":1}}`)
	b.expect("message_ack")
	k.expect("negotiation_message")
	k.send(`{"type":"accept"}`)
	k.expect("message_ack")
	end := k.expect("negotiation_ended")
	tok := end["receipt"].(string)
	b.expect("negotiation_message")
	if b.expect("negotiation_ended")["receipt"] != tok {
		t.Fatal("the parties got different receipts")
	}
	resp, err := apiClient(t).Get(v.url + "/.well-known/jwks.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	jwks := new(strings.Builder)
	_, _ = io_copy(jwks, resp)
	claims, err := receipt.Verify(tok, []byte(jwks.String()))
	if err != nil {
		t.Fatalf("verify receipt: %v", err)
	}
	if claims.Status != "deal" || claims.LastSeq != 3 || claims.NegotiationID != negID || claims.Brand != brand.id {
		t.Fatalf("claims: %+v", claims)
	}
	_, rr := v.do("GET", "/v1/negotiations/"+negID+"/receipt", "", nil)
	if rr["receipt"] != tok {
		t.Fatal("GET receipt differs from the one in negotiation_ended")
	}
	_, tr := v.do("GET", "/v1/negotiations/"+negID+"/transcript", "", nil)
	var entries []receipt.Entry
	for _, e := range tr["entries"].([]any) {
		m := e.(map[string]any)
		entries = append(entries, receipt.Entry{Seq: int64(num(m["seq"])), Frame: mustJSON(t, m["frame"]), Hash: m["hash"].(string)})
	}
	if err := receipt.VerifyTranscript(claims, entries); err != nil {
		t.Fatalf("transcript: %v", err)
	}
	entries[1].Frame = []byte(strings.Replace(string(entries[1].Frame), "2000", "2001", 1))
	if err := receipt.VerifyTranscript(claims, entries); err == nil {
		t.Fatal("a changed transcript still verifies")
	}
}

// TestE2EEscalationKeepsBudget: a negotiation-scoped grant from an approved
// escalation lifts the ceiling but not the general grant's budget.
func TestE2EEscalationKeepsBudget(t *testing.T) {
	t.Parallel()
	v := newE2E(t)
	brand := v.registerBare("B", "brand")
	v.grant(brand, grants.Scope{Amount: &grants.AmountLimit{MaxCents: cents(50000)}, BudgetCents: cents(100000)})
	bouncer := v.register("K", "bouncer")
	negID, _, _ := v.match(brand, bouncer, false)
	b := v.room(brand, negID, "")
	b.expect("negotiation_started")
	b.send(`{"type":"escalate","content":"need more"}`)
	escID := b.expect("message_ack")["escalation_id"].(string)
	now := v.clock.Now()
	tok, err := grants.SignDecision(brand.principal, grants.DecisionClaims{EscalationID: escID, Decision: "approve",
		Audience: "venue", IssuedAt: now, ExpiresAt: now.Add(time.Hour), Grant: &grants.Scope{Amount: &grants.AmountLimit{MaxCents: cents(500000)}}})
	if err != nil {
		t.Fatal(err)
	}
	if code, m := v.do("POST", "/v1/escalations/"+escID+"/decision", "", map[string]any{"token": tok}); code != 200 {
		t.Fatalf("decision: %d %v", code, m)
	}
	b.expect("escalation_resolved")
	b.send(`{"type":"propose_terms","terms":{"amount_usd":1500}}`)
	sb := b.expect("scope_block")
	if c := sb["checks"].([]any); len(c) != 1 || c[0].(map[string]any)["check"] != "budget" {
		t.Fatalf("the escalation stepped around the budget: %v", sb)
	}
	b.send(`{"type":"propose_terms","terms":{"amount_usd":900}}`) // above the old ceiling, within budget
	b.expect("message_ack")
}
