package venue

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/venuehq/venue/deliveries"
	"github.com/venuehq/venue/internal/httpapi"
	"github.com/venuehq/venue/receipt"
	"github.com/venuehq/venue/store"
)

// newDeliveries builds the deal after the deal (package deliveries) on
// Config.Deliveries, with the node's settler, event log and receipt key.
func (s *Server) newDeliveries() {
	s.deliveries = &deliveries.Service{
		Store: s.cfg.Deliveries, Venue: s.store, Events: s.events, Settler: s.arena.Settler,
		Signer: func() *receipt.Cache { return s.keys.Signer() }, Clock: s.clock, Window: s.cfg.DeliveryApprovalWindow, Log: s.log,
	}
}

// mountDeliveries mounts its routes (PROTOCOL.md "Deliveries"); writes
// take an Idempotency-Key.
func (s *Server) mountDeliveries(e *echo.Echo, keyed ...echo.MiddlewareFunc) {
	routes := deliveries.NewAPI(s.deliveries, func(r *http.Request) (store.Agent, error) {
		return s.authenticate(r)
	}, s.log)
	for _, rt := range routes {
		if rt.Method == http.MethodPost {
			httpapi.Handle(e, rt.Method, rt.Path, rt.Handler, keyed...)
		} else {
			httpapi.Handle(e, rt.Method, rt.Path, rt.Handler)
		}
	}
}

// runDeliveries sweeps for deliveries past their approval window until ctx
// is done.
func (s *Server) runDeliveries(ctx context.Context) { _ = s.deliveries.Run(ctx) }
