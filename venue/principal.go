package venue

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/venuehq/venue/directory"
	"github.com/venuehq/venue/grants"
	"github.com/venuehq/venue/hub"
	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/wire"
)

// socketKey is the api_key of a socket upgrade: Authorization: Bearer (kept
// out of proxy logs), else ?token= (browsers cannot set the header)
// (PROTOCOL.md "Registration and auth").
func socketKey(c echo.Context) string {
	// The scheme is case-insensitive (RFC 9110 section 11.1), as on REST.
	if scheme, key, ok := strings.Cut(c.Request().Header.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") {
		return strings.TrimSpace(key)
	}
	return c.QueryParam("token")
}

// handleRevocation is POST /v1/revocations {"token"}: the principal's own
// channel, with no API key (DELEGATION.md "Revoking without the agent"). The
// token's sub names the agent whose principal key must verify it.
func (s *Server) handleRevocation(c echo.Context) error {
	ctx := c.Request().Context()
	token, err := tokenBody(c, "a revocation")
	if err != nil {
		return err
	}
	sub, err := grants.PeekSubject(token)
	if err != nil {
		return asWire(err)
	}
	agent, err := s.dir.Agent(ctx, sub)
	if err != nil {
		return err
	}
	pub, thumb, err := principal(agent)
	if err != nil {
		return err
	}
	now := s.clock.Now()
	r, err := grants.VerifyRevocation(token, pub, thumb, grants.VerifyOptions{Audience: s.cfg.Audience, Subject: agent.ID, Now: now})
	if err != nil {
		return asWire(err)
	}
	switch r.Kind {
	case grants.RevokeGrant:
		uploaded, err := s.store.RevokeIssuerGrant(ctx, agent.ID, r.Issuer, r.GrantJTI, now)
		if err != nil {
			return err
		}
		withdrawn := s.withdrawUnauthorized(ctx, agent.ID)
		s.log.Info("grant revoked by the principal", "agent_id", agent.ID, "jti", r.GrantJTI, "withdrawn", withdrawn)
		return c.JSON(http.StatusOK, map[string]any{"revoked": grants.RevokeGrant, "agent_id": agent.ID,
			"jti": r.GrantJTI, "uploaded": uploaded, "withdrawn": withdrawn})
	default: // grants.RevokeAPIKey
		replaced, err := s.store.ReplaceKey(ctx, agent.ID, r.NewKeyHash, r.IssuedAt, now)
		if errors.Is(err, store.ErrConflict) {
			return wire.Errorf(wire.CodeConflict, "new_key_sha256 is another agent's key; draw a fresh one")
		} else if err != nil {
			return err
		}
		if replaced {
			s.announceKeyReplaced(ctx, agent.ID, now, "the api_key was revoked by the principal")
		}
		s.log.Info("api key revoked by the principal", "agent_id", agent.ID, "replaced", replaced)
		return c.JSON(http.StatusOK, map[string]any{"revoked": grants.RevokeAPIKey, "agent_id": agent.ID, "replaced": replaced})
	}
}

// handleRotateKey is POST /v1/agents/me/api-key: a fresh api_key, the old
// one dead at once (its sockets are closed). 201 {"agent_id","api_key"}.
func (s *Server) handleRotateKey(c echo.Context) error {
	a := agentOf(c)
	key := directory.NewAPIKey()
	now := s.clock.Now()
	if _, err := s.store.ReplaceKey(c.Request().Context(), a.ID, directory.HashKey(key), time.Time{}, now); err != nil {
		return err
	}
	s.announceKeyReplaced(c.Request().Context(), a.ID, now, "the api_key was replaced")
	s.log.Info("api key rotated", "agent_id", a.ID)
	return c.JSON(http.StatusCreated, map[string]string{"agent_id": a.ID, "api_key": key})
}

// closeAgentSockets closes (1008) this node's sockets of agentID that were
// opened with a key issued before `before` (other nodes hear of it on
// keysTopic, see announceKeyReplaced).
func (s *Server) closeAgentSockets(agentID string, before time.Time, reason string) {
	s.connsMu.Lock()
	defer s.connsMu.Unlock()
	for c := range s.conns {
		if c.agentID == agentID && c.keyAt.Before(before) {
			c.closeWith(ClosePolicy, reason)
		}
	}
}

