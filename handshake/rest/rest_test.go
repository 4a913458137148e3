package rest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/venuehq/venue/clock"
	"github.com/venuehq/venue/handshake"
	"github.com/venuehq/venue/handshake/memory"
	"github.com/venuehq/venue/handshake/rest"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/wire"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// dir is a directory of fixed agents whose api_key is "key-" + id.
type dir map[string]store.Agent

func (d dir) Agent(_ context.Context, id string) (store.Agent, error) {
	a, ok := d[id]
	if !ok {
		return a, wire.Errorf(wire.CodeNotFound, "no agent %s", id)
	}
	return a, nil
}

func (d dir) Authenticate(_ context.Context, key string) (store.Agent, error) {
	a, ok := d[strings.TrimPrefix(key, "key-")]
	if !ok || !strings.HasPrefix(key, "key-") {
		return a, wire.Errorf(wire.CodeUnauthorized, "unknown api_key")
	}
	return a, nil
}

type env struct {
	srv    *httptest.Server
	clk    *clock.Fake
	svc    *handshake.Service
	portal *handshake.Portal
}

func setup(t *testing.T) *env {
	t.Helper()
	d := dir{"a": {ID: "a", Name: "Alpha"}, "b": {ID: "b", Name: "Bravo"}}
	clk := clock.NewFake(t0)
	n := 0
	svc := &handshake.Service{Store: memory.New(), Agents: d, Accounts: handshake.StaticAccounts{"alice": {"b"}},
		NewID: func(p string) string { n++; return fmt.Sprintf("%s_%d", p, n) }}
	h := rest.New(rest.Handler{Service: svc, Auth: d, Now: clk.Now, Bridge: true})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &env{srv: srv, clk: clk, svc: svc, portal: h.Portal}
}

// call sends a request as agent (no Authorization when "") and decodes the answer.
func (e *env) call(t *testing.T, agent, method, path, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if agent != "" {
		req.Header.Set("Authorization", "Bearer key-"+agent)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s %s: %d %s", method, path, res.StatusCode, b)
	}
	return res.StatusCode, m
}

