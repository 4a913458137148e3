package venue_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/venuehq/venue/negotiation"
)

// TestE2EDeal is a whole negotiation to a deal with the literal frames of
// PROTOCOL.md "A whole negotiation, literal frames", watched by an observer who never sees a private frame.
func TestE2EDeal(t *testing.T) {
	t.Parallel()
	v := newE2E(t)
	brand, bouncer := v.register("Acme Brand Agent", "brand"), v.register("Newsletter Bouncer", "bouncer")
	negID, _, _ := v.match(brand, bouncer, false)

	b := v.room(brand, negID, "")
	k := v.room(bouncer, negID, "")
	obs := v.dial("/v1/negotiations/" + negID + "/ws/observe")
	for _, c := range []*e2eConn{b, k, obs} {
		st := c.expect("negotiation_started")
		ctx := st["context"].(map[string]any)
		if ctx["turn"] != brand.id || st["negotiation_id"] != negID || ctx["standing"] != nil {
			t.Fatalf("negotiation_started: %v", st)
		}
		if ctx["deadline_at"] != "2026-11-30T08:08:00.000Z" || ctx["turn_deadline_at"] != "2026-11-30T08:01:00.000Z" {
			t.Fatalf("clocks in negotiation_started: %v", ctx)
		}
	}

	b.send(`{"type":"message","id":"b1","content":"Hello from Acme."}`)
	ack := b.expect("message_ack")
	if ack["re"] != "b1" || num(ack["seq"]) != 1 || ack["turn"] != bouncer.id {
		t.Fatalf("ack: %v", ack)
	}
	for _, c := range []*e2eConn{k, obs} {
		m := c.expect("negotiation_message")
		if m["content"] != "Hello from Acme." || m["from"] != brand.id || num(m["seq"]) != 1 || m["hash"] == nil {
			t.Fatalf("relayed: %v", m)
		}
	}

	b.send(`{"type":"thinking"}`)
	for _, c := range []*e2eConn{k, obs} {
		c.expect("agent_thinking")
	}

	k.send(`{ "type": "propose_terms",
      "content": "Two sends, primary slot, $3,200.",
      "terms": { "amount_usd": 3200, "category": "primary_slot",
                 "sends": 2 },
      "ttl_seconds": 120 }`)
	pack := k.expect("message_ack")
	if pack["proposal_id"] == nil || !strings.HasPrefix(str(pack["offer_hash"]), "sha256:") || pack["expires_at"] != "2026-11-30T08:02:00.000Z" {
		t.Fatalf("proposal ack: %v", pack)
	}
	for _, c := range []*e2eConn{b, obs} {
		m := c.expect("negotiation_message")
		if m["frame_type"] != "propose_terms" || m["proposal_id"] != pack["proposal_id"] || m["offer_hash"] != pack["offer_hash"] {
			t.Fatalf("relayed proposal: %v", m)
		}
	}

	b.send(`{ "type": "accept" }`)
	b.expect("message_ack")
	k.expect("negotiation_message")
	obs.expect("negotiation_message")
	for _, c := range []*e2eConn{b, k, obs} {
		end := c.expect("negotiation_ended")
		if end["status"] != "deal" || end["offer_hash"] != pack["offer_hash"] {
			t.Fatalf("ended: %v", end)
		}
		terms := end["terms"].(map[string]any)
		if num(terms["amount_usd"]) != 3200 || terms["category"] != "primary_slot" {
			t.Fatalf("deal terms: %v", terms)
		}
	}
	obs.quiet()

	// The transcript: seq 1.. with a verifying chain; the REST view agrees.
	code, tr := v.do("GET", "/v1/negotiations/"+negID+"/transcript", "", nil)
	if code != 200 {
		t.Fatalf("transcript: %d %v", code, tr)
	}
	entries := tr["entries"].([]any)
	if len(entries) != 4 || num(tr["last_seq"]) != 4 {
		t.Fatalf("transcript: %v", tr)
	}
	verifyChain(t, entries)
	code, nv := v.do("GET", "/v1/negotiations/"+negID, "", nil)
	if code != 200 || nv["status"] != "deal" || nv["head_hash"] != tr["head_hash"] {
		t.Fatalf("negotiation view: %d %v", code, nv)
	}
	// Reputation: a live deal adds to both.
	_, p := v.do("GET", "/v1/agents/"+bouncer.id+"/profile", "", nil)
	if num(p["reputation"]) != negotiation.ReputationDeal {
		t.Fatalf("bouncer reputation after deal: %v", p)
	}
}

func verifyChain(t *testing.T, entries []any) {
	t.Helper()
	prev := ""
	for i, e := range entries {
		m := e.(map[string]any)
		if num(m["seq"]) != float64(i+1) {
			t.Fatalf("entry %d has seq %v", i, m["seq"])
		}
		frame := mustJSON(t, m["frame"])
		h, err := negotiation.ChainHash(prev, frame)
		if err != nil || h != m["hash"] {
			t.Fatalf("chain breaks at seq %d: %s != %v", i+1, h, m["hash"])
		}
		prev = h
	}
}