// withdrawUnauthorized takes off the table every standing proposal of
// agentID that its authority no longer covers (after a principal's
// revocation): both sides and observers get proposal_withdrawn, reason
// grant_revoked (PROTOCOL.md "What everyone else gets"). It returns the ids
// withdrawn; failures are logged (the proposal then falls to the budget
// re-check an accept makes).
func (s *Server) withdrawUnauthorized(ctx context.Context, agentID string) []string {
	withdrawn := []string{}
	live, err := s.store.LiveNegotiations(ctx, agentID)
	if err != nil {
		s.log.Error("withdraw after revocation: live negotiations", "agent_id", agentID, "err", err)
		return withdrawn
	}
	now := s.clock.Now()
	for _, st := range live {
		p := st.Standing
		if p == nil || p.By != agentID || st.Arena {
			continue
		}
		au, err := hub.LoadAuthority(ctx, s.store, agentID)
		if err != nil {
			s.log.Error("withdraw after revocation: authority", "agent_id", agentID, "err", err)
			return withdrawn
		}
		ap := au.Pick(agentID, st.ID, now)
		other := st.Brand.AgentID
		if other == agentID {
			other = st.Bouncer.AgentID
		}
		fails := grants.Check(grants.CheckInput{
			Grant: ap.Grant, GrantErr: ap.Why, FrameType: negotiation.TypeProposeTerms,
			AmountCents: p.AmountCents, HasAmount: true, Category: p.Category, Sends: p.Sends,
			Counterparty: other, Arena: st.Arena, Now: now,
		})
		if len(fails) == 0 {
			continue
		}
		_, _, err = s.hub.Update(ctx, st.ID, func(_ store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
			return st.WithdrawStanding(p.ID, negotiation.ReasonGrantRevoked, s.clock.Now())
		})
		if err != nil {
			s.log.Warn("withdraw after revocation", "negotiation_id", st.ID, "proposal_id", p.ID, "err", err)
			continue
		}
		withdrawn = append(withdrawn, p.ID)
	}
	return withdrawn
}

// storedGrant is rec as the store keeps it after SaveGrant (a principal may
// have revoked it before the upload); rec itself if it cannot be read back.
func (s *Server) storedGrant(ctx context.Context, rec store.GrantRecord) store.GrantRecord {
	recs, err := s.store.Grants(ctx, rec.AgentID)
	if err != nil {
		return rec
	}
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].Issuer == rec.Issuer && recs[i].JTI == rec.JTI {
			return recs[i]
		}
	}
	return rec
}

// recheckKey closes cn (1008) if its agent's key was replaced after cn
// authenticated: a revocation that ran between the check and s.track saw
// no socket to close. Call it right after s.track.
func (s *Server) recheckKey(ctx context.Context, cn *conn) {
	if cn.agentID == "" {
		return
	}
	a, err := s.store.Agent(ctx, cn.agentID)
	if err == nil && !a.KeyIssuedAt.Equal(cn.keyAt) {
		cn.closeWith(ClosePolicy, "the api_key was replaced")
	}
}

// keysTopic carries key replacements to every node, so each closes the
// sockets it holds for the old key (PROTOCOL.md "Registration and auth").
const keysTopic = "keys"

// keyReplaced is a keysTopic message.
type keyReplaced struct {
	AgentID string    `json:"agent_id"`
	Before  time.Time `json:"before"`
}

// announceKeyReplaced closes this node's sockets of agentID opened with a
// key issued before `before`, and tells the other nodes to do the same (a
// lost message leaves their sockets open until they reconnect; the old key
// opens nothing new).
func (s *Server) announceKeyReplaced(ctx context.Context, agentID string, before time.Time, reason string) {
	s.closeAgentSockets(agentID, before, reason)
	b, _ := json.Marshal(keyReplaced{AgentID: agentID, Before: before})
	if err := s.bus.Publish(ctx, keysTopic, b); err != nil {
		s.log.Warn("announce a replaced key", "agent_id", agentID, "err", err)
	}
}

// watchKeys subscribes to keysTopic; the returned function unsubscribes.
func (s *Server) watchKeys() func() {
	return s.bus.Subscribe(keysTopic, func(data []byte) {
		var m keyReplaced
		if len(data) == 0 || json.Unmarshal(data, &m) != nil || m.AgentID == "" {
			return
		}
		s.closeAgentSockets(m.AgentID, m.Before, "the api_key was replaced")
	})
}