func errCode(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func TestRESTHandshake(t *testing.T) {
	t.Parallel()
	e := setup(t)
	st, m := e.call(t, "a", "POST", "/v1/contacts", `{"to":"b","purpose":"share data","scopes":["message","task:assess"],"ttl_days":10}`)
	if st != 201 || m["status"] != "pending" {
		t.Fatalf("contact: %d %v", st, m)
	}
	reqID := m["request_id"].(string)
	st, m = e.call(t, "b", "GET", "/v1/contacts?direction=incoming", "")
	if st != 200 || m["total"].(float64) != 1 || m["returned"].(float64) != 1 {
		t.Fatalf("contacts: %d %v", st, m)
	}
	st, m = e.call(t, "b", "POST", "/v1/contacts/"+reqID+"/accept", `{"scopes":["message"],"ttl_days":20}`)
	if st != 422 || errCode(m) != "invalid_argument" {
		t.Fatalf("accept longer: %d %v", st, m)
	}
	st, m = e.call(t, "b", "POST", "/v1/contacts/"+reqID+"/accept", `{"scopes":["message","task:assess"],"ttl_days":5}`)
	if st != 200 || m["role"] != "target" || m["with"].(map[string]any)["name"] != "Alpha" {
		t.Fatalf("accept: %d %v", st, m)
	}
	agrID := m["agreement_id"].(string)
	st, m = e.call(t, "a", "POST", "/v1/messages", `{"to":"b","text":"hello"}`)
	if st != 201 || m["hop"].(float64) != 0 {
		t.Fatalf("send: %d %v", st, m)
	}
	first := m["message_id"].(string)
	st, m = e.call(t, "b", "POST", "/v1/messages", `{"to":"a","text":"hi back","reply_to":"`+first+`"}`)
	if st != 201 || m["hop"].(float64) != 1 || m["conversation_id"] != first {
		t.Fatalf("reply: %d %v", st, m)
	}
	st, m = e.call(t, "b", "GET", "/v1/messages?limit=5", "")
	msgs := m["messages"].([]any)
	if st != 200 || len(msgs) != 1 || msgs[0].(map[string]any)["from"].(map[string]any)["name"] != "Alpha" {
		t.Fatalf("inbox: %d %v", st, m)
	}
	st, m = e.call(t, "a", "POST", "/v1/tasks", `{"to":"b","skill":"assess","text":"ammonia leak?"}`)
	if st != 201 {
		t.Fatalf("task: %d %v", st, m)
	}
	taskID := m["task_id"].(string)
	st, m = e.call(t, "b", "GET", "/v1/tasks", "")
	if st != 200 || m["total"].(float64) != 1 {
		t.Fatalf("tasks: %d %v", st, m)
	}
	st, m = e.call(t, "b", "POST", "/v1/tasks/"+taskID+"/complete", `{"outcome":"completed","text":"low risk"}`)
	if st != 200 || m["status"] != "completed" || m["result"] != "low risk" {
		t.Fatalf("complete: %d %v", st, m)
	}
	st, m = e.call(t, "a", "GET", "/v1/agreements", "")
	if st != 200 || len(m["agreements"].([]any)) != 1 {
		t.Fatalf("agreements: %d %v", st, m)
	}
	st, m = e.call(t, "a", "POST", "/v1/agreements/"+agrID+"/revoke", "")
	if st != 200 || m["status"] != "revoked" {
		t.Fatalf("revoke: %d %v", st, m)
	}
	st, m = e.call(t, "b", "POST", "/v1/messages", `{"to":"a","text":"still there?"}`)
	if st != 403 || errCode(m) != "not_authorized" {
		t.Fatalf("send after revoke: %d %v", st, m)
	}
	st, m = e.call(t, "a", "GET", "/v1/agreements?all=true", "")
	if st != 200 || len(m["agreements"].([]any)) != 1 {
		t.Fatalf("all agreements: %d %v", st, m)
	}
}

func TestRESTRefusals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		agent, method, path, body string
		status                    int
		code                      string
	}{
		{"", "GET", "/v1/contacts", "", 401, "unauthorized"},
		{"zz", "GET", "/v1/agreements", "", 401, "unauthorized"},
		{"a", "POST", "/v1/contacts", `{"to":"a","purpose":"p"}`, 422, "self_contact"},
		{"a", "POST", "/v1/contacts", `{"to":"b"}`, 422, "invalid_argument"},
		{"a", "POST", "/v1/contacts", `{"to":"b","purpose":"p","scopes":"message"}`, 422, "invalid_argument"},
		{"a", "POST", "/v1/contacts", `{"to":"b","purpose":"p","scopes":["root"]}`, 422, "invalid_scope"},
		{"a", "POST", "/v1/contacts", `{"to":"b","purpose":"p","ttl_days":0}`, 422, "invalid_argument"},
		{"a", "POST", "/v1/contacts", `{"to":"nobody","purpose":"p"}`, 404, "unknown_agent"},
		{"a", "POST", "/v1/contacts", `{"to":"b","to":"a","purpose":"p"}`, 400, "invalid_json"},
		{"a", "POST", "/v1/contacts", `not json`, 400, "invalid_json"},
		{"a", "POST", "/v1/contacts", `{"to":"b","purpose":"p","scope":["message"]}`, 422, "invalid_argument"},
		{"a", "POST", "/v1/messages", `{"to":"b","txt":"x"}`, 422, "invalid_argument"},
		{"a", "POST", "/v1/contacts", `{"to":"b","purpose":"` + strings.Repeat("x", 70000) + `"}`, 413, "too_large"},
		{"a", "GET", "/v1/contacts?limit=x", "", 422, "invalid_argument"},
		{"a", "GET", "/v1/contacts?status=maybe", "", 422, "invalid_argument"},
		{"a", "POST", "/v1/contacts/req_nope/accept", "", 404, "not_found"},
		{"a", "POST", "/v1/agreements/agr_nope/revoke", "", 404, "not_found"},
		{"a", "GET", "/v1/agreements?all=yes", "", 422, "invalid_argument"},
		{"a", "POST", "/v1/messages", `{"to":"b","text":"x"}`, 403, "not_authorized"},
		{"a", "POST", "/v1/messages", `{"to":"b"}`, 422, "invalid_argument"},
		{"a", "POST", "/v1/tasks", `{"to":"b","skill":"x","text":"t"}`, 403, "not_authorized"},
		{"a", "POST", "/v1/tasks/tsk_nope/complete", `{"outcome":"completed"}`, 404, "not_found"},
		{"a", "PUT", "/v1/policy", `{"policy":"whatever"}`, 422, "invalid_argument"},
		{"a", "POST", "/v1/reports", `{"agent_id":"a","category":"spam"}`, 422, "self_report"},
		{"a", "GET", "/v1/resources/res_nope", "", 404, "not_found"},
		{"", "GET", "/owner/api/agents", "", 401, "unauthorized"},
	}
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.path+" "+tc.code, func(t *testing.T) {
			t.Parallel()
			e := setup(t)
			st, m := e.call(t, tc.agent, tc.method, tc.path, tc.body)
			if st != tc.status || errCode(m) != tc.code {
				t.Fatalf("got %d %v, want %d %s", st, m, tc.status, tc.code)
			}
			// Nothing changed: b has no request.
			if rs, n, _ := e.svc.Contacts(context.Background(), "b", handshake.ContactsQuery{Status: "any"}, t0); n != 0 {
				t.Fatalf("a refused request left %v", rs)
			}
		})
	}
}

