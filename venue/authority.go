package venue

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/venuehq/venue/grants"
	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/wire"
)

const (
	codeNoPrincipalKey   = wire.CodeNoPrincipalKey
	codeDuplicateJTI     = wire.CodeDuplicateJTI
	codeEscalationClosed = wire.CodeEscalationClosed
	codeGrantNegotiation = wire.CodeGrantNegotiation
)

// principal returns the agent's principal public key and thumbprint.
func principal(a store.Agent) (ed25519.PublicKey, string, error) {
	if len(a.PrincipalKey) == 0 {
		return nil, "", wire.Errorf(codeNoPrincipalKey, "agent %s has no principal key: PUT /v1/agents/me/principal-key first", a.ID)
	}
	_, pub, err := grants.ParseJWK(a.PrincipalKey)
	if err != nil {
		return nil, "", fmt.Errorf("stored principal key of %s: %w", a.ID, err)
	}
	return pub, a.PrincipalThumbprint, nil
}

func asWire(err error) error {
	var te *grants.TokenError
	if errors.As(err, &te) {
		return &statusError{status: te.HTTPStatus(), err: wire.Error{Code: te.Code, Message: te.Message}}
	}
	return err
}

// statusError is a wire error with its own HTTP status (token errors are
// 401/403/422 by kind, not by one table).
type statusError struct {
	status int
	err    wire.Error
}

func (e *statusError) Error() string { return e.err.Error() }
func (e *statusError) Unwrap() error { return &e.err }

