package delegation

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/venuehq/venue/grants"
	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/wire"
)

// EscalationNegotiation returns the negotiation id of an escalation id
// ("<negotiation_id>.e<seq>", DELEGATION.md "Escalation end to end"): the
// part before the last ".e", which must be followed by a decimal seq; false
// for anything else.
func EscalationNegotiation(id string) (string, bool) {
	i := strings.LastIndex(id, ".e")
	if i <= 0 {
		return "", false
	}
	seq := id[i+2:]
	if seq == "" || strings.Trim(seq, "0123456789") != "" {
		return "", false
	}
	return id[:i], true
}

// Decision is a principal's answer to an escalation as the venue took it.
type Decision struct {
	EscalationID  string
	NegotiationID string
	Decision      string // "approve" or "deny"
}

// Decide takes the principal's answer to escalation escID, a JWT signed by
// the principal key of the agent that escalated (POST
// /v1/escalations/{id}/decision, DELEGATION.md "The checks"). On approve
// its grant, scoped to the negotiation, is stored and applies at once; the
// agent gets escalation_resolved and its turn clock resumes with the time it
// had left. A grant is never left behind by a decision the negotiation
// refused. Errors: not_found, escalation_closed (lapsed, decided, or the
// negotiation ended), no_principal_key, token errors, invalid_argument (the
// decision names another escalation, or its grant is not usable),
// duplicate_jti.
func (s *Service) Decide(ctx context.Context, escID, token string, now time.Time) (Decision, error) {
	negID, esc, err := s.openEscalation(ctx, escID, now)
	if err != nil {
		return Decision{}, err
	}
	agent, err := s.Agents.Agent(ctx, esc.By)
	if err != nil {
		return Decision{}, err
	}
	pub, thumb, err := Principal(agent)
	if err != nil {
		return Decision{}, err
	}
	d, err := grants.VerifyDecision(token, pub, thumb, s.opts(agent.ID, now))
	if err != nil {
		return Decision{}, err
	}
	if d.EscalationID != escID {
		return Decision{}, wire.Errorf(wire.CodeInvalidArgument, "the decision is for escalation %s, not %s", d.EscalationID, escID)
	}
	saved, err := s.saveApproval(ctx, d, agent.ID, negID, now)
	if err != nil {
		return Decision{}, err
	}
	_, _, err = s.Rooms.Update(ctx, negID, func(_ store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
		return st.Resolve(escID, d.Decision, now)
	})
	if err != nil {
		if saved != "" { // the grant must not outlive a refused decision
			_ = s.Store.RevokeGrant(ctx, agent.ID, saved, now)
		}
		var we *wire.Error
		if errors.As(err, &we) && we.Code == wire.CodeInvalidState {
			return Decision{}, wire.Errorf(wire.CodeEscalationClosed, "%s; nothing changed", we.Message)
		}
		return Decision{}, err
	}
	s.log().Info("escalation decided", "negotiation_id", negID, "escalation_id", escID, "decision", d.Decision)
	return Decision{EscalationID: escID, NegotiationID: negID, Decision: d.Decision}, nil
}

// openEscalation finds escalation escID still open at now.
func (s *Service) openEscalation(ctx context.Context, escID string, now time.Time) (string, *negotiation.Escalation, error) {
	negID, ok := EscalationNegotiation(escID)
	if !ok {
		return "", nil, wire.Errorf(wire.CodeNotFound, "no escalation %s", escID)
	}
	st, err := s.Store.Negotiation(ctx, negID)
	if errors.Is(err, store.ErrNotFound) {
		return "", nil, wire.Errorf(wire.CodeNotFound, "no escalation %s", escID)
	} else if err != nil {
		return "", nil, err
	}
	esc := st.Escalation(escID)
	if esc == nil || st.Ended() || !now.Before(esc.LapsesAt) {
		return "", nil, wire.Errorf(wire.CodeEscalationClosed, "escalation %s is closed (lapsed after 5 minutes, already decided, or the negotiation ended); nothing changed", escID)
	}
	return negID, esc, nil
}

// saveApproval stores the grant of an approving decision, scoped to negID,
// and returns its jti ("" for a denial).
func (s *Service) saveApproval(ctx context.Context, d *grants.Decision, agentID, negID string, now time.Time) (string, error) {
	if d.Decision != "approve" {
		return "", nil
	}
	g, err := d.AsGrant(agentID, negID)
	if err != nil {
		var te *grants.TokenError
		if errors.As(err, &te) {
			return "", err
		}
		return "", wire.Errorf(wire.CodeInvalidArgument, "the decision's grant is not usable here: %v", err)
	}
	rec, err := grants.RecordOf(g, agentID, now)
	if err != nil {
		return "", err
	}
	if err := s.Store.SaveGrant(ctx, rec); errors.Is(err, store.ErrConflict) {
		return "", wire.Errorf(wire.CodeDuplicateJTI, "a grant with jti %s was already uploaded", g.JTI)
	} else if err != nil {
		return "", err
	}
	return g.JTI, nil
}
