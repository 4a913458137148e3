package venue_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/venuehq/venue/deliveries"
	"github.com/venuehq/venue/deliveries/deliverypg"
	"github.com/venuehq/venue/settlement"
	"github.com/venuehq/venue/store/postgres"
	"github.com/venuehq/venue/store/storetest"
	"github.com/venuehq/venue/venue"
)

// toldSettler records every change it is told of on told, and reports a
// released instruction settled at once (as the shipped Recorder does).
type toldSettler struct{ told chan settlement.Instruction }

func (s toldSettler) Settle(_ context.Context, in settlement.Instruction) error {
	s.told <- in
	return nil
}

func (s toldSettler) Release(ctx context.Context, in settlement.Instruction, report settlement.Report) error {
	return report(ctx, in.ID, settlement.StatusSettled)
}

// onDeliveryBackends runs fn on a venue with the embedded stores and on one
// with the store and the deliveries on Postgres (a fresh schema), each with
// a toldSettler.
func onDeliveryBackends(t *testing.T, fn func(t *testing.T, v *e2eVenue, told chan settlement.Instruction)) {
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		told := make(chan settlement.Instruction, 64)
		fn(t, newE2E(t, func(c *venue.Config) { c.Settler = toldSettler{told} }), told)
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		url := storetest.DatabaseURL(t)
		st, err := postgres.New(t.Context(), url, postgres.WithSchema(storetest.Schema(t, url)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(st.Close)
		if _, err := st.Migrate(t.Context()); err != nil {
			t.Fatal(err)
		}
		told := make(chan settlement.Instruction, 64)
		fn(t, newE2E(t, func(c *venue.Config) {
			c.Store, c.Deliveries, c.Settler = st, deliverypg.New(st.Pool()), toldSettler{told}
		}), told)
	})
}

// deal plays a negotiation to a deal of $3,200 (arena or live) and returns
// its parties and id; before the deal it checks that a delivery is refused.
func (v *e2eVenue) deal(arena bool) (brand, bouncer e2eAgent, negID string) {
	v.t.Helper()
	brand, bouncer, negID, b, k := v.live(arena)
	if code, m := v.do("POST", "/v1/negotiations/"+negID+"/deliveries", bouncer.key, map[string]any{"url": "https://example.com/early"}); code != 409 || errCode(m) != "invalid_state" {
		v.t.Fatalf("deliver before the deal: %d %v", code, m)
	}
	k.send(`{"type":"propose_terms","id":"p1","content":"Two sends, $3,200.","terms":{"amount_usd":3200,"sends":2}}`)
	k.expect("message_ack")
	b.expect("negotiation_message")
	b.send(`{"type":"accept","id":"acc"}`)
	b.expect("message_ack")
	k.expect("negotiation_message")
	for _, c := range []*e2eConn{b, k} {
		if end := c.expect("negotiation_ended"); end["status"] != "deal" {
			v.t.Fatalf("ended: %v", end)
		}
	}
	return brand, bouncer, negID
}

