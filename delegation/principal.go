package delegation

import (
	"context"
	"errors"
	"time"

	"github.com/venuehq/venue/grants"
	"github.com/venuehq/venue/hub"
	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/wire"
)

// Revocation is what a principal's revocation did (POST /v1/revocations,
// DELEGATION.md "Revoking without the agent").
type Revocation struct {
	Kind    string // grants.RevokeGrant or grants.RevokeAPIKey
	AgentID string
	// Kind "grant": the grant's jti, whether the agent had uploaded it, and
	// the standing proposals withdrawn because of it (never nil).
	JTI       string
	Uploaded  bool
	Withdrawn []string
	// Kind "api_key": whether a key was replaced (false when the token's
	// iat predates the current key).
	Replaced bool
}

// PrincipalRevoke verifies a revocation JWT signed by the principal of the agent it
// names (its sub) and carries it out: a grant is marked revoked (stored
// revoked if not uploaded yet) and the agent's standing proposals it no
// longer covers are withdrawn; an api_key is replaced (with new_key_sha256)
// or disabled, and OnKeyReplaced closes its sockets. Errors: token errors,
// not_found (no such agent), no_principal_key, conflict (new_key_sha256 is
// another agent's key).
func (s *Service) PrincipalRevoke(ctx context.Context, token string, now time.Time) (Revocation, error) {
	sub, err := grants.PeekSubject(token)
	if err != nil {
		return Revocation{}, err
	}
	agent, err := s.Agents.Agent(ctx, sub)
	if err != nil {
		return Revocation{}, err
	}
	pub, thumb, err := Principal(agent)
	if err != nil {
		return Revocation{}, err
	}
	r, err := grants.VerifyRevocation(token, pub, thumb, s.opts(agent.ID, now))
	if err != nil {
		return Revocation{}, err
	}
	if r.Kind == grants.RevokeGrant {
		uploaded, err := s.Store.RevokeIssuerGrant(ctx, agent.ID, r.Issuer, r.GrantJTI, now)
		if err != nil {
			return Revocation{}, err
		}
		withdrawn := s.WithdrawUnauthorized(ctx, agent.ID, now)
		s.log().Info("grant revoked by the principal", "agent_id", agent.ID, "jti", r.GrantJTI, "withdrawn", withdrawn)
		return Revocation{Kind: r.Kind, AgentID: agent.ID, JTI: r.GrantJTI, Uploaded: uploaded, Withdrawn: withdrawn}, nil
	}
	replaced, err := s.Store.ReplaceKey(ctx, agent.ID, r.NewKeyHash, r.IssuedAt, now)
	if errors.Is(err, store.ErrConflict) {
		return Revocation{}, wire.Errorf(wire.CodeConflict, "new_key_sha256 is another agent's key; draw a fresh one")
	} else if err != nil {
		return Revocation{}, err
	}
	if replaced && s.OnKeyReplaced != nil {
		s.OnKeyReplaced(ctx, agent.ID, now, "the api_key was revoked by the principal")
	}
	s.log().Info("api key revoked by the principal", "agent_id", agent.ID, "replaced", replaced)
	return Revocation{Kind: r.Kind, AgentID: agent.ID, Replaced: replaced}, nil
}

// errCovered aborts a withdrawal step whose proposal is still covered.
var errCovered = errors.New("delegation: the standing proposal is still covered")

// WithdrawUnauthorized takes off the table every standing proposal of
// agentID (live negotiations, not the arena) that hub.StandingCheck finds
// outside its authority at now: both sides and observers get
// proposal_withdrawn, reason grant_revoked (PROTOCOL.md "What everyone else
// gets"). It returns the ids withdrawn, never nil; failures are logged (the
// proposal then falls to the budget re-check an accept makes).
func (s *Service) WithdrawUnauthorized(ctx context.Context, agentID string, now time.Time) []string {
	withdrawn := []string{}
	live, err := s.Store.LiveNegotiations(ctx, agentID)
	if err != nil {
		s.log().Error("withdraw after revocation: live negotiations", "agent_id", agentID, "err", err)
		return withdrawn
	}
	var au *grants.Authority
	for _, st := range live {
		p := st.Standing
		if p == nil || p.By != agentID || st.Arena {
			continue
		}
		if au == nil {
			if au, err = hub.LoadAuthority(ctx, s.Store, agentID); err != nil {
				s.log().Error("withdraw after revocation: authority", "agent_id", agentID, "err", err)
				return withdrawn
			}
		}
		_, _, err = s.Rooms.Update(ctx, st.ID, func(tx store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
			if st.Standing == nil || st.Standing.ID != p.ID {
				return negotiation.Outcome{}, errCovered // gone meanwhile: nothing to take back
			}
			fails, _, err := hub.StandingCheck(au, tx, st, now)
			if err != nil {
				return negotiation.Outcome{}, err
			}
			if len(fails) == 0 {
				return negotiation.Outcome{}, errCovered
			}
			return st.WithdrawStanding(p.ID, negotiation.ReasonGrantRevoked, now)
		})
		switch {
		case errors.Is(err, errCovered):
		case err != nil:
			s.log().Warn("withdraw after revocation", "negotiation_id", st.ID, "proposal_id", p.ID, "err", err)
		default:
			withdrawn = append(withdrawn, p.ID)
		}
	}
	return withdrawn
}
