package idempotency

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/venuehq/venue/internal/httpapi"
	"github.com/venuehq/venue/wire"
)

// maxKeyedBody bounds the body a keyed request may carry (it is hashed
// whole; every route's own bound is lower).
const maxKeyedBody = 1 << 20

// Middleware is the Idempotency-Key middleware of an authenticated POST,
// PUT or DELETE (PROTOCOL.md "Without a socket"): without the header the
// route runs as ever; with it, the first request with a key is answered
// and its answer kept 24 hours for the agent; a retry with the same key
// and the same request (method, path, body) gets that answer again with
// Idempotent-Replayed: true, with another request 422
// idempotency_conflict, and while the first is still being answered 409
// idempotency_in_flight with Retry-After. An answer of 5xx is not kept (a
// retry runs afresh). It goes after the middleware that authenticates the
// agent (httpapi.SetAgent); keys are kept in store, at now, and failures to
// keep an answer are logged.
func Middleware(store Store, now func() time.Time, log *slog.Logger) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			return keyed(c, next, store, now, log)
		}
	}
}

// keyed answers one request through Middleware.
func keyed(c echo.Context, next echo.HandlerFunc, s Store, now func() time.Time, log *slog.Logger) error {
	key := c.Request().Header.Get("Idempotency-Key")
	if key == "" {
		return next(c)
	}
	if !validKey(key) {
		return wire.Errorf(wire.CodeInvalidArgument, "Idempotency-Key is 1 to 255 printable ASCII characters")
	}
	req := c.Request()
	body, err := io.ReadAll(io.LimitReader(req.Body, maxKeyedBody+1))
	if err != nil || len(body) > maxKeyedBody {
		return wire.Errorf(wire.CodeTooLarge, "the body is too large")
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	h := sha256.New()
	_, _ = io.WriteString(h, req.Method+" "+req.URL.Path+"\n")
	h.Write(body)
	fp := hex.EncodeToString(h.Sum(nil))
	agent, _ := httpapi.Agent(c)
	ctx, agentID := req.Context(), agent.ID
	st, a, err := s.Begin(ctx, agentID, key, fp, now())
	switch {
	case err != nil:
		return err
	case st == Replay:
		c.Response().Header().Set("Idempotent-Replayed", "true")
		return c.Blob(a.Status, a.ContentType, a.Body)
	case st == Conflict:
		return wire.Errorf(wire.CodeIdempotencyConflict, "this Idempotency-Key was used with another request")
	case st == InFlight:
		c.Response().Header().Set("Retry-After", "1")
		return wire.Errorf(wire.CodeIdempotencyInFlight, "the first request with this Idempotency-Key is still being answered; retry")
	}
	rec := &answerRecorder{ResponseWriter: c.Response().Writer}
	c.Response().Writer = rec
	if err := next(c); err != nil {
		c.Error(err) // answered here, so the answer is recorded
	}
	status := c.Response().Status
	if status >= 500 {
		if err := s.Release(ctx, agentID, key); err != nil {
			log.Warn("idempotency: release", "err", err)
		}
		return nil
	}
	if err := s.Finish(ctx, agentID, key, Answer{Status: status,
		ContentType: c.Response().Header().Get(echo.HeaderContentType), Body: rec.body.Bytes()}); err != nil {
		log.Warn("idempotency: keep the answer", "err", err)
	}
	return nil
}

// validKey: 1 to 255 printable ASCII characters.
func validKey(k string) bool {
	if len(k) == 0 || len(k) > 255 {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			return false
		}
	}
	return true
}

// answerRecorder copies what a handler writes.
type answerRecorder struct {
	http.ResponseWriter
	body bytes.Buffer
}

func (r *answerRecorder) Write(b []byte) (int, error) {
	r.body.Write(b)
	return r.ResponseWriter.Write(b)
}
