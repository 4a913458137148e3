package venue

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/venuehq/venue/delegation"
	"github.com/venuehq/venue/grants"
	"github.com/venuehq/venue/internal/httpapi"
	"github.com/venuehq/venue/wire"
)

// The delegation routes (DELEGATION.md) carry package delegation's
// Service over HTTP; token errors answer with TokenError.HTTPStatus.

// handleUploadGrant is POST /v1/grants {"token"} -> 201 the grant's view.
func (s *Server) handleUploadGrant(c echo.Context) error {
	token, err := httpapi.TokenBody(c, "a grant")
	if err != nil {
		return err
	}
	a, now := agentOf(c), s.clock.Now()
	rec, err := s.delegation.Upload(c.Request().Context(), a, token, now)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, delegation.View(rec, now, a.PrincipalThumbprint))
}

// handleListGrants is GET /v1/grants?after=&limit=: a page of the agent's
// grants with their status, and `next` when more follow. Errors:
// invalid_argument for a bad after or limit, another parameter or one given
// twice.
func (s *Server) handleListGrants(c echo.Context) error {
	if werr := wire.QueryOnly(c.Request().URL.RawQuery, "after", "limit"); werr != nil {
		return werr
	}
	items, next, err := s.delegation.List(c.Request().Context(), agentOf(c), s.clock.Now(), c.QueryParam("after"), c.QueryParam("limit"))
	if err != nil {
		return err
	}
	body := map[string]any{"items": items}
	if next != "" {
		body["next"] = next
	}
	return c.JSON(http.StatusOK, body)
}

// handleRevokeGrant is DELETE /v1/grants/:jti.
func (s *Server) handleRevokeGrant(c echo.Context) error {
	jti := c.Param("jti")
	if err := s.delegation.Revoke(c.Request().Context(), agentOf(c).ID, jti, s.clock.Now()); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"jti": jti, "status": "revoked"})
}

// handleDecision is POST /v1/escalations/:id/decision {"token"}.
func (s *Server) handleDecision(c echo.Context) error {
	token, err := httpapi.TokenBody(c, "a decision")
	if err != nil {
		return err
	}
	d, err := s.delegation.Decide(c.Request().Context(), c.Param("id"), token, s.clock.Now())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"escalation_id": d.EscalationID, "decision": d.Decision, "negotiation_id": d.NegotiationID})
}

// handleRevocation is POST /v1/revocations {"token"}: the principal's own
// channel, with no API key (DELEGATION.md "Revoking without the agent").
func (s *Server) handleRevocation(c echo.Context) error {
	token, err := httpapi.TokenBody(c, "a revocation")
	if err != nil {
		return err
	}
	r, err := s.delegation.PrincipalRevoke(c.Request().Context(), token, s.clock.Now())
	if err != nil {
		return err
	}
	if r.Kind == grants.RevokeGrant {
		return c.JSON(http.StatusOK, map[string]any{"revoked": grants.RevokeGrant, "agent_id": r.AgentID,
			"jti": r.JTI, "uploaded": r.Uploaded, "withdrawn": r.Withdrawn})
	}
	return c.JSON(http.StatusOK, map[string]any{"revoked": grants.RevokeAPIKey, "agent_id": r.AgentID, "replaced": r.Replaced})
}
