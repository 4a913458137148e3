package venue_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/venuehq/venue/venue"
	"github.com/venuehq/venue/webhooks/webhookstest"
)

// hookReceiver is an agent's webhook endpoint: every POST is verified as
// a Standard Webhooks receiver does and its event queued.
type hookReceiver struct {
	*httptest.Server
	t      *testing.T
	mu     sync.Mutex
	secret string
	got    chan map[string]any
}

func newHookReceiver(t *testing.T, v *e2eVenue) *hookReceiver {
	h := &hookReceiver{t: t, got: make(chan map[string]any, 256)}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		secret := h.secret
		h.mu.Unlock()
		if err := webhookstest.Verify(secret, r.Header, body, v.clock.Now()); err != nil {
			t.Errorf("webhook %s: %v", r.Header.Get("webhook-id"), err)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if err := checkFrame("webhook", body); err != nil { // asyncapi.yaml's webhook channel
			t.Errorf("asyncapi: %v", err)
		}
		var ev map[string]any
		if err := json.Unmarshal(body, &ev); err != nil || ev["id"] != r.Header.Get("webhook-id") {
			t.Errorf("webhook body %s (%v)", body, err)
		}
		h.got <- ev
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(h.Close)
	return h
}

func (h *hookReceiver) setSecret(s string) {
	h.mu.Lock()
	h.secret = s
	h.mu.Unlock()
}

// until returns the first delivered event of type typ (those before it
// are returned too), failing after 10 s.
func (h *hookReceiver) until(typ string) (map[string]any, []map[string]any) {
	h.t.Helper()
	var seen []map[string]any
	for {
		select {
		case ev := <-h.got:
			if ev["type"] != ev["data"].(map[string]any)["type"] {
				h.t.Fatalf("event type %v, frame %v", ev["type"], ev["data"])
			}
			if ev["type"] == typ {
				return ev, seen
			}
			seen = append(seen, ev)
		case <-time.After(10 * time.Second):
			h.t.Fatalf("no %s webhook within 10 s (saw %v)", typ, seen)
		}
	}
}

// TestE2EWebhookAgent: a bouncer with a webhook and REST alone (no socket)
// is asked, accepts, negotiates and gets a deal against a brand on
// sockets; every event reaches it signed, with the event log's id and body
// (PROTOCOL.md "Webhooks").
func TestE2EWebhookAgent(t *testing.T) {
	t.Parallel()
	v := newE2E(t, func(c *venue.Config) { c.WebhooksAllowPrivate = true })
	brand, bouncer := v.register("Socket Brand", "brand"), v.register("Hook Bouncer", "bouncer")
	rc := newHookReceiver(t, v)

	// Bad input changes nothing.
	for _, body := range []string{`{}`, `{"url":"ftp://x/"}`, `{"url":"http://x/","events":"all"}`,
		`{"url":"http://x/","events":["Not A Type"]}`, `{"url":"http://x/","events":["a","a"]}`, `{"url":"http://x/","extra":1}`} {
		if code, m := v.do("PUT", "/v1/agents/me/webhook", bouncer.key, body); code != http.StatusUnprocessableEntity {
			t.Fatalf("PUT %s: %d %v", body, code, m)
		}
	}
	if code, _ := v.do("GET", "/v1/agents/me/webhook", bouncer.key, nil); code != http.StatusNotFound {
		t.Fatalf("GET before PUT: %d", code)
	}
	if code, _ := v.do("PUT", "/v1/agents/me/webhook", "", `{"url":"`+rc.URL+`"}`); code != http.StatusUnauthorized {
		t.Fatalf("PUT without a key: %d", code)
	}
	code, m := v.do("PUT", "/v1/agents/me/webhook", bouncer.key, map[string]any{"url": rc.URL + "/hook"})
	secret, _ := m["secret"].(string)
	if code != http.StatusOK || !strings.HasPrefix(secret, "whsec_") || m["url"] != rc.URL+"/hook" || m["created_at"] == nil {
		t.Fatalf("PUT: %d %v", code, m)
	}
	if code, m := v.do("GET", "/v1/agents/me/webhook", bouncer.key, nil); code != http.StatusOK || m["secret"] != nil || m["url"] != rc.URL+"/hook" || m["enabled"] != true {
		t.Fatalf("GET: %d %v", code, m)
	}
	code, m = v.do("POST", "/v1/agents/me/webhook/rotate-secret", bouncer.key, nil)
	if code != http.StatusOK || m["secret"] == secret || !strings.HasPrefix(fmt.Sprint(m["secret"]), "whsec_") {
		t.Fatalf("rotate: %d %v", code, m)
	}
	rc.setSecret(m["secret"].(string)) // deliveries are signed with the new one

	bl := v.lobby(brand)
	bl.send(map[string]any{"type": "submit_offer", "id": "o1", "to": bouncer.id, "offer": map[string]any{"title": "Spring launch", "brief": "Two sends"}})
	off := bl.expect("offer_submitted")
	bl.send(map[string]any{"type": "create_negotiation", "id": "c1", "offer_id": off["offer_id"]})
	negID := bl.expect("negotiation_created")["negotiation_id"].(string)

	req, _ := rc.until("negotiation_requested")
	if req["negotiation_id"] != negID || !strings.HasPrefix(req["id"].(string), "evt_") {
		t.Fatalf("requested: %v", req)
	}
	code, m = v.do("POST", "/v1/agents/me/lobby", bouncer.key, map[string]any{"type": "accept_negotiation", "id": "a1", "negotiation_id": negID})
	if code != http.StatusOK || m["type"] != "negotiation_accepted" {
		t.Fatalf("accept: %d %v", code, m)
	}
	bl.expect("negotiation_accepted")
	b := v.room(brand, negID, "")
	b.expect("negotiation_started")
	rc.until("negotiation_started")

	b.send(`{"type":"propose_terms","id":"b1","content":"Two sends for $3,000?","terms":{"amount_usd":3000,"sends":2}}`)
	b.expect("message_ack")
	prop, _ := rc.until("negotiation_message")
	if d := prop["data"].(map[string]any); d["frame_type"] != "propose_terms" || d["from"] != brand.id || d["offer_hash"] == nil {
		t.Fatalf("the brand's proposal as a webhook: %v", prop)
	}
	code, m = v.do("POST", "/v1/negotiations/"+negID+"/frames", bouncer.key, `{"type":"accept","id":"acc"}`)
	if code != http.StatusOK || m["type"] != "message_ack" {
		t.Fatalf("accept: %d %v", code, m)
	}
	b.expect("negotiation_message")
	b.expect("negotiation_ended")
	end, _ := rc.until("negotiation_ended")
	if d := end["data"].(map[string]any); d["status"] != "deal" || d["receipt"] == nil || end["negotiation_id"] != negID {
		t.Fatalf("ended: %v", end)
	}

	// A handshake push reaches the webhook too.
	if code, m := v.do("POST", "/v1/contacts", brand.key, map[string]any{"to": bouncer.id, "purpose": "A spring campaign"}); code != http.StatusCreated {
		t.Fatalf("contact request: %d %v", code, m)
	}
	rc.until("contact_requested")

	// The webhook carried the event log's ids and bodies.
	_, m = v.do("GET", "/v1/events", bouncer.key, nil)
	logged := map[string]string{}
	for _, e := range m["events"].([]any) {
		b, _ := json.Marshal(e)
		logged[e.(map[string]any)["id"].(string)] = string(b)
	}
	for _, ev := range []map[string]any{req, prop, end} {
		b, _ := json.Marshal(ev)
		if logged[ev["id"].(string)] != string(b) {
			t.Fatalf("webhook %s, log %s", b, logged[ev["id"].(string)])
		}
	}

	// The deliveries list: the latest first, all delivered with 200. The
	// venue records an attempt once the receiver has answered, which is
	// after the receiver saw the request: the list is read until the
	// contact's attempt is in it.
	var ds []any
	for deadline := time.Now().Add(testWait); ; {
		code, m = v.do("GET", "/v1/agents/me/webhook/deliveries?limit=3", bouncer.key, nil)
		ds, _ = m["deliveries"].([]any)
		if code != http.StatusOK || len(ds) != 3 {
			t.Fatalf("deliveries: %d %v", code, m)
		}
		if ds[0].(map[string]any)["type"] == "contact_requested" || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if d := ds[0].(map[string]any); d["result"] != "delivered" || d["status"] != float64(200) || d["type"] != "contact_requested" || d["attempt"] != float64(1) {
		t.Fatalf("latest delivery: %v", d)
	}
	if code, _ := v.do("GET", "/v1/agents/me/webhook/deliveries?limit=101", bouncer.key, nil); code != http.StatusUnprocessableEntity {
		t.Fatalf("limit=101: %d", code)
	}
	if code, _ := v.do("DELETE", "/v1/agents/me/webhook", bouncer.key, nil); code != http.StatusNoContent {
		t.Fatalf("DELETE: %d", code)
	}
	if code, _ := v.do("GET", "/v1/agents/me/webhook", bouncer.key, nil); code != http.StatusNotFound {
		t.Fatalf("GET after DELETE: %d", code)
	}
}

// TestE2EWebhookPrivateRefused: without --webhooks-allow-private, http and
// names or addresses that are not public are refused when set.
func TestE2EWebhookPrivateRefused(t *testing.T) {
	t.Parallel()
	v := newE2E(t)
	a := v.register("Hook", "bouncer")
	for _, u := range []string{"http://93.184.216.34/", "https://localhost/hook", "https://127.0.0.1:8443/", "https://10.0.0.1/", "https://169.254.169.254/"} {
		code, m := v.do("PUT", "/v1/agents/me/webhook", a.key, map[string]any{"url": u})
		if code != http.StatusUnprocessableEntity || m["error"] == nil {
			t.Fatalf("PUT %s: %d %v", u, code, m)
		}
	}
	if code, _ := v.do("GET", "/v1/agents/me/webhook", a.key, nil); code != http.StatusNotFound {
		t.Fatalf("a refused webhook was kept: %d", code)
	}
}