func TestRESTPolicyResourcesReports(t *testing.T) {
	t.Parallel()
	e := setup(t)
	st, m := e.call(t, "b", "GET", "/v1/policy", "")
	if st != 200 || m["policy"] != "agent-decides" {
		t.Fatalf("policy: %d %v", st, m)
	}
	st, m = e.call(t, "b", "PUT", "/v1/policy", `{"policy":"auto-accept"}`)
	if st != 200 || m["policy"] != "auto-accept" {
		t.Fatalf("set policy: %d %v", st, m)
	}
	st, m = e.call(t, "a", "POST", "/v1/contacts", `{"to":"b","purpose":"p"}`)
	if st != 201 || m["status"] != "accepted" || m["agreement_id"] == nil {
		t.Fatalf("auto-accepted contact: %d %v", st, m)
	}
	st, m = e.call(t, "b", "POST", "/v1/resources", `{"title":"Sensor data","tags":["data"],"content":"12345"}`)
	if st != 201 || m["size"].(float64) != 5 {
		t.Fatalf("add resource: %d %v", st, m)
	}
	resID := m["resource_id"].(string)
	st, m = e.call(t, "a", "GET", "/v1/resources?q=sensor", "")
	if st != 200 || m["total"].(float64) != 1 || m["resources"].([]any)[0].(map[string]any)["readable"] != false {
		t.Fatalf("resources: %d %v", st, m)
	}
	st, m = e.call(t, "a", "GET", "/v1/resources/"+resID, "")
	if st != 403 || errCode(m) != "not_authorized" {
		t.Fatalf("read gated: %d %v", st, m)
	}
	st, m = e.call(t, "b", "GET", "/v1/resources/"+resID, "")
	if st != 200 || m["content"] != "12345" {
		t.Fatalf("read own: %d %v", st, m)
	}
	st, m = e.call(t, "a", "POST", "/v1/reports", `{"agent_id":"b","category":"spam","details":"ads"}`)
	if st != 201 || m["status"] != "open" {
		t.Fatalf("report: %d %v", st, m)
	}
	st, m = e.call(t, "a", "POST", "/v1/reports", `{"agent_id":"b","category":"spam"}`)
	if st != 409 || errCode(m) != "duplicate_report" {
		t.Fatalf("second report: %d %v", st, m)
	}
}

