package hub

import (
	"context"
	"time"

	"github.com/venuehq/venue/grants"
	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/wire"
)

// LoadAuthority reads the grants of the given agents (the two parties of a
// negotiation) before the room's transaction (DELEGATION.md "Which grant
// applies").
func LoadAuthority(ctx context.Context, st store.Store, agents ...string) (*grants.Authority, error) {
	held := make([]grants.Held, 0, len(agents))
	for _, id := range agents {
		a, err := st.Agent(ctx, id)
		if err != nil {
			return nil, err
		}
		recs, err := st.Grants(ctx, id)
		if err != nil {
			return nil, err
		}
		held = append(held, grants.Held{AgentID: id, Thumbprint: a.PrincipalThumbprint, Records: recs})
	}
	return grants.NewAuthority(held...)
}

// checkInput is the grant check's input for terms t of a binding frame of
// frameType under authority ap (DELEGATION.md "The checks").
func checkInput(ap grants.Applying, frameType string, t negotiation.Terms, counterparty string, arena bool, now time.Time) grants.CheckInput {
	in := grants.CheckInput{
		Grant: ap.Grant, GrantErr: ap.Why, FrameType: frameType, AmountCents: t.AmountCents, HasAmount: true,
		Category: t.Category, Sends: t.Sends, Counterparty: counterparty, Arena: arena, Now: now,
	}
	if t.Flight != nil {
		in.FlightStart, in.FlightEnd = t.Flight.Start, t.Flight.End
	}
	in.UsageRightsDays = t.UsageRightsDays
	if t.Exclusivity != nil {
		days := t.Exclusivity.Days
		in.ExclusivityDays = &days
	}
	for _, k := range grants.TermKeys {
		if t.Has(k) {
			in.Present = append(in.Present, k)
		}
	}
	return in
}

// checker is the grant check of one step (DELEGATION.md "The checks"): the
// budget is read under tx's lock, so two negotiations cannot together pass
// a budget. A failed read is kept in *fail and aborts the step.
func checker(au *grants.Authority, tx store.Tx, now time.Time, fail *error) negotiation.Checker {
	return func(b negotiation.Binding) []negotiation.Failure {
		ap := au.Pick(b.Agent, b.NegotiationID, now)
		in := checkInput(ap, b.FrameType, b.Terms, b.Counterparty, b.Arena, now)
		if ap.BudgetJTI != "" { // the arena too: checked against what live deals left, never charged
			spent, err := tx.GrantSpent(ap.BudgetIss, ap.BudgetJTI)
			if err != nil {
				*fail = err
				return []negotiation.Failure{{Check: grants.CheckBudget, Message: "the budget could not be read; try again"}}
			}
			in.BudgetUsedCents = spent
		}
		return grants.Check(in)
	}
}

// TermsFailures is the grant check of terms t as a binding frame of
// frameType that agent would send to counterparty now, outside any room's
// transaction (a sealed brief's quote, PROTOCOL.md "Sealed briefs";
// DELEGATION.md "The checks"): the applying grant is the agent's general
// one (negID ""), and the budget is counted against spent(iss, jti) as
// read, without a lock; the award checks again under the lock
// (StandingCheck).
func TermsFailures(au *grants.Authority, spent func(iss, jti string) int64, agent, frameType string, t negotiation.Terms, counterparty string, arena bool, now time.Time) []grants.Failure {
	ap := au.Pick(agent, "", now)
	in := checkInput(ap, frameType, t, counterparty, arena, now)
	if ap.BudgetJTI != "" && spent != nil {
		in.BudgetUsedCents = spent(ap.BudgetIss, ap.BudgetJTI)
	}
	return grants.Check(in)
}

// StandingCheck is the one answer to "is the standing proposal of st still
// within its proposer's authority at now" (DELEGATION.md "The checks"
// and "Revoking without the agent"): the failures grants.Check finds for the
// proposal as if its proposer made it now, the budget counted against what
// live deals spent under the applying grant (read with tx, which locks it
// until the transaction ends). It returns the proposer's authority too (the
// grant a deal is charged to). No standing proposal, or one whose ttl has
// passed: no failures. Callers pick the failures that matter to them: an
// accept re-checks the budget alone (AcceptBlocked), a principal's
// revocation withdraws on any failure.
func StandingCheck(au *grants.Authority, tx store.Tx, st *negotiation.State, now time.Time) ([]grants.Failure, grants.Applying, error) {
	p := st.Standing
	if p == nil || (!p.ExpiresAt.IsZero() && !now.Before(p.ExpiresAt)) {
		return nil, grants.Applying{}, nil
	}
	ap := au.Pick(p.By, st.ID, now)
	in := checkInput(ap, negotiation.TypeProposeTerms, p.ReadTerms(), st.Other(p.By), st.Arena, now)
	if ap.BudgetJTI != "" {
		spent, err := tx.GrantSpent(ap.BudgetIss, ap.BudgetJTI)
		if err != nil {
			return nil, ap, err
		}
		in.BudgetUsedCents = spent
	}
	return grants.Check(in), ap, nil
}

// AcceptBlocked reports whether fails (of StandingCheck) refuse an accept:
// only the budget is checked again when a proposal is accepted (DELEGATION.md
// "The checks"); the proposer's own revocation or an expiry does not
// take a standing proposal back.
func AcceptBlocked(fails []grants.Failure) bool {
	for _, f := range fails {
		if f.Check == grants.CheckBudget {
			return true
		}
	}
	return false
}

// bindingStep is the room step of a binding frame with the budget accounting
// of a live deal (DELEGATION.md "The checks"): the proposer's grant must still
// cover the deal when it is accepted (another negotiation may have spent its
// budget meanwhile), and the deal is charged to both parties' grants.
func bindingStep(au *grants.Authority, from string, f negotiation.Frame, now time.Time) store.Step {
	return func(tx store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
		var fail error
		var proposer grants.Applying
		if f.Type == negotiation.TypeAccept && st.Standing != nil && st.Standing.By != from {
			fails, ap, err := StandingCheck(au, tx, st, now)
			if err != nil {
				return negotiation.Outcome{}, err
			}
			if AcceptBlocked(fails) {
				return negotiation.Outcome{}, wire.Errorf(wire.CodeInvalidState,
					"proposal %s can no longer be accepted: it is no longer within its proposer's authority", st.Standing.ID)
			}
			proposer = ap
		}
		out, err := st.Apply(from, f, now, checker(au, tx, now, &fail))
		if fail != nil {
			return negotiation.Outcome{}, fail
		}
		if err == nil && st.Status == negotiation.StatusDeal && !st.Arena {
			for _, ap := range []grants.Applying{au.Pick(from, st.ID, now), proposer} {
				if ap.BudgetJTI != "" {
					if err := tx.AddGrantSpent(ap.BudgetIss, ap.BudgetJTI, st.DealAmountCents); err != nil {
						return negotiation.Outcome{}, err
					}
				}
			}
		}
		return out, err
	}
}
