package briefs

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/venuehq/venue/internal/httpapi"
	"github.com/venuehq/venue/wire"
)

// Get is the handler of GET /v1/briefs/{brief_id} behind the venue's
// agent authentication (View; PROTOCOL.md "Sealed briefs").
func (s *Service) Get(c echo.Context) error {
	a, ok := httpapi.Agent(c)
	if !ok {
		return wire.Errorf(wire.CodeUnauthorized, "an api_key is required")
	}
	v, err := s.View(c.Request().Context(), a, c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}
