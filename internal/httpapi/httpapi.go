// Package httpapi is the venue's HTTP plumbing: the one router (echo) both
// listeners serve, its one JSON error writer ({"error":{"code","message"}}
// with the status of its code, PROTOCOL.md "Limits and close codes"), and
// the middleware and body readers every REST route shares. No rule of the
// venue lives here.
package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"golang.org/x/time/rate"

	"github.com/venuehq/venue/admission"
	"github.com/venuehq/venue/grants"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/wire"
)

// MaxBodyBytes is the REST body limit: over it, 413 too_large.
const MaxBodyBytes = 64 << 10

// New is an echo router with the one JSON error writer (ErrorHandler),
// HEAD served as GET, panics recovered and the client address read as
// IPExtractor(trusted) says.
func New(trusted []*net.IPNet, log *slog.Logger) *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	// The client address is the TCP peer, or what a trusted proxy says:
	// X-Forwarded-For from anyone would let a client pick its own key.
	e.IPExtractor = IPExtractor(trusted)
	e.HTTPErrorHandler = ErrorHandler(log)
	e.Pre(HeadAsGet)
	e.Use(middleware.RecoverWithConfig(middleware.RecoverConfig{DisableStackAll: true}))
	return e
}

// ErrorHandler writes every error as {"error":{"code","message"}}: a
// *StatusError with its own status, a *grants.TokenError with
// TokenError.HTTPStatus (401/403/422 by kind, DELEGATION.md "The grant
// token"), a *wire.Error with wire.HTTPStatus of its code, echo's own
// errors by their status; anything else is logged and answered 500
// internal. A 429 carries Retry-After (RetryAfter).
func ErrorHandler(log *slog.Logger) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		if c.Response().Committed {
			return
		}
		we, status := errorBody(err)
		if we == nil {
			log.Error("request failed", "method", c.Request().Method, "path", c.Path(), "err", err)
			we = wire.Errorf(wire.CodeInternal, "the venue failed; nothing was changed")
		}
		if status == 0 {
			status = wire.HTTPStatus(we.Code)
		}
		if status == http.StatusTooManyRequests {
			c.Response().Header().Set("Retry-After", RetryAfter(err))
		}
		_ = c.JSON(status, map[string]any{"error": we})
	}
}

// errorBody is err's wire error and status (0: its code's); nil when err is
// none of the venue's.
func errorBody(err error) (*wire.Error, int) {
	var we *wire.Error
	var he *echo.HTTPError
	var se *StatusError
	var te *grants.TokenError
	switch {
	case errors.As(err, &se):
		return &se.Err, se.Status
	case errors.As(err, &te):
		return &wire.Error{Code: te.Code, Message: te.Message}, te.HTTPStatus()
	case errors.As(err, &we):
		return we, 0
	case errors.As(err, &he):
		we = &wire.Error{Code: CodeForStatus(he.Code), Message: fmt.Sprint(he.Message)}
		if he.Code == http.StatusRequestEntityTooLarge {
			we.Message = fmt.Sprintf("body over %d bytes", MaxBodyBytes)
		}
		return we, 0
	}
	return nil, 0
}

// StatusError is a wire error with its own HTTP status (414 too_large, not
// the 413 of its code).
type StatusError struct {
	Status int
	Err    wire.Error
}

func (e *StatusError) Error() string { return e.Err.Error() }
func (e *StatusError) Unwrap() error { return &e.Err }

// LimitError is a 429 rate_limited with its Retry-After.
type LimitError struct {
	Err   *wire.Error
	After time.Duration
}

func (e *LimitError) Error() string { return e.Err.Error() }
func (e *LimitError) Unwrap() error { return e.Err }

// OverCap is a LimitError: come back after `after`.
func OverCap(after time.Duration, format string, a ...any) error {
	return &LimitError{Err: wire.Errorf(wire.CodeRateLimited, format, a...), After: after}
}

// RetryAfter is the Retry-After of a 429 in whole seconds: the error's own
// (a *LimitError), or a minute (the registration limit refills one a
// minute at the default rate).
func RetryAfter(err error) string {
	var le *LimitError
	if errors.As(err, &le) {
		return strconv.Itoa(int((le.After + time.Second - 1) / time.Second))
	}
	return "60"
}

// CodeForStatus is the wire code of one of echo's own HTTP errors.
func CodeForStatus(status int) string {
	switch status {
	case http.StatusNotFound:
		return wire.CodeNotFound
	case http.StatusMethodNotAllowed:
		return wire.CodeMethodNotAllowed
	case http.StatusRequestEntityTooLarge:
		return wire.CodeTooLarge
	case http.StatusUnauthorized:
		return wire.CodeUnauthorized
	case http.StatusTooManyRequests:
		return wire.CodeRateLimited
	case http.StatusBadRequest:
		return wire.CodeInvalidJSON
	}
	return wire.CodeInternal
}