func errCode(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

// expectTold waits for the settler to be told of status for negID.
func expectTold(t *testing.T, told chan settlement.Instruction, negID, status string) {
	t.Helper()
	select {
	case in := <-told:
		if in.NegotiationID != negID || in.Status != status {
			t.Fatalf("settler told %s %s, want %s %s", in.NegotiationID, in.Status, negID, status)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("the settler was not told %s of %s", status, negID)
	}
}

// settlementOf is the caller's settlement of negID from GET /v1/settlements.
func (v *e2eVenue) settlementOf(a e2eAgent, negID string) map[string]any {
	v.t.Helper()
	code, m := v.do("GET", "/v1/settlements", a.key, nil)
	if code != 200 {
		v.t.Fatalf("settlements: %d %v", code, m)
	}
	for _, it := range m["items"].([]any) {
		if it := it.(map[string]any); it["negotiation_id"] == negID {
			return it
		}
	}
	return nil
}

// evidence fetches the evidence of negID as a: status and body.
func (v *e2eVenue) evidence(a e2eAgent, negID string) (int, string, string) {
	v.t.Helper()
	req, _ := http.NewRequest("GET", v.url+"/v1/negotiations/"+negID+"/evidence", nil)
	req.Header.Set("Authorization", "Bearer "+a.key)
	resp, err := apiClient(v.t).Do(req)
	if err != nil {
		v.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
}

func (v *e2eVenue) jwks() []byte {
	v.t.Helper()
	resp, err := apiClient(v.t).Get(v.url + "/.well-known/jwks.json")
	if err != nil {
		v.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return b
}

// TestE2EDeliveryApproved: the bouncer delivers, the brand approves; the
// settlement goes pending -> released -> settled, the settler is told of
// each, the parties get the events, and wrong parties and wrong states are
// refused without a change; the evidence verifies offline.
func TestE2EDeliveryApproved(t *testing.T) {
	t.Parallel()
	onDeliveryBackends(t, func(t *testing.T, v *e2eVenue, told chan settlement.Instruction) {
		brand, bouncer, negID := v.deal(false)
		expectTold(t, told, negID, settlement.StatusPending) // the deal
		stranger := v.register("S", "bouncer")
		path := "/v1/negotiations/" + negID + "/deliveries"
		body := map[string]any{"url": "https://example.com/issue/42", "note": "ran Tuesday", "sha256": strings.Repeat("ab", 32)}

		// Wrong parties and bad bodies change nothing.
		for _, c := range []struct {
			who  e2eAgent
			body any
			code int
			err  string
		}{
			{brand, body, 403, "forbidden"},
			{stranger, body, 403, "forbidden"},
			{bouncer, map[string]any{"url": "http://example.com/x"}, 422, "invalid_argument"},
			{bouncer, map[string]any{"url": "https://example.com/x", "extra": true}, 422, "invalid_argument"},
			{bouncer, "{not json", 400, "invalid_json"},
		} {
			if code, m := v.do("POST", path, c.who.key, c.body); code != c.code || errCode(m) != c.err {
				t.Fatalf("deliver as %s: %d %v, want %d %s", c.who.id, code, m, c.code, c.err)
			}
		}
		if code, _ := v.do("POST", path, "", body); code != 401 {
			t.Fatalf("deliver without a key: %d", code)
		}
		if it := v.settlementOf(brand, negID); it["status"] != "pending" || it["delivery"] != nil {
			t.Fatalf("before delivery: %v", it)
		}

		code, d := v.do("POST", path, bouncer.key, body)
		if code != 201 || d["status"] != "submitted" || !strings.HasPrefix(str(d["delivery_id"]), "dlv_") || d["submitted_at"] != "2026-11-30T08:00:00.000Z" {
			t.Fatalf("deliver: %d %v", code, d)
		}
		dlv := d["delivery_id"].(string)
		if code, m := v.do("POST", path, bouncer.key, body); code != 409 || errCode(m) != "invalid_state" {
			t.Fatalf("second delivery while one awaits: %d %v", code, m)
		}
		if it := v.settlementOf(bouncer, negID); it["status"] != "pending" || it["delivery"].(map[string]any)["delivery_id"] != dlv {
			t.Fatalf("after delivery: %v", it)
		}

		approve := path + "/" + dlv + "/approve"
		if code, m := v.do("POST", approve, bouncer.key, nil); code != 403 || errCode(m) != "forbidden" {
			t.Fatalf("bouncer approves: %d %v", code, m)
		}
		if code, m := v.do("POST", path+"/dlv_000000000000000000000000/approve", brand.key, nil); code != 404 {
			t.Fatalf("unknown delivery: %d %v", code, m)
		}
		code, a := v.do("POST", approve, brand.key, nil)
		if code != 200 || a["status"] != "approved" || a["answered_by"] != "brand" {
			t.Fatalf("approve: %d %v", code, a)
		}
		expectTold(t, told, negID, settlement.StatusReleased)
		expectTold(t, told, negID, settlement.StatusSettled)
		if code, m := v.do("POST", approve, brand.key, nil); code != 409 || errCode(m) != "invalid_state" {
			t.Fatalf("approve twice: %d %v", code, m)
		}
		if code, m := v.do("POST", path+"/"+dlv+"/dispute", brand.key, map[string]any{"reason": "late"}); code != 409 || errCode(m) != "invalid_state" {
			t.Fatalf("dispute after approval: %d %v", code, m)
		}
		it := v.settlementOf(brand, negID)
		if it["status"] != "settled" || it["delivery"].(map[string]any)["status"] != "approved" {
			t.Fatalf("settled: %v", it)
		}

		// The events: the delivery's and each settlement change, to both.
		for _, a := range []e2eAgent{brand, bouncer} {
			_, evs := v.do("GET", "/v1/events", a.key, nil)
			var types []string
			for _, e := range evs["events"].([]any) {
				if typ := e.(map[string]any)["type"].(string); typ == "delivery_updated" || typ == "settlement_updated" {
					types = append(types, typ)
				}
			}
			if strings.Join(types, ",") != "delivery_updated,delivery_updated,settlement_updated,settlement_updated" {
				t.Fatalf("events of %s: %v", a.id, types)
			}
		}

		// Evidence: the parties only; it verifies offline, and a changed byte fails.
		if code, _, _ := v.evidence(stranger, negID); code != 404 {
			t.Fatalf("evidence to a stranger: %d", code)
		}
		code, ctype, tok := v.evidence(brand, negID)
		if code != 200 || ctype != "application/jose" {
			t.Fatalf("evidence: %d %s %s", code, ctype, tok)
		}
		ev, rc, err := deliveries.VerifyEvidence(tok, v.jwks())
		if err != nil {
			t.Fatal(err)
		}
		var stl map[string]any
		_ = json.Unmarshal(ev.Settlement, &stl)
		if rc.Status != "deal" || ev.NegotiationID != negID || len(ev.Deliveries) != 1 || stl["status"] != "settled" ||
			len(ev.Grants) != 2 || ev.Grants[0].Grant == nil || ev.Grants[0].Grant.Subject != bouncer.id || ev.Grants[1].By != brand.id {
			t.Fatalf("evidence %+v %+v", ev, rc)
		}
		parts := strings.Split(tok, ".")
		forged := parts[0] + "." + parts[1][:len(parts[1])-2] + "AA." + parts[2]
		if _, _, err := deliveries.VerifyEvidence(forged, v.jwks()); err == nil {
			t.Fatal("a changed evidence verified")
		}
		if code, _, _ := v.evidence(bouncer, negID); code != 200 {
			t.Fatalf("evidence to the bouncer: %d", code)
		}
	})
}

// TestE2EDeliveryDisputed: a dispute moves the settlement to disputed;
// approving after it is refused; the settler is told; nothing settles.
func TestE2EDeliveryDisputed(t *testing.T) {
	t.Parallel()
	onDeliveryBackends(t, func(t *testing.T, v *e2eVenue, told chan settlement.Instruction) {
		brand, bouncer, negID := v.deal(false)
		expectTold(t, told, negID, settlement.StatusPending)
		path := "/v1/negotiations/" + negID + "/deliveries"
		_, d := v.do("POST", path, bouncer.key, map[string]any{"url": "https://example.com/p"})
		dlv := str(d["delivery_id"])
		if code, m := v.do("POST", path+"/"+dlv+"/dispute", brand.key, map[string]any{}); code != 422 || errCode(m) != "invalid_argument" {
			t.Fatalf("dispute without a reason: %d %v", code, m)
		}
		if code, m := v.do("POST", path+"/"+dlv+"/dispute", bouncer.key, map[string]any{"reason": "x"}); code != 403 {
			t.Fatalf("bouncer disputes: %d %v", code, m)
		}
		code, m := v.do("POST", path+"/"+dlv+"/dispute", brand.key, map[string]any{"reason": "the send never ran"})
		if code != 200 || m["status"] != "disputed" || m["reason"] != "the send never ran" {
			t.Fatalf("dispute: %d %v", code, m)
		}
		expectTold(t, told, negID, settlement.StatusDisputed)
		if code, m := v.do("POST", path+"/"+dlv+"/approve", brand.key, nil); code != 409 || errCode(m) != "invalid_state" {
			t.Fatalf("approve after a dispute: %d %v", code, m)
		}
		if code, m := v.do("POST", path, bouncer.key, map[string]any{"url": "https://example.com/again"}); code != 409 {
			t.Fatalf("deliver after a dispute: %d %v", code, m)
		}
		if it := v.settlementOf(bouncer, negID); it["status"] != "disputed" || it["delivery"].(map[string]any)["status"] != "disputed" {
			t.Fatalf("disputed: %v", it)
		}
		code, _, tok := v.evidence(bouncer, negID)
		if code != 200 {
			t.Fatalf("evidence: %d", code)
		}
		if ev, _, err := deliveries.VerifyEvidence(tok, v.jwks()); err != nil || !strings.Contains(string(ev.Deliveries[0]), "the send never ran") {
			t.Fatalf("evidence: %v", err)
		}
	})
}

// TestE2EDeliveryAutoApproved: a delivery left unanswered for the approval
// window is approved by the venue (answered_by "venue") on the fake clock,
// the settlement released and settled; not a moment before.
func TestE2EDeliveryAutoApproved(t *testing.T) {
	t.Parallel()
	onDeliveryBackends(t, func(t *testing.T, v *e2eVenue, told chan settlement.Instruction) {
		brand, bouncer, negID := v.deal(false)
		expectTold(t, told, negID, settlement.StatusPending)
		_, d := v.do("POST", "/v1/negotiations/"+negID+"/deliveries", bouncer.key, map[string]any{"url": "https://example.com/p"})
		if d["approve_by"] != "2026-12-14T08:00:00.000Z" {
			t.Fatalf("approve_by: %v", d)
		}
		v.clock.Advance(deliveries.DefaultApprovalWindow - time.Minute)
		if it := v.settlementOf(brand, negID); it["status"] != "pending" {
			t.Fatalf("approved early: %v", it)
		}
		// Past the window: the node's sweep (every minute on the venue
		// clock) approves it; the test nudges the fake clock until it has.
		deadline := time.Now().Add(20 * time.Second)
		for done := false; !done; {
			v.clock.Advance(time.Minute)
			select {
			case in := <-told:
				if in.Status != settlement.StatusReleased || in.NegotiationID != negID {
					t.Fatalf("told %+v", in)
				}
				done = true
			case <-time.After(20 * time.Millisecond):
				if time.Now().After(deadline) {
					t.Fatal("the venue never approved the delivery")
				}
			}
		}
		expectTold(t, told, negID, settlement.StatusSettled)
		it := v.settlementOf(brand, negID)
		dl := it["delivery"].(map[string]any)
		if it["status"] != "settled" || dl["status"] != "approved" || dl["answered_by"] != "venue" {
			t.Fatalf("auto-approved: %v", it)
		}
		select {
		case in := <-told:
			t.Fatalf("told once more: %+v", in)
		default:
		}
	})
}

// TestE2EDeliveryArena: an arena deal takes the same path; nothing settles.
func TestE2EDeliveryArena(t *testing.T) {
	t.Parallel()
	onDeliveryBackends(t, func(t *testing.T, v *e2eVenue, told chan settlement.Instruction) {
		brand, bouncer, negID := v.deal(true)
		path := "/v1/negotiations/" + negID + "/deliveries"
		code, d := v.do("POST", path, bouncer.key, map[string]any{"url": "https://example.com/p"})
		if code != 201 {
			t.Fatalf("deliver: %d %v", code, d)
		}
		if code, m := v.do("POST", path+"/"+str(d["delivery_id"])+"/approve", brand.key, nil); code != 200 || m["status"] != "approved" {
			t.Fatalf("approve: %d %v", code, m)
		}
		if it := v.settlementOf(brand, negID); it != nil {
			t.Fatalf("an arena settlement: %v", it)
		}
		code, _, tok := v.evidence(brand, negID)
		ev, _, err := deliveries.VerifyEvidence(tok, v.jwks())
		if code != 200 || err != nil || string(ev.Settlement) != "null" || len(ev.Deliveries) != 1 {
			t.Fatalf("arena evidence: %d %v %+v", code, err, ev)
		}
		select {
		case in := <-told:
			t.Fatalf("the settler was told of an arena deal: %+v", in)
		default:
		}
	})
}
