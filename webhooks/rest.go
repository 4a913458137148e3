package webhooks

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/venuehq/venue/internal/httpapi"
	"github.com/venuehq/venue/wire"
)

// Routes are the webhook's REST routes (PROTOCOL.md "Webhooks"), for the
// authenticated agent: PUT, GET and DELETE /v1/agents/me/webhook, POST
// /v1/agents/me/webhook/rotate-secret, GET /v1/agents/me/webhook/deliveries.
type Routes struct {
	Store Store
	Guard Guard
	Now   func() time.Time // the venue clock
	// Wake, if set, is called after a webhook is set (the node's Sender).
	Wake func()
}

// Mount adds the routes to e behind auth. keyed are the middlewares of
// writes that take an Idempotency-Key (DELETE); PUT and rotate-secret
// answer with the secret, which the venue keeps for signing only, and take
// no key (auth alone).
func (r Routes) Mount(e *echo.Echo, auth echo.MiddlewareFunc, keyed ...echo.MiddlewareFunc) {
	e.PUT("/v1/agents/me/webhook", r.put, auth)
	e.GET("/v1/agents/me/webhook", r.get, auth)
	e.DELETE("/v1/agents/me/webhook", r.delete, keyed...)
	e.POST("/v1/agents/me/webhook/rotate-secret", r.rotate, auth)
	e.GET("/v1/agents/me/webhook/deliveries", r.deliveries, auth)
}

func agentID(c echo.Context) string {
	a, _ := httpapi.Agent(c)
	return a.ID
}

// view is a webhook as served; Secret only on creation and rotation.
func view(w Webhook, withSecret bool) map[string]any {
	evs := w.Events
	if evs == nil {
		evs = []string{}
	}
	m := map[string]any{"url": w.URL, "events": evs, "created_at": wire.Time(w.CreatedAt), "enabled": w.DisabledAt.IsZero()}
	if !w.DisabledAt.IsZero() {
		m["disabled_at"] = wire.Time(w.DisabledAt)
	}
	if withSecret {
		m["secret"] = w.SecretString()
	}
	return m
}

// put is PUT /v1/agents/me/webhook {"url","events"?}: sets the webhook,
// replacing any, with a fresh secret -> 200 with the secret.
// invalid_argument for a URL the guard refuses or a bad events list.
func (r Routes) put(c echo.Context) error {
	m, err := httpapi.Body(c)
	if err != nil {
		return err
	}
	f := wire.NewFields(m)
	f.Only("url", "events")
	u := f.String("url", true)
	if f.Err != nil {
		return f.Err
	}
	var types []string
	if raw, ok := m["events"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &types); err != nil {
			return wire.Errorf(wire.CodeInvalidArgument, "events must be an array of event types")
		}
		if err := validTypes(types); err != nil {
			return wire.Errorf(wire.CodeInvalidArgument, "events: %v", err)
		}
	}
	if err := r.Guard.CheckURL(c.Request().Context(), u); err != nil {
		return wire.Errorf(wire.CodeInvalidArgument, "%v", err)
	}
	if len(types) == 0 {
		types = nil
	}
	w := Webhook{AgentID: agentID(c), URL: u, Events: types, Secret: NewSecret(), CreatedAt: r.Now().UTC()}
	if err := r.Store.Put(c.Request().Context(), w); err != nil {
		return err
	}
	if r.Wake != nil {
		r.Wake()
	}
	return c.JSON(http.StatusOK, view(w, true))
}

func (r Routes) get(c echo.Context) error {
	w, err := r.Store.Get(c.Request().Context(), agentID(c))
	if err != nil {
		return notFound(err)
	}
	return c.JSON(http.StatusOK, view(w, false))
}

func (r Routes) delete(c echo.Context) error {
	if err := r.Store.Delete(c.Request().Context(), agentID(c)); err != nil {
		return notFound(err)
	}
	return c.NoContent(http.StatusNoContent)
}

// rotate is POST /v1/agents/me/webhook/rotate-secret: a fresh secret,
// used from the next attempt on -> 200 with it.
func (r Routes) rotate(c echo.Context) error {
	ctx, id := c.Request().Context(), agentID(c)
	key := NewSecret()
	if err := r.Store.SetSecret(ctx, id, key); err != nil {
		return notFound(err)
	}
	w, err := r.Store.Get(ctx, id)
	if err != nil {
		return notFound(err)
	}
	return c.JSON(http.StatusOK, view(w, true))
}

// deliveries is GET /v1/agents/me/webhook/deliveries?limit=1-100 (default
// 50): the latest attempts, newest first. Errors: invalid_argument for
// another limit, another parameter or one given twice.
func (r Routes) deliveries(c echo.Context) error {
	if werr := wire.QueryOnly(c.Request().URL.RawQuery, "limit"); werr != nil {
		return werr
	}
	limit := 50
	if v := c.QueryParam("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			return wire.Errorf(wire.CodeInvalidArgument, "limit is an integer from 1 to 100")
		}
		limit = n
	}
	as, err := r.Store.Attempts(c.Request().Context(), agentID(c), limit)
	if err != nil {
		return err
	}
	out := make([]map[string]any, 0, len(as))
	for _, a := range as {
		m := map[string]any{"event_id": a.EventID, "type": a.EventType, "attempt": a.N, "at": wire.Time(a.At), "url": a.URL, "result": a.Result}
		if a.Status != 0 {
			m["status"] = a.Status
		}
		if a.Error != "" {
			m["error"] = a.Error
		}
		if !a.Next.IsZero() {
			m["next_attempt_at"] = wire.Time(a.Next)
		}
		out = append(out, m)
	}
	return c.JSON(http.StatusOK, map[string]any{"deliveries": out})
}

func notFound(err error) error {
	if errors.Is(err, ErrNotFound) {
		return wire.Errorf(wire.CodeNotFound, "no webhook is set")
	}
	return err
}