// HeadAsGet answers HEAD wherever GET is served (RFC 9110 section 9.3.2):
// the request is routed as a GET and what the handler writes as a body is
// dropped, so the client gets the GET's status and headers alone.
func HeadAsGet(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if r := c.Request(); r.Method == http.MethodHead && r.Header.Get("Upgrade") == "" {
			r.Method = http.MethodGet
			c.Response().Writer = headWriter{c.Response().Writer}
		}
		return next(c)
	}
}

// headWriter drops the body of a response to HEAD.
type headWriter struct{ http.ResponseWriter }

func (w headWriter) Write(b []byte) (int, error) { return len(b), nil }

// LimitBody refuses bodies over MaxBodyBytes with 413, before reading them
// when Content-Length says so, else when reading passes the limit.
func LimitBody(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if r.ContentLength > MaxBodyBytes {
			return wire.Errorf(wire.CodeTooLarge, "body over %d bytes", MaxBodyBytes)
		}
		r.Body = http.MaxBytesReader(c.Response(), r.Body, MaxBodyBytes)
		return next(c)
	}
}

// LimitQuery refuses a query string over max bytes with 414 too_large.
func LimitQuery(max int) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if len(c.Request().URL.RawQuery) > max {
				return &StatusError{Status: http.StatusRequestURITooLong,
					Err: wire.Error{Code: wire.CodeTooLarge, Message: fmt.Sprintf("query string over %d bytes", max)}}
			}
			return next(c)
		}
	}
}

const agentKey = "agent"

// SetAgent records the request's authenticated agent.
func SetAgent(c echo.Context, a store.Agent) { c.Set(agentKey, a) }

// Agent is the request's authenticated agent (SetAgent); the zero Agent
// and false when there is none.
func Agent(c echo.Context) (store.Agent, bool) {
	a, ok := c.Get(agentKey).(store.Agent)
	return a, ok
}

// AccessLog logs one line per REST request (method, path without the query
// string, status, duration in milliseconds, agent id when authenticated);
// tokens never reach the logs. Socket upgrades log their own open and close.
func AccessLog(log *slog.Logger) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			err := next(c)
			if c.Request().Header.Get("Upgrade") != "" {
				return err
			}
			status := c.Response().Status
			var we *wire.Error
			if errors.As(err, &we) {
				status = wire.HTTPStatus(we.Code)
			}
			attrs := []any{"method", c.Request().Method, "path", c.Request().URL.Path, "status", status,
				"ms", float64(time.Since(start).Microseconds()) / 1000}
			if a, ok := Agent(c); ok {
				attrs = append(attrs, "agent_id", a.ID)
			}
			log.Info("http", attrs...)
			return err
		}
	}
}

// BearerKey is the api key of an Authorization: Bearer header, "" when
// there is none. The scheme is case-insensitive (RFC 9110 section 11.1).
// Authorization is a single field: a request with two is refused
// (unauthorized) rather than read by whichever a proxy or a library keeps.
func BearerKey(r *http.Request) (string, error) {
	values := r.Header.Values("Authorization")
	if len(values) > 1 {
		return "", wire.Errorf(wire.CodeUnauthorized, "the request has %d Authorization headers: send one", len(values))
	}
	if len(values) == 0 {
		return "", nil
	}
	scheme, key, ok := strings.Cut(values[0], " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", nil
	}
	return strings.TrimSpace(key), nil
}

// Body reads a JSON object body strictly (wire.DecodeBody). Errors:
// too_large, invalid_json.
func Body(c echo.Context) (map[string]json.RawMessage, error) {
	b, err := io.ReadAll(c.Request().Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, wire.Errorf(wire.CodeTooLarge, "body over %d bytes", MaxBodyBytes)
		}
		return nil, wire.Errorf(wire.CodeInvalidJSON, "cannot read the body")
	}
	if !utf8.Valid(b) {
		return nil, wire.Errorf(wire.CodeInvalidJSON, "the body is not valid UTF-8")
	}
	m, werr := wire.DecodeBody(b)
	if werr != nil {
		return nil, werr
	}
	return m, nil
}

// TokenBody reads a {"token": JWT} body. Errors: those of Body,
// invalid_argument when the token is missing or not a string (what names
// the token for the message: "a grant").
func TokenBody(c echo.Context, what string) (string, error) {
	m, err := Body(c)
	if err != nil {
		return "", err
	}
	f := wire.NewFields(m)
	f.Only("token")
	token := f.String("token", false)
	if f.Err != nil {
		return "", f.Err
	}
	if token == "" {
		return "", wire.Errorf(wire.CodeInvalidArgument, "token is required: %s JWT signed by the principal", what)
	}
	return token, nil
}

// IPExtractor is how the client address is read: the TCP peer, or with
// trusted proxies the first untrusted address of X-Forwarded-For from a
// request that came through one of them (never from anyone else).
func IPExtractor(trusted []*net.IPNet) echo.IPExtractor {
	if len(trusted) == 0 {
		return echo.ExtractIPDirect()
	}
	opts := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
	for _, n := range trusted {
		opts = append(opts, echo.TrustIPRange(n))
	}
	return echo.ExtractIPFromXFFHeader(opts...)
}

