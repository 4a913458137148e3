package venue

import (
	_ "embed"
	"net/http"

	"github.com/labstack/echo/v4"
)

// openAPIDocument is the OpenAPI 3.1 document of the REST API
// (PROTOCOL.md "REST"): every route of Server.routes with its bodies,
// answers and error statuses. The socket routes are listed as upgrades; their
// frames are in asyncapi.yaml at the repository root. The e2e tests validate
// every REST request and answer they make against it, and a test keeps its
// paths equal to the routes, so it cannot drift from the code.
//
//go:embed openapi.json
var openAPIDocument []byte

// OpenAPI returns the OpenAPI 3.1 document of the REST API (JSON), as served
// at GET /openapi.json. The caller must not modify it.
func OpenAPI() []byte { return openAPIDocument }

// handleOpenAPI is GET /openapi.json.
func (s *Server) handleOpenAPI(c echo.Context) error {
	return c.Blob(http.StatusOK, "application/json", openAPIDocument)
}