// TestE2EStaleOfferHash: an accept naming terms no longer standing gets a
// scope_block naming offer_hash, to the sender alone, and nothing lands.
func TestE2EStaleOfferHash(t *testing.T) {
	t.Parallel()
	v := newE2E(t)
	_, _, _, b, k, obs := v.watched(true)
	b.send(`{"type":"propose_terms","terms":{"amount_usd":3000,"sends":2}}`)
	first := b.expect("message_ack")
	k.expect("negotiation_message")
	obs.expect("negotiation_message")
	k.send(`{"type":"counter_terms","terms":{"amount_usd":3400,"sends":2}}`)
	k.expect("message_ack")
	b.expect("negotiation_message")
	obs.expect("negotiation_message")
	// The bouncer accepts... its own? No: the brand accepts the counter but
	// names the first proposal's hash: stale.
	b.send(map[string]any{"type": "accept", "id": "acc1", "offer_hash": first["offer_hash"]})
	sb := b.expect("scope_block")
	checks := sb["checks"].([]any)
	if sb["re"] != "acc1" || sb["frame_type"] != "accept" || len(checks) != 1 || checks[0].(map[string]any)["check"] != "offer_hash" {
		t.Fatalf("scope_block: %v", sb)
	}
	// Nothing landed: the next frame gets seq 3, and the others saw nothing
	// but that frame.
	b.send(`{"type":"message","content":"sorry, wrong hash"}`)
	if ack := b.expect("message_ack"); num(ack["seq"]) != 3 {
		t.Fatalf("after a scope_block the next seq is %v, want 3", ack["seq"])
	}
	for _, c := range []*e2eConn{k, obs} {
		if m := c.expect("negotiation_message"); m["content"] != "sorry, wrong hash" {
			t.Fatalf("the other side saw %v", m)
		}
	}
	// Accept by terms in another key order and number spelling: a deal.
	b.send(`{"type":"accept","terms":{"sends":2,"amount_usd":3400.0}}`)
	b.expect("message_ack")
	if end := b.expect("negotiation_ended"); end["status"] != "deal" {
		t.Fatalf("ended: %v", end)
	}
}

// TestE2ETTLExpiry: a proposal's ttl lapses on the (fake) clock; everyone
// gets proposal_expired and the proposal can no longer be accepted.
func TestE2ETTLExpiry(t *testing.T) {
	t.Parallel()
	v := newE2E(t)
	_, _, _, b, k, obs := v.watched(false)
	b.send(`{"type":"propose_terms","terms":{"amount_usd":2500},"ttl_seconds":5}`)
	ack := b.expect("message_ack")
	if ack["expires_at"] != "2026-11-30T08:00:10.000Z" { // clamped to 10 s
		t.Fatalf("ttl not clamped to 10 s: %v", ack)
	}
	k.expect("negotiation_message")
	obs.expect("negotiation_message")
	v.clock.Advance(10 * time.Second)
	for _, c := range []*e2eConn{b, k, obs} {
		ex := c.expect("proposal_expired")
		if ex["proposal_id"] != ack["proposal_id"] || ex["at"] != "2026-11-30T08:00:10.000Z" {
			t.Fatalf("proposal_expired: %v", ex)
		}
	}
	k.send(`{"type":"accept","id":"late"}`)
	if e := k.expect("error"); e["code"] != "invalid_state" || e["re"] != "late" {
		t.Fatalf("accept after expiry: %v", e)
	}
}

// TestE2ETurnMissed: the brand does not move within 60 s of the injected
// clock; the negotiation ends turn_missed by the brand, with a reputation hit.
func TestE2ETurnMissed(t *testing.T) {
	t.Parallel()
	v := newE2E(t)
	brand, _, _, b, k := v.live(false)
	// A move by the party not on turn changes neither turn nor clock.
	k.send(`{"type":"message","content":"take your time"}`)
	if ack := k.expect("message_ack"); ack["turn"] != brand.id || ack["turn_deadline_at"] != "2026-11-30T08:01:00.000Z" {
		t.Fatalf("off-turn move moved the turn: %v", ack)
	}
	b.expect("negotiation_message")
	v.clock.Advance(59 * time.Second)
	b.quiet()
	v.clock.Advance(time.Second)
	for _, c := range []*e2eConn{b, k} {
		end := c.expect("negotiation_ended")
		if end["status"] != "turn_missed" || end["by"] != brand.id {
			t.Fatalf("ended: %v", end)
		}
	}
	_, p := v.do("GET", "/v1/agents/"+brand.id+"/profile", "", nil)
	if num(p["reputation"]) != negotiation.ReputationTurnMissed {
		t.Fatalf("brand reputation after missing its turn: %v", p)
	}
}

