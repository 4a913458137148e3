package arena

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/labstack/echo/v4"

	"github.com/venuehq/venue/client"
	"github.com/venuehq/venue/internal/httpapi"
	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/wire"
)

// Listing limits of GET /v1/arena/negotiations.
const (
	DefaultListLimit = 20
	MaxListLimit     = 100
)

// ReputationEventsShown is how many of an agent's newest reputation events
// GET /v1/agents/{id}/reputation returns.
const ReputationEventsShown = 50

// APIConfig is what the arena's REST routes need.
type APIConfig struct {
	Store store.Store
	Feed  *Feed  // serves GET /v1/arena/ws
	House *House // nil: house agents are off (POST /v1/arena/spar is 503)
	// Authenticate resolves the request's Authorization: Bearer key to its
	// agent; its errors are *wire.Error (unauthorized).
	Authenticate func(r *http.Request) (store.Agent, error)
	Log          *slog.Logger
}

// NewAPI returns the arena's routes (PROTOCOL.md "Arena, reputation and
// settlements"), for the venue's one router (Mount):
//
//	GET  /v1/arena/negotiations   the listing, newest first, paged
//	GET  /v1/arena/ws             the live feed (no token)
//	POST /v1/arena/spar           a bouncer asks the house brand for a practice negotiation
//	GET  /v1/agents/{id}/reputation
//
// GET /v1/settlements is package deliveries' (a settlement's status moves
// with its deal's deliveries).
func NewAPI(cfg APIConfig) *API {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	a := &API{cfg: cfg}
	a.house.Store(cfg.House)
	return a
}

// API is the arena's routes; the house agents can be handed to it once
// they run (SetHouse).
type API struct {
	cfg   APIConfig
	house atomic.Pointer[House]
}

// SetHouse makes POST /v1/arena/spar use h (nil: the house is off).
func (a *API) SetHouse(h *House) { a.house.Store(h) }

// Mount adds the routes to e, the node's one router.
func (a *API) Mount(e *echo.Echo) {
	httpapi.Handle(e, http.MethodGet, "/v1/arena/negotiations", a.wrap(a.list))
	httpapi.Handle(e, http.MethodGet, "/v1/arena/ws", a.cfg.Feed)
	httpapi.Handle(e, http.MethodPost, "/v1/arena/spar", a.wrap(a.spar))
	httpapi.Handle(e, http.MethodGet, "/v1/agents/{id}/reputation", a.wrap(a.reputation))
}

// wrap writes a handler's value as 200 JSON (or status when it returns a
// *created) and its error as {"error":{code,message}}.
func (a *API) wrap(fn func(r *http.Request) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v, err := fn(r)
		status := http.StatusOK
		if c, ok := v.(created); ok {
			status, v = http.StatusCreated, c.v
		}
		if err != nil {
			var we *wire.Error
			if !errors.As(err, &we) {
				a.cfg.Log.Error("request failed", "path", r.URL.Path, "err", err)
				we = wire.Errorf(wire.CodeInternal, "the venue failed; nothing was changed")
			}
			status, v = wire.HTTPStatus(we.Code), map[string]any{"error": we}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
}

type created struct{ v any }

// intParam reads an integer query parameter in [lo, hi]; def when absent.
func intParam(r *http.Request, name string, lo, hi, def int) (int, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		return 0, wire.Errorf(wire.CodeInvalidArgument, "%s must be an integer from %d to %d", name, lo, hi)
	}
	return n, nil
}

var endings = []string{negotiation.StatusDeal, negotiation.StatusWalked, negotiation.StatusTurnMissed, negotiation.StatusExpired}

// statuses maps the status filter to the statuses it lists.
func statuses(filter string) ([]string, error) {
	switch filter {
	case "":
		return append([]string{negotiation.StatusLive}, endings...), nil
	case "ended":
		return endings, nil
	case negotiation.StatusLive, negotiation.StatusPending, negotiation.StatusDeclined,
		negotiation.StatusDeal, negotiation.StatusWalked, negotiation.StatusTurnMissed, negotiation.StatusExpired:
		return []string{filter}, nil
	}
	return nil, wire.Errorf(wire.CodeInvalidArgument,
		"status must be live, ended, pending, declined, deal, walked, turn_missed or expired")
}

