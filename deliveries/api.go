package deliveries

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/wire"
)

// MaxBodyBytes bounds the body of a delivery request.
const MaxBodyBytes = 16 << 10

// Route is one route of the API: a net/http pattern's method and path
// ({id}, {delivery_id}) and its handler, for the venue's router
// (internal/httpapi.Handle).
type Route struct {
	Method, Path string
	Handler      http.HandlerFunc
}

// NewAPI returns the routes of the deal after the deal (PROTOCOL.md
// "Deliveries", "Evidence", "Settlements"); every route takes the
// Authorization: Bearer key, resolved by authenticate (its errors are
// *wire.Error, unauthorized). Errors are the venue's error body
// {"error":{"code","message"}} with the code's status.
//
//	POST /v1/negotiations/{id}/deliveries                          the bouncer: 201 delivery
//	POST /v1/negotiations/{id}/deliveries/{delivery_id}/approve    the brand: 200 delivery
//	POST /v1/negotiations/{id}/deliveries/{delivery_id}/dispute    the brand, {"reason"}: 200 delivery
//	GET  /v1/negotiations/{id}/evidence                            a party: 200 application/jose
//	GET  /v1/settlements                                           the caller's, newest first
func NewAPI(svc *Service, authenticate func(r *http.Request) (store.Agent, error), log *slog.Logger) []Route {
	if log == nil {
		log = slog.Default()
	}
	a := &api{svc: svc, auth: authenticate, log: log}
	return []Route{
		{"POST", "/v1/negotiations/{id}/deliveries", a.wrap(a.submit)},
		{"POST", "/v1/negotiations/{id}/deliveries/{delivery_id}/approve", a.wrap(a.answer(true))},
		{"POST", "/v1/negotiations/{id}/deliveries/{delivery_id}/dispute", a.wrap(a.answer(false))},
		{"GET", "/v1/negotiations/{id}/evidence", a.wrap(a.evidence)},
		{"GET", "/v1/settlements", a.wrap(a.settlements)},
	}
}

type api struct {
	svc  *Service
	auth func(r *http.Request) (store.Agent, error)
	log  *slog.Logger
}

// answer kinds a handler returns besides 200 JSON.
type (
	created struct{ v any }
	jose    string
)

func (a *api) wrap(fn func(r *http.Request, ag store.Agent) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var v any
		ag, err := a.auth(r)
		if err == nil {
			v, err = fn(r, ag)
		}
		status := http.StatusOK
		if err != nil {
			var we *wire.Error
			if !errors.As(err, &we) {
				a.log.Error("request failed", "path", r.URL.Path, "err", err)
				we = wire.Errorf(wire.CodeInternal, "the venue failed; nothing was changed")
			}
			status, v = wire.HTTPStatus(we.Code), map[string]any{"error": we}
		}
		switch x := v.(type) {
		case jose:
			w.Header().Set("Content-Type", "application/jose")
			w.WriteHeader(status)
			_, _ = io.WriteString(w, string(x))
			return
		case created:
			status, v = http.StatusCreated, x.v
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
}

// body reads at most MaxBodyBytes; an empty body reads as {}.
func body(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
	switch {
	case err != nil:
		return nil, wire.Errorf(wire.CodeInvalidJSON, "could not read the body")
	case len(b) > MaxBodyBytes:
		return nil, wire.Errorf(wire.CodeTooLarge, "the body is at most %d bytes", MaxBodyBytes)
	case strings.TrimSpace(string(b)) == "":
		return []byte("{}"), nil
	}
	return b, nil
}

func (a *api) submit(r *http.Request, ag store.Agent) (any, error) {
	b, err := body(r)
	if err != nil {
		return nil, err
	}
	sub, werr := ParseSubmission(b)
	if werr != nil {
		return nil, werr
	}
	d, err := a.svc.Submit(r.Context(), ag.ID, r.PathValue("id"), sub)
	if err != nil {
		return nil, err
	}
	return created{d.View()}, nil
}

func (a *api) answer(approve bool) func(r *http.Request, ag store.Agent) (any, error) {
	return func(r *http.Request, ag store.Agent) (any, error) {
		b, err := body(r)
		if err != nil {
			return nil, err
		}
		reason := ""
		if approve {
			m, werr := wire.DecodeBody(b)
			if werr != nil {
				return nil, werr
			}
			if werr := wire.NewFields(m).Only(); werr != nil {
				return nil, werr
			}
		} else if r2, werr := ParseReason(b); werr != nil {
			return nil, werr
		} else {
			reason = r2
		}
		d, err := a.svc.Answer(r.Context(), ag.ID, r.PathValue("id"), r.PathValue("delivery_id"), approve, reason)
		if err != nil {
			return nil, err
		}
		return d.View(), nil
	}
}

func (a *api) evidence(r *http.Request, ag store.Agent) (any, error) {
	tok, err := a.svc.Evidence(r.Context(), ag.ID, r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	return jose(tok), nil
}

// settlements is GET /v1/settlements (PROTOCOL.md "Settlements"): the
// caller's, newest first. It takes no query parameter: any is
// invalid_argument.
func (a *api) settlements(r *http.Request, ag store.Agent) (any, error) {
	if werr := wire.QueryOnly(r.URL.RawQuery); werr != nil {
		return nil, werr
	}
	items, err := a.svc.Settlements(r.Context(), ag.ID)
	if err != nil {
		return nil, err
	}
	return map[string]any{"items": items}, nil
}
