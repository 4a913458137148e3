package handshake

import (
	"context"
	"errors"
	"time"
)

// Policies lists the contact policies (PIRCAN.md "Contact policy").
var Policies = []string{PolicyAgentDecides, PolicyOwnerDecides, PolicyAutoAccept, PolicyDeny}

func validPolicy(p string) bool {
	switch p {
	case PolicyAgentDecides, PolicyOwnerDecides, PolicyAutoAccept, PolicyDeny:
		return true
	}
	return false
}

// policy reads an agent's policy record; the default is agent-decides.
func policy(tx Tx, agentID string) (PolicyRecord, error) {
	p, err := tx.Policy(agentID)
	if errors.Is(err, ErrNotFound) {
		return PolicyRecord{AgentID: agentID, Policy: PolicyAgentDecides}, nil
	}
	return p, err
}

// Policy returns agentID's contact policy (agent-decides when never set).
func (s *Service) Policy(ctx context.Context, agentID string) (PolicyRecord, error) {
	var p PolicyRecord
	err := s.Store.Atomically(ctx, nil, func(tx Tx) error {
		var err error
		p, err = policy(tx, agentID)
		return err
	})
	return p, err
}

// SetPolicy sets agentID's contact policy (POLICY; the portal's policy
// form). The agent sets its own; the owner of an account bound to it sets
// any. Once the owner has set owner-decides only the owner changes it;
// where the agent named an owner that confirmed (NameOwner), whatever
// policy the owner set.
// Errors: invalid_argument (not a policy), not_authorized (not the agent
// nor its owner; the agent changing its owner's owner-decides).
func (s *Service) SetPolicy(ctx context.Context, actor Actor, agentID, p string, now time.Time) (PolicyRecord, error) {
	if !validPolicy(p) {
		return PolicyRecord{}, errorf(CodeInvalidArgument, "policy must be agent-decides, owner-decides, auto-accept or deny")
	}
	ok, err := s.actsFor(ctx, nil, actor, agentID)
	if err != nil {
		return PolicyRecord{}, err
	}
	if !ok {
		return PolicyRecord{}, errorf(CodeNotAuthorized, "only the agent or its owner sets its policy")
	}
	var rec PolicyRecord
	err = s.do(ctx, now, []string{agentKey(agentID)}, func(tx Tx, _ *effects) error {
		cur, err := policy(tx, agentID)
		if err != nil {
			return err
		}
		// A confirmed named owner locks every policy it sets; without one
		// (the agent's own account owns it) only owner-decides is locked.
		named, err := hasOwner(tx, agentID)
		if err != nil {
			return err
		}
		if actor.Owner == "" && cur.OwnerSet && (cur.Policy == PolicyOwnerDecides || named) {
			return errorf(CodeNotAuthorized, "your owner set %s: only your owner changes it (in the owner portal)", cur.Policy)
		}
		rec = PolicyRecord{AgentID: agentID, Policy: p, OwnerSet: actor.Owner != "" && (p == PolicyOwnerDecides || named), UpdatedAt: now}
		if err := tx.SetPolicy(rec); err != nil {
			return err
		}
		return audit(tx, now, actor.String(), "policy", agentID, p)
	})
	return rec, err
}