// ClientKey is the caps' and rate limits' key of the request's client
// address (echo's RealIP: the TCP peer, or X-Forwarded-For from a trusted
// proxy; IPv6 by its /64, admission.AddressKey).
func ClientKey(c echo.Context) string { return admission.AddressKey(c.RealIP()) }

// HTTP limits of the public listener (PROTOCOL.md "Limits and close codes").
// The WebSocket routes set their own deadlines once upgraded.
const (
	ReadHeaderTimeout = 10 * time.Second  // the request line and headers
	ReadTimeout       = 30 * time.Second  // the whole request, body included
	WriteTimeout      = 30 * time.Second  // the whole answer
	IdleTimeout       = 120 * time.Second // a keep-alive connection between requests
	MaxHeaderBytes    = 16 << 10          // request line and headers, bytes on the wire up to the blank line; over it, 431
	MaxQueryBytes     = 2 << 10           // the query string; over it, 414
)

// headerSlack is what net/http reads past http.Server.MaxHeaderBytes
// before it answers 431 (its "bufio slop"): Server sets MaxHeaderBytes
// less this, so that 431 starts at MaxHeaderBytes + 1 bytes, as documented,
// not 4 KiB later. TestServerHeaderLimit holds the two together.
const headerSlack = 4096

// Timeouts override the public listener's timeouts; zero fields take the
// constants above (tests shorten them).
type Timeouts struct {
	ReadHeader, Read, Write, Idle time.Duration
}

// Server is the http.Server of the public listener: h with the limits
// above (MaxHeaderBytes as net/http counts it: less headerSlack), t's where
// it sets them.
func Server(h http.Handler, t Timeouts) *http.Server {
	or := func(d, def time.Duration) time.Duration {
		if d > 0 {
			return d
		}
		return def
	}
	return &http.Server{
		Handler: h, ReadHeaderTimeout: or(t.ReadHeader, ReadHeaderTimeout),
		ReadTimeout: or(t.Read, ReadTimeout), WriteTimeout: or(t.Write, WriteTimeout),
		IdleTimeout: or(t.Idle, IdleTimeout), MaxHeaderBytes: MaxHeaderBytes - headerSlack,
	}
}

// RateLimit limits a route per client address (ClientKey) to r a second in
// bursts of burst; over it, deny's error (a 429).
func RateLimit(r rate.Limit, burst int, deny func() error) echo.MiddlewareFunc {
	return middleware.RateLimiterWithConfig(middleware.RateLimiterConfig{
		Store: middleware.NewRateLimiterMemoryStoreWithConfig(middleware.RateLimiterMemoryStoreConfig{
			Rate: r, Burst: burst, ExpiresIn: 10 * time.Minute,
		}),
		IdentifierExtractor: func(c echo.Context) (string, error) { return ClientKey(c), nil },
		DenyHandler:         func(echo.Context, string, error) error { return deny() },
	})
}

// SharedLimit puts shared (every node's count, per client address) in
// front of local (the node's own limit): over shared, a 429 with its
// Retry-After and msg; if shared fails, local decides. A nil shared is
// local alone.
func SharedLimit(shared admission.SharedLimiter, local echo.MiddlewareFunc, log *slog.Logger, msg string) echo.MiddlewareFunc {
	if shared == nil {
		return local
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		fallback := local(next)
		return func(c echo.Context) error {
			ok, after, err := shared.Allow(c.Request().Context(), ClientKey(c))
			switch {
			case err != nil:
				log.Warn("shared limit unavailable; this node's applies", "path", c.Path(), "err", err)
				return fallback(c)
			case !ok:
				return OverCap(after, "%s", msg)
			}
			return next(c)
		}
	}
}

// Handle mounts h, a net/http handler written for pattern's path values
// ("/v1/negotiations/{id}/evidence"), on e for method: each {name} is
// echo's :name, and h reads it with r.PathValue, unescaped as net/http's
// mux sets it. So a package's routes live on the node's one router, not on
// a mux of their own.
func Handle(e *echo.Echo, method, pattern string, h http.Handler, m ...echo.MiddlewareFunc) *echo.Route {
	segs := strings.Split(pattern, "/")
	for i, s := range segs {
		if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") {
			segs[i] = ":" + s[1:len(s)-1]
		}
	}
	return e.Add(method, strings.Join(segs, "/"), func(c echo.Context) error {
		r := c.Request()
		for _, name := range c.ParamNames() {
			v := c.Param(name)
			if r.URL.RawPath != "" { // echo matched the escaped path
				if u, err := url.PathUnescape(v); err == nil {
					v = u
				}
			}
			r.SetPathValue(name, v)
		}
		h.ServeHTTP(c.Response(), r)
		return nil
	}, m...)
}