// TestE2EReplay: a party that reconnects with ?since= misses nothing, and
// an observer can replay too; a resent frame id acts once.
func TestE2EReplay(t *testing.T) {
	t.Parallel()
	v := newE2E(t)
	_, bouncer, negID, b, k := v.live(true)
	b.send(`{"type":"message","id":"m1","content":"one"}`)
	b.expect("message_ack")
	k.expect("negotiation_message")
	k.ws.Close() // the bouncer drops
	b.send(`{"type":"research","content":"checking open rates"}`)
	b.expect("message_ack")
	b.send(`{"type":"propose_terms","terms":{"amount_usd":1200}}`)
	b.expect("message_ack")

	k2 := v.room(bouncer, negID, "&since=1")
	st := k2.expect("negotiation_started")
	if num(st["context"].(map[string]any)["last_seq"]) != 3 {
		t.Fatalf("started: %v", st)
	}
	if m := k2.expect("negotiation_message"); m["frame_type"] != "research" || num(m["seq"]) != 2 {
		t.Fatalf("replay 2: %v", m)
	}
	if m := k2.expect("negotiation_message"); m["frame_type"] != "propose_terms" || num(m["seq"]) != 3 {
		t.Fatalf("replay 3: %v", m)
	}
	// Live after the replay.
	b.send(`{"type":"message","content":"four"}`)
	b.expect("message_ack")
	if m := k2.expect("negotiation_message"); num(m["seq"]) != 4 {
		t.Fatalf("live after replay: %v", m)
	}
	// Idempotent resend: same ack, nothing acts twice.
	b.send(`{"type":"message","id":"m1","content":"one"}`)
	if ack := b.expect("message_ack"); num(ack["seq"]) != 1 || ack["re"] != "m1" {
		t.Fatalf("resend ack: %v", ack)
	}
	k2.quiet()
	obs := v.dial("/v1/negotiations/" + negID + "/ws/observe?since=0")
	obs.expect("negotiation_started")
	for i := 1; i <= 4; i++ {
		if m := obs.expect("negotiation_message"); num(m["seq"]) != float64(i) {
			t.Fatalf("observer replay %d: %v", i, m)
		}
	}
}

// TestE2EObserverPrivacy: observers never get message_ack, scope_block,
// error or an escalation's content; what they send is ignored and
// repeated sending closes them with 1008.
func TestE2EObserverPrivacy(t *testing.T) {
	t.Parallel()
	v := newE2E(t)
	_, _, negID, b, k, obs := v.watched(false)
	b.send(`{"type":"escalate","content":"need authority up to $5,000","terms":{"amount_usd":5000}}`)
	ack := b.expect("message_ack")
	if ack["escalation_id"] == nil || ack["turn_paused"] != true {
		t.Fatalf("escalate ack: %v", ack)
	}
	for _, c := range []*e2eConn{k, obs} {
		m := c.expect("negotiation_message")
		if m["frame_type"] != "escalate" || m["content"] != nil || m["terms"] != nil {
			t.Fatalf("escalate leaked to the other side: %v", m)
		}
	}
	b.send(`{"type":"bogus"}`)
	b.expect("error")
	b.send(`{"type":"accept"}`) // nothing stands: error to the sender only
	b.expect("error")
	obs.send(`{"type":"message","content":"hi"}`)
	b.send(`{"type":"message","content":"visible"}`)
	b.expect("message_ack")
	if m := obs.expect("negotiation_message"); m["content"] != "visible" {
		t.Fatalf("observer got %v", m)
	}
	for i := 0; i < 40; i++ {
		if err := obs.ws.WriteMessage(1, []byte(`{"type":"walk"}`)); err != nil {
			break
		}
	}
	if code := obs.closeCode(); code != 1008 {
		t.Fatalf("observer that keeps sending closed with %d, want 1008", code)
	}
	// The observer's walk frames did nothing.
	_, nv := v.do("GET", "/v1/negotiations/"+negID, "", nil)
	if nv["status"] != "live" {
		t.Fatalf("an observer changed the room: %v", nv)
	}
}

// TestE2ESocketAuth: tokens are checked before the upgrade.
func TestE2ESocketAuth(t *testing.T) {
	t.Parallel()
	v := newE2E(t)
	brand, bouncer := v.register("B", "brand"), v.register("K", "bouncer")
	other := v.register("O", "brand")
	negID, _, _ := v.match(brand, bouncer, false)
	for _, tc := range []struct {
		path string
		want int
	}{
		{"/v1/negotiations/" + negID + "/ws", http.StatusUnauthorized},
		{"/v1/negotiations/" + negID + "/ws?token=bsk_nope", http.StatusUnauthorized},
		{"/v1/negotiations/" + negID + "/ws?token=" + other.key, http.StatusForbidden},
		{"/v1/negotiations/nope/ws?token=" + brand.key, http.StatusNotFound},
		{"/v1/negotiations/" + negID + "/ws?token=" + brand.key + "&since=-1", http.StatusUnprocessableEntity},
		{"/v1/agents/" + brand.id + "/ws?token=" + bouncer.key, http.StatusForbidden},
		{"/v1/agents/" + brand.id + "/ws", http.StatusUnauthorized},
	} {
		_, resp, err := v.tryDial(tc.path)
		if err == nil || resp == nil || resp.StatusCode != tc.want {
			got := 0
			if resp != nil {
				got = resp.StatusCode
			}
			t.Errorf("%s: status %d, want %d", tc.path, got, tc.want)
		}
	}
}