// ownerClient keeps the portal cookie like a browser.
type ownerClient struct {
	e      *env
	cookie *http.Cookie
}

func (o *ownerClient) call(t *testing.T, method, path, body, contentType string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, o.e.srv.URL+path, bytes.NewBufferString(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if o.cookie != nil {
		req.AddCookie(o.cookie)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	for _, c := range res.Cookies() {
		if c.Name == rest.CookieName {
			o.cookie = c
			if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/owner" {
				t.Errorf("cookie %+v", c)
			}
		}
	}
	var m map[string]any
	_ = json.NewDecoder(res.Body).Decode(&m)
	return res.StatusCode, m
}

func TestOwnerAPI(t *testing.T) {
	t.Parallel()
	e := setup(t)
	o := &ownerClient{e: e}
	st, m := o.call(t, "POST", "/owner/api/start", `{}`, "text/plain")
	if st != 403 {
		t.Fatalf("a non-JSON start: %d %v", st, m)
	}
	st, m = o.call(t, "POST", "/owner/api/start", `{}`, "application/json")
	if st != 201 || o.cookie == nil {
		t.Fatalf("start: %d %v", st, m)
	}
	code := m["code"].(string)
	st, m = o.call(t, "GET", "/owner/api/session", "", "")
	if st != 200 || m["state"] != "pending" || m["code"] != code {
		t.Fatalf("session: %d %v", st, m)
	}
	if st, _ := o.call(t, "GET", "/owner/api/agents", "", ""); st != 401 {
		t.Fatalf("agents before LOGIN: %d", st)
	}
	if _, err := e.portal.Login(context.Background(), "alice", code, e.clk.Now()); err != nil {
		t.Fatal(err)
	}
	st, m = o.call(t, "GET", "/owner/api/session", "", "")
	if m["state"] != "signed_in" || m["account"] != "alice" {
		t.Fatalf("session after LOGIN: %d %v", st, m)
	}
	st, m = o.call(t, "PUT", "/owner/api/agents/b/policy", `{"policy":"owner-decides"}`, "application/json")
	if st != 200 || m["owner_set"] != true {
		t.Fatalf("policy: %d %v", st, m)
	}
	st, m = o.call(t, "PUT", "/owner/api/agents/a/policy", `{"policy":"deny"}`, "application/json")
	if st != 403 || errCode(m) != "not_authorized" {
		t.Fatalf("policy of another's agent: %d %v", st, m)
	}
	if st, m := e.call(t, "a", "POST", "/v1/contacts", `{"to":"b","purpose":"p","scopes":["message","resource:read"]}`); st != 201 {
		t.Fatalf("contact: %d %v", st, m)
	}
	st, m = o.call(t, "GET", "/owner/api/agents", "", "")
	pending := m["pending"].([]any)
	if st != 200 || len(m["agents"].([]any)) != 1 || len(pending) != 1 || pending[0].(map[string]any)["from_name"] != "Alpha" {
		t.Fatalf("agents: %d %v", st, m)
	}
	reqID := pending[0].(map[string]any)["request_id"].(string)
	st, m = o.call(t, "POST", "/owner/api/requests/"+reqID+"/accept", `{"scopes":["message"],"ttl_days":3}`, "application/json")
	if st != 200 || len(m["scopes"].([]any)) != 1 {
		t.Fatalf("accept: %d %v", st, m)
	}
	// LOGOUT from IRC ends the browser's session.
	if n, _ := e.portal.Logout(context.Background(), "alice", e.clk.Now()); n != 1 {
		t.Fatalf("logout ended %d", n)
	}
	if st, _ := o.call(t, "GET", "/owner/api/agents", "", ""); st != 401 {
		t.Fatalf("agents after LOGOUT: %d", st)
	}
}

func TestOwnerPageServed(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for path, ct := range map[string]string{"/owner": "text/html", "/owner/assets/owner.js": "text/javascript", "/owner/assets/owner.css": "text/css"} {
		res, err := http.Get(e.srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), ct) || len(b) == 0 ||
			!strings.Contains(res.Header.Get("Content-Security-Policy"), "default-src 'none'") {
			t.Fatalf("%s: %d %v", path, res.StatusCode, res.Header)
		}
		if bytes.Contains(b, []byte("http://")) || bytes.Contains(b, []byte("https://")) {
			t.Fatalf("%s refers to another origin", path)
		}
	}
	for _, path := range []string{"/owner/assets/owner.html", "/owner/assets/nope.js"} {
		res, _ := http.Get(e.srv.URL + path)
		res.Body.Close()
		if res.StatusCode != 404 {
			t.Fatalf("%s: %d", path, res.StatusCode)
		}
	}
}