// tokenBody reads a {"token": JWT} body. Errors: invalid_json,
// invalid_argument when the token is missing or not a string.
func tokenBody(c echo.Context, what string) (string, error) {
	m, err := body(c)
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

// handleUploadGrant is POST /v1/grants {"token"} (DELEGATION.md "The checks").
func (s *Server) handleUploadGrant(c echo.Context) error {
	token, err := tokenBody(c, "a grant")
	if err != nil {
		return err
	}
	a := agentOf(c)
	pub, thumb, err := principal(a)
	if err != nil {
		return err
	}
	now := s.clock.Now()
	g, err := grants.Verify(token, pub, thumb, grants.VerifyOptions{Audience: s.cfg.Audience, Subject: a.ID, Now: now})
	if err != nil {
		return asWire(err)
	}
	if id := g.Scope.NegotiationID; id != "" {
		st, err := s.store.Negotiation(c.Request().Context(), id)
		if err != nil || !st.IsParty(a.ID) {
			return wire.Errorf(codeGrantNegotiation, "the grant names negotiation %s, which is not one of yours", id)
		}
	}
	rec, err := grants.RecordOf(g, a.ID, now)
	if err != nil {
		return err
	}
	if err := s.store.SaveGrant(c.Request().Context(), rec); errors.Is(err, store.ErrConflict) {
		return wire.Errorf(codeDuplicateJTI, "a grant with jti %s was already uploaded; every grant needs a fresh jti", g.JTI)
	} else if err != nil {
		return err
	}
	rec = s.storedGrant(c.Request().Context(), rec)
	s.log.Info("grant uploaded", "agent_id", a.ID, "jti", g.JTI, "exp", wire.Time(g.ExpiresAt))
	return c.JSON(http.StatusCreated, grantView(rec, now, thumb))
}

// grantView is a grant as GET /v1/grants shows it, with its status now.
func grantView(r store.GrantRecord, now time.Time, thumb string) map[string]any {
	status := r.Status(now, thumb)
	v := map[string]any{
		"jti": r.JTI, "iss": r.Issuer, "exp": wire.Time(r.ExpiresAt), "grant": r.Scope,
		"status": status, "uploaded_at": wire.Time(r.CreatedAt), "spent_usd": grants.FormatUSD(r.SpentCents),
	}
	if !r.IssuedAt.IsZero() {
		v["iat"] = wire.Time(r.IssuedAt)
	}
	if r.NegotiationID != "" {
		v["negotiation_id"] = r.NegotiationID
	}
	if !r.RevokedAt.IsZero() {
		v["revoked_at"] = wire.Time(r.RevokedAt)
	}
	return v
}

// handleListGrants is GET /v1/grants: the agent's grants with their status.
func (s *Server) handleListGrants(c echo.Context) error {
	a := agentOf(c)
	recs, err := s.store.Grants(c.Request().Context(), a.ID)
	if err != nil {
		return err
	}
	now := s.clock.Now()
	items := make([]map[string]any, 0, len(recs))
	for _, r := range recs {
		items = append(items, grantView(r, now, a.PrincipalThumbprint))
	}
	return c.JSON(http.StatusOK, map[string]any{"items": items})
}

// handleRevokeGrant is DELETE /v1/grants/:jti.
func (s *Server) handleRevokeGrant(c echo.Context) error {
	a := agentOf(c)
	jti := c.Param("jti")
	err := s.store.RevokeGrant(c.Request().Context(), a.ID, jti, s.clock.Now())
	if errors.Is(err, store.ErrNotFound) {
		return wire.Errorf(wire.CodeNotFound, "you have no grant %s", jti)
	} else if err != nil {
		return err
	}
	s.log.Info("grant revoked", "agent_id", a.ID, "jti", jti)
	return c.JSON(http.StatusOK, map[string]any{"jti": jti, "status": "revoked"})
}

// escalationNegotiation returns the negotiation id of an escalation id
// ("<negotiation_id>.e<seq>").
func escalationNegotiation(id string) (string, bool) {
	i := strings.LastIndex(id, ".e")
	if i <= 0 {
		return "", false
	}
	return id[:i], true
}

// handleDecision is POST /v1/escalations/:id/decision {"token"}: the
// principal's answer to an escalation, a JWT signed by the same principal
// key (DELEGATION.md "The checks"). On approve its grant, scoped to the negotiation, is
// stored and applies at once; the agent gets escalation_resolved and its
// turn clock resumes with the time it had left.
func (s *Server) handleDecision(c echo.Context) error {
	ctx := c.Request().Context()
	escID := c.Param("id")
	token, err := tokenBody(c, "a decision")
	if err != nil {
		return err
	}
	negID, ok := escalationNegotiation(escID)
	if !ok {
		return wire.Errorf(wire.CodeNotFound, "no escalation %s", escID)
	}
	st, err := s.store.Negotiation(ctx, negID)
	if errors.Is(err, store.ErrNotFound) {
		return wire.Errorf(wire.CodeNotFound, "no escalation %s", escID)
	} else if err != nil {
		return err
	}
	now := s.clock.Now()
	esc := st.Escalation(escID)
	if esc == nil || st.Ended() || !now.Before(esc.LapsesAt) {
		return wire.Errorf(codeEscalationClosed, "escalation %s is closed (lapsed after 5 minutes, already decided, or the negotiation ended); nothing changed", escID)
	}
	agent, err := s.store.Agent(ctx, esc.By)
	if err != nil {
		return err
	}
	pub, thumb, err := principal(agent)
	if err != nil {
		return err
	}
	d, err := grants.VerifyDecision(token, pub, thumb, grants.VerifyOptions{Audience: s.cfg.Audience, Subject: agent.ID, Now: now})
	if err != nil {
		return asWire(err)
	}
	if d.EscalationID != escID {
		return wire.Errorf(wire.CodeInvalidArgument, "the decision is for escalation %s, not %s", d.EscalationID, escID)
	}
	var saved string
	if d.Decision == "approve" {
		g, err := d.AsGrant(agent.ID, negID)
		if err != nil {
			var te *grants.TokenError
			if errors.As(err, &te) {
				return asWire(err)
			}
			return wire.Errorf(wire.CodeInvalidArgument, "the decision's grant is not usable here: %v", err)
		}
		rec, err := grants.RecordOf(g, agent.ID, now)
		if err != nil {
			return err
		}
		if err := s.store.SaveGrant(ctx, rec); errors.Is(err, store.ErrConflict) {
			return wire.Errorf(codeDuplicateJTI, "a grant with jti %s was already uploaded", g.JTI)
		} else if err != nil {
			return err
		}
		saved = g.JTI
	}
	_, _, err = s.hub.Update(ctx, negID, func(_ store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
		return st.Resolve(escID, d.Decision, s.clock.Now())
	})
	if err != nil {
		if saved != "" { // the grant must not outlive a refused decision
			_ = s.store.RevokeGrant(ctx, agent.ID, saved, now)
		}
		var we *wire.Error
		if errors.As(err, &we) && we.Code == wire.CodeInvalidState {
			return wire.Errorf(codeEscalationClosed, "%s; nothing changed", we.Message)
		}
		return err
	}
	s.log.Info("escalation decided", "negotiation_id", negID, "escalation_id", escID, "decision", d.Decision)
	return c.JSON(http.StatusOK, map[string]any{"escalation_id": escID, "decision": d.Decision, "negotiation_id": negID})
}
