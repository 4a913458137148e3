package venue_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// strictQueryRoute is a listing route, the key it is called with ("" for a
// public one), a query string of parameters it documents (PROTOCOL.md
// "REST"), all given once, and one of them to give twice.
type strictQueryRoute struct {
	path, key, ok, twice string
}

// checkStrictQuery calls each route with the query string it documents,
// which is not refused for its parameters; with an unknown parameter added,
// and with one of its parameters given twice: each of those is 422
// invalid_argument naming the parameter.
func checkStrictQuery(t *testing.T, v *e2eVenue, routes []strictQueryRoute) {
	t.Helper()
	errOf := func(body string) (code, msg string) {
		var m struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		_ = json.Unmarshal([]byte(body), &m)
		return m.Error.Code, m.Error.Message
	}
	for _, r := range routes {
		path := r.path
		if r.ok != "" {
			path += "?" + r.ok
		}
		// Some documented values are refused here for what they say (an
		// after naming no event: 404; a tree size past the log's: 422):
		// what matters is that no parameter is refused as such.
		code, body := v.rawGet(path, r.key)
		if _, msg := errOf(body); (code != http.StatusOK && code != http.StatusNotFound && code != http.StatusUnprocessableEntity) ||
			strings.Contains(msg, "query") {
			t.Errorf("%s: %d %s, want its documented parameters taken", path, code, body)
		}
		sep := "?"
		if r.ok != "" {
			sep = "&"
		}
		bad := []struct{ query, name string }{{"foo=1", "foo"}}
		if r.twice != "" {
			bad = append(bad, struct{ query, name string }{r.twice + "&" + r.twice, strings.SplitN(r.twice, "=", 2)[0]})
		}
		for _, b := range bad {
			p := r.path + "?" + b.query
			if b.name == "foo" {
				p = path + sep + b.query
			}
			code, body := v.rawGet(p, r.key)
			ec, msg := errOf(body)
			if code != http.StatusUnprocessableEntity || ec != "invalid_argument" || !strings.Contains(msg, `"`+b.name+`"`) {
				t.Errorf("%s: %d %s, want 422 invalid_argument naming %q", p, code, body, b.name)
			}
		}
	}
}

// TestE2EStrictQuery: every listing route takes only the query parameters
// PROTOCOL.md "REST" (and "Arena listing", "Without a socket", "Webhooks",
// "Settlements", "Contacts, agreements and direct messages") gives it, each
// once: a parameter it does not take, or one given twice, is 422
// invalid_argument naming it, never ignored or read as its first value.
func TestE2EStrictQuery(t *testing.T) {
	t.Parallel()
	v := newE2E(t)
	a := v.register("Acme", "brand")
	checkStrictQuery(t, v, []strictQueryRoute{
		{"/v1/arena/negotiations", "", "status=live&limit=5&offset=0&agent_id=" + a.id, "limit=5"},
		{"/v1/negotiations", a.key, "role=mine&status=live&limit=5&offset=0", "role=mine"},
		{"/v1/offers", a.key, "limit=5&offset=0", "offset=0"},
		{"/v1/grants", a.key, "after=1&limit=5", "limit=5"},
		{"/v1/events", a.key, "after=evt_none&limit=5", "limit=5"},
		{"/v1/agents/me/webhook/deliveries", a.key, "limit=5", "limit=5"},
		{"/v1/settlements", a.key, "", ""},
		{"/v1/contacts", a.key, "direction=outgoing&status=any&limit=5&offset=0", "status=any"},
		{"/v1/agreements", a.key, "all=true", "all=true"},
		{"/v1/messages", a.key, "limit=5", "limit=5"},
		{"/v1/tasks", a.key, "limit=5", "limit=5"},
		{"/v1/resources", a.key, "q=x&tag=y&limit=5&offset=0", "tag=y"},
	})
	// The finding of the user trial: the first of two limits was used.
	code, m := v.do("GET", "/v1/arena/negotiations?limit=5&limit=500", "", nil)
	if e, _ := m["error"].(map[string]any); code != http.StatusUnprocessableEntity || !strings.Contains(str(e["message"]), "given 2 times") {
		t.Errorf("limit=5&limit=500: %d %v", code, m)
	}
}