// TestRESTStrictQuery: the lists take only the query parameters PROTOCOL.md
// "Contacts, agreements and direct messages" gives them, each once: another
// one or a repeated one is 422 invalid_argument naming it, and GET
// /v1/messages so refused marks nothing read.
func TestRESTStrictQuery(t *testing.T) {
	t.Parallel()
	e := setup(t)
	st, m := e.call(t, "a", "POST", "/v1/contacts", `{"to":"b","purpose":"talk","scopes":["message"]}`)
	if st != 201 {
		t.Fatalf("contact: %d %v", st, m)
	}
	if st, m := e.call(t, "b", "POST", "/v1/contacts/"+m["request_id"].(string)+"/accept", ""); st != 200 {
		t.Fatalf("accept: %d %v", st, m)
	}
	if st, m := e.call(t, "a", "POST", "/v1/messages", `{"to":"b","text":"hello"}`); st != 201 {
		t.Fatalf("send: %d %v", st, m)
	}
	for _, tc := range []struct{ path, name string }{
		{"/v1/messages?limit=5&limit=500", "limit"},
		{"/v1/messages?lmit=5", "lmit"},
		{"/v1/tasks?limit=1&limit=2", "limit"},
		{"/v1/tasks?offset=1", "offset"},
		{"/v1/contacts?direction=incoming&direction=outgoing", "direction"},
		{"/v1/contacts?statuss=any", "statuss"},
		{"/v1/agreements?all=true&all=false", "all"},
		{"/v1/agreements?limit=1", "limit"},
		{"/v1/resources?tag=a&tag=b", "tag"},
		{"/v1/resources?tags=a", "tags"},
	} {
		st, m := e.call(t, "b", "GET", tc.path, "")
		e, _ := m["error"].(map[string]any)
		msg, _ := e["message"].(string)
		if st != 422 || errCode(m) != "invalid_argument" || !strings.Contains(msg, `"`+tc.name+`"`) {
			t.Errorf("%s: %d %v, want 422 invalid_argument naming %s", tc.path, st, m, tc.name)
		}
	}
	for _, path := range []string{"/v1/messages?limit=5", "/v1/tasks?limit=5", "/v1/agreements?all=true",
		"/v1/contacts?direction=outgoing&status=any&limit=5&offset=0", "/v1/resources?q=x&tag=y&limit=5&offset=0"} {
		if st, m := e.call(t, "a", "GET", path, ""); st != 200 {
			t.Errorf("%s: %d %v", path, st, m)
		}
	}
	st, m = e.call(t, "b", "GET", "/v1/messages", "")
	if msgs, _ := m["messages"].([]any); st != 200 || len(msgs) != 1 {
		t.Fatalf("inbox after the refusals: %d %v, want the message still unread", st, m)
	}
}
