package venue

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
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
	token, _, werr := getString(m, "token")
	if werr != nil {
		return "", werr
	}
	if token == "" {
		return "", wire.Errorf(wire.CodeInvalidArgument, "token is required: %s JWT signed by the principal", what)
	}
	return token, nil
}

// handleUploadGrant is POST /v1/grants {"token"} (VENUE.md §6).
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
	rec, err := grantRecord(g, a.ID, now)
	if err != nil {
		return err
	}
	if err := s.store.SaveGrant(c.Request().Context(), rec); errors.Is(err, store.ErrConflict) {
		return wire.Errorf(codeDuplicateJTI, "a grant with jti %s was already uploaded; every grant needs a fresh jti", g.JTI)
	} else if err != nil {
		return err
	}
	s.log.Info("grant uploaded", "agent_id", a.ID, "jti", g.JTI, "exp", wire.Time(g.ExpiresAt))
	return c.JSON(http.StatusCreated, grantView(rec, now, thumb))
}

func grantRecord(g *grants.Grant, agentID string, now time.Time) (store.GrantRecord, error) {
	scope, err := json.Marshal(&g.Scope)
	if err != nil {
		return store.GrantRecord{}, err
	}
	return store.GrantRecord{
		JTI: g.JTI, AgentID: agentID, Token: g.Raw, Issuer: g.Issuer, IssuedAt: g.IssuedAt,
		NotBefore: g.NotBefore, ExpiresAt: g.ExpiresAt, NegotiationID: g.Scope.NegotiationID,
		Scope: scope, CreatedAt: now,
	}, nil
}

