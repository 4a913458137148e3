package httpapi

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/venuehq/venue/grants"
	"github.com/venuehq/venue/wire"
)

// Every error leaves through the one writer with the status its kind says.
func TestErrorHandler(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		err        error
		status     int
		code       string
		retryAfter string
	}{
		{"wire", wire.Errorf(wire.CodeNotFound, "no"), 404, wire.CodeNotFound, ""},
		{"token", &grants.TokenError{Code: grants.CodeExpired, Message: "old"}, (&grants.TokenError{Code: grants.CodeExpired}).HTTPStatus(), grants.CodeExpired, ""},
		{"status", &StatusError{Status: 414, Err: wire.Error{Code: wire.CodeTooLarge, Message: "q"}}, 414, wire.CodeTooLarge, ""},
		{"cap", OverCap(1500*time.Millisecond, "slow down"), 429, wire.CodeRateLimited, "2"},
		{"echo 405", echo.ErrMethodNotAllowed, 405, wire.CodeMethodNotAllowed, ""},
		{"other", errors.New("disk on fire"), 500, wire.CodeInternal, ""},
	}
	for _, tt := range tests {
		e := New(nil, slog.New(slog.DiscardHandler))
		e.GET("/x", func(echo.Context) error { return tt.err })
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/x", nil))
		var body struct {
			Error wire.Error `json:"error"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || rec.Code != tt.status || body.Error.Code != tt.code ||
			rec.Header().Get("Retry-After") != tt.retryAfter {
			t.Errorf("%s: %d %s (Retry-After %q), want %d %s", tt.name, rec.Code, rec.Body, rec.Header().Get("Retry-After"), tt.status, tt.code)
		}
		if tt.name == "other" && strings.Contains(rec.Body.String(), "fire") {
			t.Error("an internal error's text reached the client")
		}
	}
}

func TestLimitsAndHead(t *testing.T) {
	t.Parallel()
	e := New(nil, slog.New(slog.DiscardHandler))
	e.Use(LimitQuery(8), LimitBody)
	e.GET("/x", func(c echo.Context) error { return c.String(200, "hello") })
	e.POST("/t", func(c echo.Context) error {
		tok, err := TokenBody(c, "a grant")
		if err != nil {
			return err
		}
		return c.String(200, tok)
	})
	do := func(method, target, body string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, httptest.NewRequest(method, target, strings.NewReader(body)))
		return rec
	}
	if rec := do(http.MethodGet, "/x?"+strings.Repeat("a", 9), ""); rec.Code != 414 {
		t.Errorf("long query: %d", rec.Code)
	}
	if rec := do(http.MethodHead, "/x", ""); rec.Code != 200 || rec.Body.Len() != 0 {
		t.Errorf("HEAD: %d %q", rec.Code, rec.Body)
	}
	if rec := do(http.MethodPost, "/t", strings.Repeat(" ", MaxBodyBytes+1)); rec.Code != 413 {
		t.Errorf("big body: %d", rec.Code)
	}
	for body, want := range map[string]int{`{"token":"a.b.c"}`: 200, `{}`: 422, `{"token":1}`: 422, `{"token":"x","y":1}`: 422, `[`: 400} {
		if rec := do(http.MethodPost, "/t", body); rec.Code != want {
			t.Errorf("TokenBody(%s): %d %s, want %d", body, rec.Code, rec.Body, want)
		}
	}
}

// Handle mounts a net/http handler at its pattern on echo: the handler
// reads {name}s with r.PathValue, unescaped as net/http's mux gives them.
func TestHandlePathValues(t *testing.T) {
	e := New(nil, slog.New(slog.DiscardHandler))
	Handle(e, http.MethodGet, "/v1/agents/{id}/things/{thing}", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, r.PathValue("id")+"|"+r.PathValue("thing"))
	}))
	for path, want := range map[string]string{
		"/v1/agents/a1/things/t2":     "a1|t2",
		"/v1/agents/a%2Fb/things/t2":  "a/b|t2",
		"/v1/agents/a%25b/things/%20": "a%b| ",
	} {
		w := httptest.NewRecorder()
		e.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		if w.Code != http.StatusOK || w.Body.String() != want {
			t.Errorf("%s: %d %q, want %q", path, w.Code, w.Body.String(), want)
		}
	}
}

// TestServerHeaderLimit: the public listener's request line and headers are
// at most MaxHeaderBytes on the wire (PROTOCOL.md "Limits and close codes"):
// a request of exactly that many bytes up to its blank line is served, one
// byte more is 431. net/http reads 4096 bytes past http.Server's own
// MaxHeaderBytes before it refuses; Server takes that slack off.
func TestServerHeaderLimit(t *testing.T) {
	t.Parallel()
	srv := Server(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }), Timeouts{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	// status sends a GET whose request line and headers, blank line
	// included, are size bytes, and returns the answer's status.
	status := func(size int) int {
		head := "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Pad: "
		pad := size - len(head) - len("\r\n\r\n")
		req := head + strings.Repeat("a", pad) + "\r\n\r\n"
		if len(req) != size {
			t.Fatalf("built %d bytes, want %d", len(req), size)
		}
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := io.WriteString(c, req); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%d bytes: %v", size, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tc := range []struct{ size, want int }{
		{MaxHeaderBytes - 1000, http.StatusNoContent},
		{MaxHeaderBytes, http.StatusNoContent},
		{MaxHeaderBytes + 1, http.StatusRequestHeaderFieldsTooLarge},
		{17000, http.StatusRequestHeaderFieldsTooLarge}, // what a user trial saw answered 200
	} {
		if got := status(tc.size); got != tc.want {
			t.Errorf("%d bytes of request line and headers: %d, want %d", tc.size, got, tc.want)
		}
	}
}
