// Package rest carries the handshake over HTTP (PROTOCOL.md "Contacts,
// agreements and direct messages"): the REST routes a venue agent uses to
// contact, answer, message and send tasks to any agent, IRC ones
// included, and the owner portal /owner with its JSON API. It is one
// route table that package venue mounts on its one router (Mount), under
// Prefixes; on its own it is an http.Handler. Errors are
// {"error":{"code","message"}} with handshake.HTTPStatus.
package rest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/venuehq/venue/handshake"
	"github.com/venuehq/venue/internal/httpapi"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/wire"
)

// Prefixes are the paths the Handler serves (each and everything under it).
var Prefixes = []string{"/v1/contacts", "/v1/agreements", "/v1/messages", "/v1/tasks", "/v1/policy", "/v1/reports", "/v1/resources", "/owner"}

// MaxBodyBytes bounds a request body (as the venue's REST limit).
const MaxBodyBytes = 64 << 10

// Authenticator resolves an api_key to its agent (directory.Directory).
type Authenticator interface {
	Authenticate(ctx context.Context, apiKey string) (store.Agent, error)
}

// Handler serves the handshake's REST routes and the owner portal.
type Handler struct {
	Service *handshake.Service
	Portal  *handshake.Portal
	Auth    Authenticator
	Now     func() time.Time
	Log     *slog.Logger
	// SecureCookie marks the portal cookie Secure (a venue behind https).
	SecureCookie bool
	// Bridge says a PIRCAN bridge runs with this venue. Without one nobody
	// can send LOGIN, so the owner portal says so and hands out no code
	// (PIRCAN.md "The owner portal").
	Bridge bool
	// TrustedProxies are the reverse proxies whose X-Forwarded-For names
	// the client (the venue's --trusted-proxies): the owner sign-in limit
	// per address counts the venue's client key (an IPv4 address, an IPv6
	// /64), as every other limit of the venue does.
	TrustedProxies []*net.IPNet

	mux  *routes
	echo *echo.Echo // ServeHTTP's router
}

// New returns the handler; Service, Auth and Now are required.
func New(h Handler) *Handler {
	if h.Log == nil {
		h.Log = slog.Default()
	}
	if h.Portal == nil {
		h.Portal = &handshake.Portal{Service: h.Service}
	}
	hh := &h
	hh.mux = &routes{}
	hh.agentRoutes()
	hh.ownerRoutes()
	hh.echo = hh.router()
	return hh
}

// ServeHTTP implements http.Handler: the routes on a router of their own
// (Mount). A path or method no route takes is answered with the venue's
// JSON error body (not_found, 404, or method_not_allowed, 405 with Allow),
// like every other route.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.echo.ServeHTTP(w, r) }

// agentHandler is a route of an authenticated agent.
type agentHandler func(w http.ResponseWriter, r *http.Request, agent store.Agent) error

func (h *Handler) agent(fn agentHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		key, err := httpapi.BearerKey(r)
		var a store.Agent
		if err == nil {
			a, err = h.Auth.Authenticate(r.Context(), key)
		}
		if err == nil {
			err = fn(w, r, a)
		}
		if err != nil {
			h.fail(w, r, err)
		}
	}
}

// fail writes err as the REST error body with its status.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	var we *wire.Error
	if !errors.As(err, &we) {
		h.Log.Error("handshake request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		we = wire.Errorf(wire.CodeInternal, "the venue failed; nothing was changed")
	}
	status := handshake.HTTPStatus(we.Code)
	if status == http.StatusTooManyRequests {
		// Every 429 says when to come back (PROTOCOL.md "Limits and close
		// codes"); the handshake's windows are counted in the store.
		w.Header().Set("Retry-After", "60")
	}
	writeJSON(w, status, map[string]any{"error": we})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// body reads a JSON object body strictly (wire.DecodeBody) that may
// hold only the members allowed (a typo is 422 naming it); an empty body
// is an empty object.
func body(w http.ResponseWriter, r *http.Request, allowed ...string) (*wire.Fields, error) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, wire.Errorf(wire.CodeTooLarge, "body over %d bytes", MaxBodyBytes)
		}
		return nil, wire.Errorf(wire.CodeInvalidJSON, "cannot read the body")
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		return wire.NewFields(map[string]json.RawMessage{}), nil
	}
	if !utf8.Valid(b) {
		return nil, wire.Errorf(wire.CodeInvalidJSON, "the body is not valid UTF-8")
	}
	m, werr := wire.DecodeBody(b)
	if werr != nil {
		return nil, werr
	}
	f := wire.NewFields(m)
	if werr := f.Only(allowed...); werr != nil {
		return nil, werr
	}
	return f, nil
}

// strings reads an optional array of strings; absent or null is nil.
func stringList(f *wire.Fields, key string) []string {
	if !f.Has(key) {
		return nil
	}
	var out []string
	if json.Unmarshal(f.M[key], &out) != nil || out == nil {
		f.Fail("%s must be an array of strings", key)
		return nil
	}
	return out
}

// queryInt reads an integer query parameter (absent: def).
func queryInt(r *http.Request, key string, def int) (int, error) {
	s := r.URL.Query().Get(key)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, wire.Errorf(wire.CodeInvalidArgument, "%s must be an integer", key)
	}
	// A limit of 0 is not "the default": it is refused, as a negative offset.
	if lo := map[string]int{"limit": 1, "offset": 0}[key]; n < lo {
		return 0, wire.Errorf(wire.CodeInvalidArgument, "%s must be at least %d", key, lo)
	}
	return n, nil
}

// listOf returns items, never null.
func listOf(items []map[string]any) []map[string]any {
	if items == nil {
		return []map[string]any{}
	}
	return items
}