// grantView is a grant as GET /v1/grants shows it, with its status now.
func grantView(r store.GrantRecord, now time.Time, thumb string) map[string]any {
	status := "active"
	switch {
	case !r.RevokedAt.IsZero():
		status = "revoked"
	case r.Issuer != thumb:
		status = "key_rotated"
	case !now.Before(r.ExpiresAt):
		status = "expired"
	case !r.NotBefore.IsZero() && now.Before(r.NotBefore):
		status = "not_yet_valid"
	}
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

// authority is what the grant check of one binding frame needs, read before
// the room's transaction: each party's grants under its current principal
// key (a rotation leaves the old key's grants behind), and the newest grant
// record of each, to say why none applies.
type authority struct {
	grants map[string][]*grants.Grant   // usable candidates, by agent id
	newest map[string]store.GrantRecord // the last uploaded grant, by agent id
	thumb  map[string]string            // current principal thumbprint, by agent id
}

// loadAuthority reads both parties' grants.
func (s *Server) loadAuthority(ctx context.Context, parties ...string) (*authority, error) {
	au := &authority{grants: map[string][]*grants.Grant{}, newest: map[string]store.GrantRecord{}, thumb: map[string]string{}}
	for _, id := range parties {
		a, err := s.store.Agent(ctx, id)
		if err != nil {
			return nil, err
		}
		au.thumb[id] = a.PrincipalThumbprint
		recs, err := s.store.Grants(ctx, id)
		if err != nil {
			return nil, err
		}
		for _, r := range recs {
			if r.NegotiationID == "" {
				au.newest[id] = r
			}
			if !r.RevokedAt.IsZero() || r.Issuer != a.PrincipalThumbprint || a.PrincipalThumbprint == "" {
				continue
			}
			g := &grants.Grant{JTI: r.JTI, Issuer: r.Issuer, Subject: id, IssuedAt: r.IssuedAt,
				NotBefore: r.NotBefore, ExpiresAt: r.ExpiresAt, Raw: r.Token}
			if err := json.Unmarshal(r.Scope, &g.Scope); err != nil {
				return nil, fmt.Errorf("stored grant %s: %w", r.JTI, err)
			}
			au.grants[id] = append(au.grants[id], g)
		}
	}
	return au, nil
}

// applying is the authority an agent binds under in one negotiation: the
// grant whose limits are checked and the grant whose budget is charged.
type applying struct {
	grant     *grants.Grant // nil: none applies (why says why, if known)
	budgetJTI string        // the grant whose budget counts; "" none
	why       error         // a *grants.TokenError or grants.ErrRevoked
}

// pick is the authority of agent in negotiation negID at now (VENUE.md §6):
// a grant naming the negotiation (an approved escalation) takes precedence
// over the newest general one; when it sets no budget of its own, the
// general grant's budget still applies and is charged, so an escalation
// cannot be used to step around a budget.
func (au *authority) pick(agent, negID string, now time.Time) applying {
	g := grants.Select(au.grants[agent], negID, now, nil)
	if g == nil {
		return applying{why: au.whyNone(agent, now)}
	}
	ap := applying{grant: g}
	if g.Scope.BudgetCents != nil {
		ap.budgetJTI = g.JTI
		return ap
	}
	if g.Scope.NegotiationID != "" {
		if general := grants.Select(au.grants[agent], "", now, nil); general != nil && general.Scope.BudgetCents != nil {
			merged := *g
			merged.Scope.BudgetCents = general.Scope.BudgetCents
			ap.grant, ap.budgetJTI = &merged, general.JTI
		}
	}
	return ap
}

// whyNone explains, from the newest general grant uploaded, why no grant
// applies; nil when the agent never had one (the check then says "none").
func (au *authority) whyNone(agent string, now time.Time) error {
	r, ok := au.newest[agent]
	switch {
	case !ok:
		return nil
	case !r.RevokedAt.IsZero():
		return grants.ErrRevoked
	case r.Issuer != au.thumb[agent]:
		return &grants.TokenError{Code: grants.CodeWrongIssuer, Message: "the grant was signed by a principal key that has since been replaced"}
	case !now.Before(r.ExpiresAt):
		return &grants.TokenError{Code: grants.CodeExpired, Message: "the grant expired at " + wire.Time(r.ExpiresAt)}
	case !r.NotBefore.IsZero() && now.Before(r.NotBefore):
		return &grants.TokenError{Code: grants.CodeNotYetValid, Message: "the grant is not valid before " + wire.Time(r.NotBefore)}
	}
	return nil
}

// checker is the grant check of VENUE.md §6 for one step: budget is read
// under tx's lock, so two negotiations cannot together pass a budget.
func (au *authority) checker(tx store.Tx, now time.Time, fail *error) negotiation.Checker {
	return func(b negotiation.Binding) []negotiation.Failure {
		ap := au.pick(b.Agent, b.NegotiationID, now)
		in := grants.CheckInput{
			Grant: ap.grant, GrantErr: ap.why, FrameType: b.FrameType, AmountCents: b.Terms.AmountCents, HasAmount: true,
			Category: b.Terms.Category, Sends: b.Terms.Sends, Counterparty: b.Counterparty,
			Arena: b.Arena, Now: now,
		}
		if ap.budgetJTI != "" { // the arena too: checked against what live deals left, never charged
			spent, err := tx.GrantSpent(ap.budgetJTI)
			if err != nil {
				*fail = err
				return []negotiation.Failure{{Check: grants.CheckBudget, Message: "the budget could not be read; try again"}}
			}
			in.BudgetUsedCents = spent
		}
		return grants.Check(in)
	}
}

// bindingStep wraps a room step of a binding frame with the budget
// accounting of a live deal: the proposer's grant must still cover the deal
// when it is accepted (another negotiation may have spent its budget
// meanwhile), and the deal is added to both parties' grants.
func (s *Server) bindingStep(au *authority, from string, f negotiation.Frame, now time.Time) store.Step {
	return func(tx store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
		var fail error
		var proposer applying
		if f.Type == negotiation.TypeAccept && st.Standing != nil && st.Standing.By != from &&
			(st.Standing.ExpiresAt.IsZero() || now.Before(st.Standing.ExpiresAt)) {
			proposer = au.pick(st.Standing.By, st.ID, now)
			if proposer.budgetJTI != "" {
				spent, err := tx.GrantSpent(proposer.budgetJTI)
				if err != nil {
					return negotiation.Outcome{}, err
				}
				if spent+st.Standing.AmountCents > *proposer.grant.Scope.BudgetCents {
					return negotiation.Outcome{}, wire.Errorf(wire.CodeInvalidState,
						"proposal %s can no longer be accepted: it is no longer within its proposer's authority", st.Standing.ID)
				}
			}
		}
		out, err := st.Apply(from, f, now, au.checker(tx, now, &fail))
		if fail != nil {
			return negotiation.Outcome{}, fail
		}
		if err == nil && st.Status == negotiation.StatusDeal && !st.Arena {
			for _, ap := range []applying{au.pick(from, st.ID, now), proposer} {
				if ap.budgetJTI != "" {
					if err := tx.AddGrantSpent(ap.budgetJTI, st.DealAmountCents); err != nil {
						return negotiation.Outcome{}, err
					}
				}
			}
		}
		return out, err
	}
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
// key (VENUE.md §6). On approve its grant, scoped to the negotiation, is
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
		rec, err := grantRecord(g, agent.ID, now)
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
	_, _, err = s.engine.Update(ctx, negID, func(_ store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
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
