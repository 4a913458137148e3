package venue_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestE2EErrorWording: a REST body that is not JSON is called a body, not a
// frame; a body sent to a route that takes none is told so; a frame with NaN
// is said not to be valid JSON. The codes are the ones they always were.
func TestE2EErrorWording(t *testing.T) {
	t.Parallel()
	v := newE2E(t)
	a := v.register("Acme", "brand")
	for _, tc := range []struct {
		method, path, key, body string
		status                  int
		code, msg               string
	}{
		{"POST", "/v1/register", "", `not json`, 400, "invalid_json", "body is not valid JSON"},
		{"PUT", "/v1/agents/me/profile", a.key, `{"description":NaN}`, 400, "invalid_json", "body is not valid JSON"},
		{"PUT", "/v1/agents/me/profile", a.key, `["description"]`, 400, "invalid_json", "body must be a JSON object"},
		{"POST", "/v1/contacts", a.key, `{"to":`, 400, "invalid_json", "body is not valid JSON"},
		{"POST", "/v1/negotiations/neg_x/deliveries/dlv_x/approve", a.key, `{"note":"ok"}`, 422, "invalid_argument",
			`unknown field "note": this route takes no body (send none, or {})`},
	} {
		code, m := v.do(tc.method, tc.path, tc.key, tc.body)
		e, _ := m["error"].(map[string]any)
		if code != tc.status || e["code"] != tc.code || !strings.HasPrefix(str(e["message"]), tc.msg) {
			t.Errorf("%s %s %s: %d %v, want %d %s %q…", tc.method, tc.path, tc.body, code, m, tc.status, tc.code, tc.msg)
		}
	}
	if code, _ := v.do("POST", "/v1/negotiations/neg_x/deliveries/dlv_x/approve", a.key, `{}`); code == http.StatusUnprocessableEntity {
		t.Errorf("approve with {}: %d, want it taken as no body", code)
	}
	// On a socket a frame is a frame.
	l := v.lobby(a)
	l.send(`{"type":"browse_bouncers","id":"b1","limit":NaN}`)
	if e := l.expect("error"); e["code"] != "invalid_json" || !strings.HasPrefix(str(e["message"]), "frame is not valid JSON") {
		t.Errorf("a frame with NaN: %v", e)
	}
}
