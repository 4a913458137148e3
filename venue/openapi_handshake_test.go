package venue_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/cookiejar"
	"testing"

	"github.com/venuehq/venue/venue"
)

// TestOpenAPIHandshake calls every route of the handshake and the owner
// portal through the checking client (openapi_check_test.go), so each
// answer is held to openapi.json, and checks the statuses here.
func TestOpenAPIHandshake(t *testing.T) {
	t.Parallel()
	var owned string
	v := newE2E(t, func(cfg *venue.Config) {
		cfg.Accounts = accountsFunc(func() string { return owned })
		cfg.IRCBridge = true
	})
	a, b, c := v.register("Alpha", "brand"), v.register("Bravo", "bouncer"), v.register("Charlie", "bouncer")
	owned = c.id
	expect := func(method, path, key string, body any, want int) map[string]any {
		t.Helper()
		code, m := v.do(method, path, key, body)
		if code != want {
			t.Fatalf("%s %s: %d %v, want %d", method, path, code, m, want)
		}
		return m
	}
	req := expect("POST", "/v1/contacts", a.key, map[string]any{"to": b.id, "purpose": "work together",
		"scopes": []string{"message", "task:assess", "resource:read"}, "ttl_days": 30}, 201)
	expect("GET", "/v1/contacts?direction=incoming&status=pending&limit=5&offset=0", b.key, nil, 200)
	expect("POST", "/v1/contacts/"+str(req["request_id"])+"/accept", b.key, nil, 200)
	expect("GET", "/v1/agreements?all=true", a.key, nil, 200)
	msg := expect("POST", "/v1/messages", a.key, map[string]any{"to": b.id, "text": "hello"}, 201)
	expect("POST", "/v1/messages", b.key, map[string]any{"to": a.id, "text": "hi", "reply_to": msg["message_id"]}, 201)
	expect("GET", "/v1/messages?limit=10", b.key, nil, 200)
	task := expect("POST", "/v1/tasks", a.key, map[string]any{"to": b.id, "skill": "assess", "text": "assess this"}, 201)
	expect("GET", "/v1/tasks?limit=5", b.key, nil, 200)
	expect("POST", "/v1/tasks/"+str(task["task_id"])+"/complete", b.key, map[string]any{"outcome": "completed", "text": "done"}, 200)
	expect("GET", "/v1/policy", b.key, nil, 200)
	expect("PUT", "/v1/policy", b.key, map[string]any{"policy": "agent-decides"}, 200)
	res := expect("POST", "/v1/resources", b.key, map[string]any{"title": "Rate card", "tags": []string{"rates"}, "access": "agreement", "content": "100 a send"}, 201)
	expect("GET", "/v1/resources?q=rate&tag=rates&limit=5&offset=0", a.key, nil, 200)
	expect("GET", "/v1/resources/"+str(res["resource_id"]), a.key, nil, 200)
	expect("POST", "/v1/reports", a.key, map[string]any{"agent_id": c.id, "category": "spam", "details": "too many"}, 201)
	ag := expect("GET", "/v1/agreements", a.key, nil, 200)["agreements"].([]any)[0].(map[string]any)
	expect("POST", "/v1/agreements/"+str(ag["agreement_id"])+"/revoke", a.key, nil, 200)
	// A request declined, one cancelled, one decided by the owner.
	r2 := expect("POST", "/v1/contacts", a.key, map[string]any{"to": b.id, "purpose": "again"}, 201)
	expect("POST", "/v1/contacts/"+str(r2["request_id"])+"/decline", b.key, nil, 200)
	r3 := expect("POST", "/v1/contacts", b.key, map[string]any{"to": a.id, "purpose": "the other way"}, 201)
	expect("POST", "/v1/contacts/"+str(r3["request_id"])+"/cancel", b.key, nil, 200)
	// Refusals: each status with its codes.
	expect("POST", "/v1/contacts", a.key, map[string]any{"to": a.id, "purpose": "me"}, 422)
	expect("POST", "/v1/contacts", a.key, map[string]any{"to": b.id, "purpose": "x", "scope": []string{"message"}}, 422)
	expect("POST", "/v1/contacts", a.key, map[string]any{"to": "agt_000000000000000000000000", "purpose": "x"}, 404)
	expect("POST", "/v1/messages", a.key, map[string]any{"to": b.id, "text": "no agreement now"}, 403)
	expect("POST", "/v1/contacts/req_nope/accept", b.key, nil, 404)
	expect("GET", "/v1/policy", "", nil, 401)
	expect("POST", "/v1/reports", a.key, map[string]any{"agent_id": c.id, "category": "spam"}, 409)

	// The owner portal: the page, a sign-in approved from IRC, the
	// account's view, a policy and a request decided by the owner.
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Transport: checkingTransport{t: t, next: http.DefaultTransport}, Jar: jar}
	call := func(method, path string, body any, want int) map[string]any {
		t.Helper()
		var rd *bytes.Reader
		if body != nil {
			j, _ := json.Marshal(body)
			rd = bytes.NewReader(j)
		} else {
			rd = bytes.NewReader(nil)
		}
		r, _ := http.NewRequest(method, v.url+path, rd)
		r.Header.Set("Content-Type", "application/json")
		resp, err := browser.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		if resp.StatusCode != want {
			t.Fatalf("%s %s: %d %v, want %d", method, path, resp.StatusCode, m, want)
		}
		return m
	}
	call("GET", "/owner", nil, 200)
	call("GET", "/owner/assets/owner.js", nil, 200)
	call("GET", "/owner/assets/owner.css", nil, 200)
	call("GET", "/owner/assets/nope.js", nil, 404)
	call("GET", "/owner/api/agents", nil, 401)
	if b := call("GET", "/owner/api/bridge", nil, 200); b["bridge"] != true {
		t.Fatalf("bridge: %v", b)
	}
	start := call("POST", "/owner/api/start", nil, 201)
	call("GET", "/owner/api/session", nil, 200)
	_, portal := v.srv.Handshake()
	if _, err := portal.Login(t.Context(), "charlie", str(start["code"]), v.clock.Now()); err != nil {
		t.Fatal(err)
	}
	call("PUT", "/owner/api/agents/"+c.id+"/policy", map[string]any{"policy": "owner-decides"}, 200)
	r4 := expect("POST", "/v1/contacts", a.key, map[string]any{"to": c.id, "purpose": "ask the owner"}, 201)
	r5 := expect("POST", "/v1/contacts", b.key, map[string]any{"to": c.id, "purpose": "ask the owner too"}, 201)
	if pending := call("GET", "/owner/api/agents", nil, 200)["pending"].([]any); len(pending) != 2 {
		t.Fatalf("pending %v", pending)
	}
	call("POST", "/owner/api/requests/"+str(r4["request_id"])+"/accept", map[string]any{"ttl_days": 7}, 200)
	call("POST", "/owner/api/requests/"+str(r5["request_id"])+"/decline", nil, 200)
	call("POST", "/owner/api/signout", nil, 200)
}
