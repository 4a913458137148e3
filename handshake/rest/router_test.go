package rest_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/venuehq/venue/directory"
	"github.com/venuehq/venue/handshake"
	hsmemory "github.com/venuehq/venue/handshake/memory"
	"github.com/venuehq/venue/handshake/rest"
	"github.com/venuehq/venue/store/memory"
)

// The routes on the one router answer as net/http's mux did: a path no
// route takes under the prefixes is 404 not_found, another method 405
// method_not_allowed with the Allow of the path's routes (HEAD beside GET),
// an unclean path that cleans to a route is redirected (307), a path value
// is unescaped; every error body is the venue's JSON, not stored.
func TestRoutesOnTheRouter(t *testing.T) {
	st := memory.New()
	d := &directory.Service{Store: st, Now: time.Now}
	svc, err := handshake.New(handshake.Service{Store: hsmemory.New(), Agents: d, NewID: directory.NewID})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(rest.New(rest.Handler{Service: svc, Auth: d, Now: time.Now}))
	defer srv.Close()
	_, key, err := d.Register(context.Background(), directory.Registration{Name: "Reader", Role: "brand"})
	if err != nil {
		t.Fatal(err)
	}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tc := range []struct {
		method, path string
		status       int
		code, allow  string
		location     string
		message      string
	}{
		{"GET", "/owner/", 404, "not_found", "", "", ""},
		{"GET", "/v1/contacts/nope/deeper", 404, "not_found", "", "", ""},
		{"POST", "/owner", 405, "method_not_allowed", "GET, HEAD", "", ""},
		{"PATCH", "/v1/messages", 405, "method_not_allowed", "GET, HEAD, POST", "", ""},
		{"GET", "/v1/contacts/x/accept", 405, "method_not_allowed", "POST", "", ""},
		{"GET", "/v1/contacts/../messages?limit=1", 307, "", "", "/v1/messages?limit=1", ""},
		{"GET", "/v1/messages", 401, "unauthorized", "", "", ""},
		{"GET", "/owner/api/bridge", 200, "", "", "", ""},
		{"GET", "/v1/resources/a%2Fb", 404, "not_found", "", "", "no resource a/b"},
	} {
		req, _ := http.NewRequest(tc.method, srv.URL+tc.path, nil)
		if tc.message != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		if tc.status != 307 {
			_ = json.NewDecoder(resp.Body).Decode(&body)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.status || body.Error.Code != tc.code || resp.Header.Get("Allow") != tc.allow || resp.Header.Get("Location") != tc.location {
			t.Errorf("%s %s: %d %q allow %q location %q, want %d %q allow %q location %q", tc.method, tc.path,
				resp.StatusCode, body.Error.Code, resp.Header.Get("Allow"), resp.Header.Get("Location"), tc.status, tc.code, tc.allow, tc.location)
		}
		if tc.message != "" && body.Error.Message != tc.message {
			t.Errorf("%s %s: message %q, want %q", tc.method, tc.path, body.Error.Message, tc.message)
		}
		if tc.code != "" && resp.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("%s %s: Cache-Control %q", tc.method, tc.path, resp.Header.Get("Cache-Control"))
		}
	}
}
