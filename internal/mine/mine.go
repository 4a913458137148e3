// Package mine serves an agent's own lists (PROTOCOL.md "REST"): the
// negotiations it is a party of and the offers it made or received, newest
// first, paged. The agent is the one the router's authentication set
// (httpapi.Agent); venue mounts the routes.
package mine

import (
	"context"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/venuehq/venue/internal/httpapi"
	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/wire"
)

// Store is what the lists read (a store.Store).
type Store interface {
	NegotiationsOf(ctx context.Context, q store.PartyQuery) ([]negotiation.State, int, error)
	OffersOf(ctx context.Context, q store.PartyQuery) ([]store.Offer, int, error)
}

// Lists serves the two lists from Store.
type Lists struct{ Store Store }

// Paging of the agent's own lists (PROTOCOL.md "REST").
const (
	defaultPage = 20
	maxPage     = 100
)

// partyQuery reads ?limit= (1-100, default 20) and ?offset= (0 or more) for
// the authenticated agent. Errors: invalid_argument.
func partyQuery(c echo.Context) (store.PartyQuery, error) {
	a, _ := httpapi.Agent(c)
	q := store.PartyQuery{AgentID: a.ID, Limit: defaultPage}
	for _, p := range []struct {
		name   string
		dst    *int
		lo, hi int
	}{{"limit", &q.Limit, 1, maxPage}, {"offset", &q.Offset, 0, 1 << 30}} {
		v := c.QueryParam(p.name)
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < p.lo || n > p.hi {
			return q, wire.Errorf(wire.CodeInvalidArgument, "%s must be an integer from %d to %d", p.name, p.lo, p.hi)
		}
		*p.dst = n
	}
	return q, nil
}

// statuses a negotiation can have, for ?status=.
var statuses = []string{negotiation.StatusPending, negotiation.StatusDeclined, negotiation.StatusLive,
	negotiation.StatusDeal, negotiation.StatusWalked, negotiation.StatusTurnMissed, negotiation.StatusExpired}

// Negotiations is GET /v1/negotiations?role=mine[&status=][&limit=]
// [&offset=]: the negotiations the agent is a party of, newest first, as
// public views, with the total. Errors: 422 for a role other than mine, an
// unknown status, bad paging, another parameter or one given twice.
func (l Lists) Negotiations(c echo.Context) error {
	if werr := wire.QueryOnly(c.Request().URL.RawQuery, "role", "status", "limit", "offset"); werr != nil {
		return werr
	}
	if role := c.QueryParam("role"); role != "mine" {
		return wire.Errorf(wire.CodeInvalidArgument, "role=mine is required: an agent lists its own negotiations (arena negotiations are public elsewhere)")
	}
	q, err := partyQuery(c)
	if err != nil {
		return err
	}
	if st := c.QueryParam("status"); st != "" {
		ok := false
		for _, v := range statuses {
			ok = ok || v == st
		}
		if !ok {
			return wire.Errorf(wire.CodeInvalidArgument, "status must be one of %v", statuses)
		}
		q.Status = st
	}
	sts, total, err := l.Store.NegotiationsOf(c.Request().Context(), q)
	if err != nil {
		return err
	}
	items := make([]map[string]any, 0, len(sts))
	for i := range sts {
		items = append(items, sts[i].View())
	}
	return c.JSON(http.StatusOK, map[string]any{"items": items, "total": total, "offset": q.Offset})
}

// Offers is GET /v1/offers[?limit=][&offset=]: the offers the agent
// made (a brand) or received (a bouncer), newest first, with the total.
// Errors: 422 for bad paging, another parameter or one given twice.
func (l Lists) Offers(c echo.Context) error {
	if werr := wire.QueryOnly(c.Request().URL.RawQuery, "limit", "offset"); werr != nil {
		return werr
	}
	q, err := partyQuery(c)
	if err != nil {
		return err
	}
	offers, total, err := l.Store.OffersOf(c.Request().Context(), q)
	if err != nil {
		return err
	}
	items := make([]map[string]any, 0, len(offers))
	for _, o := range offers {
		v := map[string]any{"offer_id": o.ID, "brand": o.Brand, "to": o.Bouncer, "offer": o.Body,
			"arena": o.Arena, "created_at": wire.Time(o.CreatedAt)}
		if o.NegotiationID != "" {
			v["negotiation_id"] = o.NegotiationID
		}
		items = append(items, v)
	}
	return c.JSON(http.StatusOK, map[string]any{"items": items, "total": total, "offset": q.Offset})
}
