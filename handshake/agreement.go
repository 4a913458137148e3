package handshake

import (
	"context"
	"time"
)

// Agreements lists agentID's agreements (AGREEMENTS, GET /v1/agreements),
// oldest first: the active ones, or with all every one (revoked and
// expired too).
func (s *Service) Agreements(ctx context.Context, agentID string, all bool, now time.Time) ([]Agreement, error) {
	q := AgreementQuery{Agent: agentID, Limit: 1000}
	if !all {
		q.Statuses = []string{AgreementActive}
	}
	var out []Agreement
	err := s.do(ctx, now, nil, func(tx Tx, _ *effects) error {
		var err error
		out, _, err = tx.Agreements(q)
		return err
	})
	return out, err
}

// Revoke ends agreement id for both parties at once (REVOKE, POST
// /v1/agreements/{id}/revoke). Either party revokes, or an owner of
// either. Errors: not_found (not a party), not_active (revoked or
// expired already).
func (s *Service) Revoke(ctx context.Context, actor Actor, id string, now time.Time) (Agreement, error) {
	var out Agreement
	err := s.do(ctx, now, []string{"agreement:" + id}, func(tx Tx, fx *effects) error {
		ag, err := tx.Agreement(id)
		if err != nil {
			return notFound(err, "no agreement %s of yours", id)
		}
		var by string
		for _, party := range []string{ag.Requester, ag.Target} {
			if ok, err := s.actsFor(ctx, tx, actor, party); err != nil {
				return err
			} else if ok {
				by = party
				break
			}
		}
		if by == "" {
			return errorf(CodeNotFound, "no agreement %s of yours", id)
		}
		if ag.Status != AgreementActive {
			return errorf(CodeNotActive, "agreement %s is %s", id, ag.Status)
		}
		ag.Status, ag.EndedAt, ag.EndedBy = AgreementRevoked, now, actor.String()
		if err := tx.UpdateAgreement(ag); err != nil {
			return err
		}
		out = ag
		other := ag.Other(by)
		fx.push(other, map[string]any{"type": FrameAgreementUpdated, "agreement": s.AgreementView(ctx, ag, other)})
		if err := fx.event(tx, other, NotifyAgreementUpdate, now); err != nil {
			return err
		}
		return audit(tx, now, actor.String(), "revoke", ag.ID, "")
	})
	return out, err
}

// authorizing returns the active agreement between from and to that
// grants from the scope sc (message in either direction; task and
// resource scopes only to the requester). Errors: not_authorized.
func authorizing(tx Tx, from, to, sc string) (Agreement, error) {
	active, err := activeBetween(tx, from, to)
	if err != nil {
		return Agreement{}, err
	}
	for _, a := range active {
		if a.hasScope(sc) && (sc == ScopeMessage || a.Requester == from) {
			return a, nil
		}
	}
	return Agreement{}, errorf(CodeNotAuthorized, "no active agreement with %s grants %s: use CONTACT first", to, sc)
}
