package venue_test

import (
	"net/http"
	"strings"
	"testing"
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
