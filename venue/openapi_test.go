package venue_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/venuehq/venue/venue"
)

// TestOpenAPIDocument: openapi.json loads as OpenAPI 3.1 and validates, and
// GET /openapi.json serves it byte for byte.
func TestOpenAPIDocument(t *testing.T) {
	t.Parallel()
	spec, err := loadAPISpec()
	if err != nil {
		t.Fatal(err)
	}
	if !spec.doc.IsOpenAPI31OrLater() {
		t.Fatalf("openapi %q, want 3.1", spec.doc.OpenAPI)
	}
	v := newE2E(t)
	resp, err := apiClient(t).Get(v.url + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got bytes.Buffer
	if _, err := got.ReadFrom(resp.Body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("GET /openapi.json: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if !bytes.Equal(got.Bytes(), venue.OpenAPI()) {
		t.Fatal("GET /openapi.json is not the embedded document")
	}
}

// TestOpenAPIOperations calls the routes the other e2e tests do not reach
// (or not with these answers) through the checking client, and checks the
// statuses here too.
func TestOpenAPIOperations(t *testing.T) {
	t.Parallel()
	v := newE2E(t)
	_, _, negID, _, _ := v.live(false)
	c := apiClient(t)
	for _, tc := range []struct {
		method, path string
		want         int
	}{
		{"GET", "/healthz", 200},
		{"GET", "/readyz", 200},
		{"GET", "/v1/info", 200},
		{"GET", "/.well-known/jwks.json", 200},
		{"GET", "/metrics", 404}, // on the admin listener only
		{"GET", "/v1/info?" + strings.Repeat("x", 3000), 414},
		{"GET", "/v1/negotiations/" + negID, 200},
		{"GET", "/v1/negotiations/" + negID + "/receipt", 409},
		{"GET", "/v1/negotiations/neg_000000000000000000000000/receipt", 404},
		{"GET", "/v1/nope", 404},
		{"POST", "/v1/info", 405},
		{"DELETE", "/v1/agents/me", 405},
		{"GET", "/v1/grants", 401},
		{"DELETE", "/v1/grants/nope", 401},
		// A socket path without the upgrade: gorilla's plain-text 400.
		{"GET", "/v1/negotiations/" + negID + "/ws/observe", 400},
		{"GET", "/v1/negotiations/neg_000000000000000000000000/ws/observe", 404},
		{"GET", "/v1/arena/ws", 400},
		{"GET", "/v1/arena/negotiations?status=live&limit=5&offset=0", 200},
		{"GET", "/v1/agents/agt_000000000000000000000000/reputation", 404},
		{"GET", "/", 200},
		{"GET", "/arena", 200},
		{"GET", "/negotiations/" + negID, 200},
		{"GET", "/assets/style.css", 200},
		{"GET", "/assets/common.js", 200},
		{"GET", "/assets/nope.js", 404},
	} {
		req, _ := http.NewRequest(tc.method, v.url+tc.path, nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s %s: %d, want %d", tc.method, tc.path, resp.StatusCode, tc.want)
		}
	}
	// Refused upgrades are checked by the socket helper (dialSock).
	if _, resp, err := v.tryDial("/v1/negotiations/" + negID + "/ws/observe?since=x"); err == nil || resp.StatusCode != 422 {
		t.Errorf("observe with since=x: %v %v", err, resp)
	}
	a := v.register("Z", "brand")
	if code, m := v.do("DELETE", "/v1/grants/nope", a.key, nil); code != 404 {
		t.Errorf("revoke an unknown grant: %d %v", code, m)
	}
	if code, m := v.do("GET", "/v1/grants", a.key, nil); code != 200 || len(m["items"].([]any)) != 1 {
		t.Errorf("grants: %d %v", code, m)
	}
}

// TestOpenAPICheckFails: the check of the e2e helpers refuses answers that
// drift from the document, so it can fail.
func TestOpenAPICheckFails(t *testing.T) {
	t.Parallel()
	const agent = `"agent_id":"agt_0123456789abcdef01234567","name":"A","role":"brand","reputation":0,"description":"","categories":[],"audience":{},"last_seen_at":null`
	get := func(path string) *http.Request {
		r, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1:1"+path, nil)
		return r
	}
	authed := func(method, path string) *http.Request {
		r, _ := http.NewRequest(method, "http://127.0.0.1:1"+path, nil)
		r.Header.Set("Authorization", "Bearer bsk_x")
		return r
	}
	jsonHeader := http.Header{"Content-Type": {"application/json"}}
	for _, tc := range []struct {
		name    string
		req     *http.Request
		reqBody string
		status  int
		body    string
		wantErr string // "" : the exchange matches
	}{
		{"profile as documented", get("/v1/agents/agt_x/profile"), "", 200, "{" + agent + "}", ""},
		{"error as documented", get("/v1/agents/agt_x/profile"), "", 404, `{"error":{"code":"not_found","message":"no agent"}}`, ""},
		{"member missing", get("/v1/agents/agt_x/profile"), "", 200, `{"agent_id":"agt_0123456789abcdef01234567"}`, "does not match"},
		{"member unknown", get("/v1/agents/agt_x/profile"), "", 200, "{" + agent + `,"extra":1}`, "does not match"},
		{"wrong type", get("/v1/agents/agt_x/profile"), "", 200, `{` + strings.Replace(agent, `"reputation":0`, `"reputation":"0"`, 1) + `}`, "does not match"},
		{"own record without created_at", authed("GET", "/v1/agents/me"), "", 200, "{" + agent + `,"principal_key":null}`, "does not match"},
		{"status not documented", get("/v1/agents/agt_x/profile"), "", 409, `{"error":{"code":"invalid_state","message":"x"}}`, "does not match"},
		{"code of another status", get("/v1/agents/agt_x/profile"), "", 404, `{"error":{"code":"invalid_state","message":"x"}}`, "does not match"},
		{"error not in the error shape", get("/v1/negotiations/neg_x"), "", 404, `{"code":"not_found"}`, "does not match"},
		{"route not documented", get("/v1/nope"), "", 200, `{}`, "not in openapi.json"},
		{"unknown route refused", get("/v1/nope"), "", 404, `{"error":{"code":"not_found","message":"Not Found"}}`, ""},
		{"invalid request taken", authed("PUT", "/v1/agents/me/profile"), `{"descripton":"x"}`, 200, "{" + agent + "}", "request is invalid"},
		{"invalid request refused", authed("PUT", "/v1/agents/me/profile"), `{"descripton":"x"}`, 422, `{"error":{"code":"invalid_argument","message":"x"}}`, ""},
		{"missing auth taken", get("/v1/agents/me"), "", 200, "{" + agent + `,"principal_key":null,"created_at":"2026-11-30T08:00:00.000Z"}`, "request is invalid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.reqBody != "" {
				tc.req.Header.Set("Content-Type", "application/json")
			}
			err := checkExchange(tc.req, []byte(tc.reqBody), tc.status, jsonHeader, []byte(tc.body))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.wantErr != "" && err == nil:
				t.Fatalf("passed, want an error with %q", tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
		})
	}
}