// list is GET /v1/arena/negotiations?status=&limit=&offset=&agent_id=
// (PROTOCOL.md "Arena listing"). Errors: invalid_argument for a bad value,
// another parameter or one given twice.
func (a *API) list(r *http.Request) (any, error) {
	if werr := wire.QueryOnly(r.URL.RawQuery, "status", "limit", "offset", "agent_id"); werr != nil {
		return nil, werr
	}
	sts, err := statuses(r.URL.Query().Get("status"))
	if err != nil {
		return nil, err
	}
	limit, err := intParam(r, "limit", 1, MaxListLimit, DefaultListLimit)
	if err != nil {
		return nil, err
	}
	offset, err := intParam(r, "offset", 0, 1<<30, 0)
	if err != nil {
		return nil, err
	}
	arena := true
	// One more than asked says whether there is a next page.
	agentID := r.URL.Query().Get("agent_id")
	if len(agentID) > 200 || strings.ContainsRune(agentID, 0) {
		return nil, wire.Errorf(wire.CodeInvalidArgument, "agent_id is at most 200 bytes, without NUL")
	}
	list, err := a.cfg.Store.Negotiations(r.Context(), store.NegotiationQuery{Arena: &arena, Statuses: sts, Limit: limit + 1, Offset: offset, AgentID: agentID})
	if err != nil {
		return nil, err
	}
	var next *int
	if len(list) > limit {
		list = list[:limit]
		n := offset + limit
		next = &n
	}
	items := make([]Summary, len(list))
	for i, st := range list {
		items[i] = Summarize(st)
	}
	return map[string]any{"items": items, "offset": offset, "limit": limit, "next_offset": next}, nil
}

// bearer resolves the request's Authorization: Bearer key.
func (a *API) bearer(r *http.Request) (store.Agent, error) {
	return a.cfg.Authenticate(r)
}

// spar is POST /v1/arena/spar {"amount_usd"?}: the house brand opens an
// arena negotiation with the calling bouncer.
func (a *API) spar(r *http.Request) (any, error) {
	ag, err := a.bearer(r)
	if err != nil {
		return nil, err
	}
	if ag.Role != negotiation.RoleBouncer {
		return nil, wire.Errorf(wire.CodeForbidden, "only bouncers ask the house brand to spar; brands submit an arena offer to the house bouncer")
	}
	house := a.house.Load()
	if house == nil {
		return nil, wire.Errorf(wire.CodeUnavailable, "the house agents are off on this venue (--no-house-agents)")
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 4096))
	if err != nil {
		return nil, wire.Errorf(wire.CodeInvalidJSON, "could not read the body")
	}
	var anchor int64
	if len(strings.TrimSpace(string(body))) > 0 {
		m, werr := wire.DecodeBody(body)
		if werr != nil {
			return nil, werr
		}
		if werr := (&wire.Fields{M: m}).Only("amount_usd"); werr != nil {
			return nil, werr
		}
		if raw, ok := m["amount_usd"]; ok && string(raw) != "null" {
			c, perr := negotiation.ParseAmount(raw)
			if perr != nil {
				return nil, perr
			}
			anchor = c
		}
	}
	id, err := house.Spar(r.Context(), ag.ID, anchor)
	var ce *client.Error
	switch {
	case errors.Is(err, ErrBusy):
		return nil, wire.Errorf(wire.CodeConflict, "%s", err.Error())
	case errors.As(err, &ce):
		return nil, wire.Errorf(ce.Code, "%s", ce.Message)
	case err != nil:
		return nil, wire.Errorf(wire.CodeUnavailable, "the house brand cannot spar now: %v", err)
	}
	return created{map[string]any{"negotiation_id": id, "brand": house.BrandID(), "arena": true}}, nil
}

// reputation is GET /v1/agents/{id}/reputation.
func (a *API) reputation(r *http.Request) (any, error) {
	id := r.PathValue("id")
	ag, err := a.cfg.Store.Agent(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, wire.Errorf(wire.CodeNotFound, "no agent %s", id)
	} else if err != nil {
		return nil, err
	}
	evs, err := a.cfg.Store.ReputationEvents(r.Context(), id, ReputationEventsShown)
	if err != nil {
		return nil, err
	}
	items := make([]map[string]any, len(evs))
	for i, e := range evs {
		items[i] = map[string]any{"delta": e.Delta, "reason": e.Reason, "negotiation_id": e.NegotiationID, "at": wire.Time(e.At)}
	}
	return map[string]any{"agent_id": ag.ID, "name": ag.Name, "reputation": ag.Reputation, "events": items,
		"rules": map[string]int{"deal": negotiation.ReputationDeal, "turn_missed": negotiation.ReputationTurnMissed}}, nil
}
