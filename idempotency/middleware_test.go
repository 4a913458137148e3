package idempotency_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/venuehq/venue/idempotency"
	"github.com/venuehq/venue/internal/httpapi"
	"github.com/venuehq/venue/store"
)

// TestIdempotencyKey: the three answers of a keyed request (PROTOCOL.md
// "Without a socket"), the second sent while the first is still being
// answered: in flight (409 with Retry-After), then the first answer
// replayed, a conflict for another body, and another agent's key its own.
func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}), make(chan struct{})
	var runs atomic.Int32
	e := echo.New()
	e.HTTPErrorHandler = httpapi.ErrorHandler(slog.Default())
	asAgent := func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			httpapi.SetAgent(c, store.Agent{ID: c.Request().Header.Get("X-Agent")})
			return next(c)
		}
	}
	e.POST("/thing", func(c echo.Context) error {
		if runs.Add(1) == 1 {
			close(entered)
			<-release
		}
		return c.JSON(http.StatusCreated, map[string]any{"run": runs.Load()})
	}, asAgent, idempotency.Middleware(idempotency.NewMemory(), time.Now, slog.Default()))
	send := func(agent, key, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("POST", "/thing", strings.NewReader(body))
		req.Header.Set("X-Agent", agent)
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		w := httptest.NewRecorder()
		e.ServeHTTP(w, req)
		return w
	}
	first := make(chan *httptest.ResponseRecorder)
	go func() { first <- send("a", "k1", `{"x":1}`) }()
	<-entered
	if w := send("a", "k1", `{"x":1}`); w.Code != http.StatusConflict || w.Header().Get("Retry-After") == "" || !strings.Contains(w.Body.String(), "idempotency_in_flight") {
		t.Fatalf("while in flight: %d %v %s", w.Code, w.Header(), w.Body)
	}
	close(release)
	w1 := <-first
	if w1.Code != http.StatusCreated || w1.Header().Get("Idempotent-Replayed") != "" {
		t.Fatalf("first: %d %v", w1.Code, w1.Header())
	}
	w2 := send("a", "k1", `{"x":1}`)
	if w2.Code != http.StatusCreated || w2.Body.String() != w1.Body.String() || w2.Header().Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay: %d %s %v, want the first answer %s", w2.Code, w2.Body, w2.Header(), w1.Body)
	}
	if w := send("a", "k1", `{"x":2}`); w.Code != http.StatusUnprocessableEntity || !strings.Contains(w.Body.String(), "idempotency_conflict") {
		t.Fatalf("another body: %d %s", w.Code, w.Body)
	}
	if w := send("b", "k1", `{"x":2}`); w.Code != http.StatusCreated || w.Header().Get("Idempotent-Replayed") != "" {
		t.Fatalf("another agent's key: %d %v", w.Code, w.Header())
	}
	if w := send("a", "", `{"x":1}`); w.Code != http.StatusCreated {
		t.Fatalf("no key: %d", w.Code)
	}
	if w := send("a", "bad\x01key", `{}`); w.Code != http.StatusUnprocessableEntity {
		t.Fatalf("a key with a control character: %d", w.Code)
	}
	if got := runs.Load(); got != 3 {
		t.Fatalf("the handler ran %d times, want 3 (first, other agent, no key)", got)
	}
}
