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

// checker is the grant check of one step (DELEGATION.md "The checks"): the
// budget is read under tx's lock, so two negotiations cannot together pass
// a budget. A failed read is kept in *fail and aborts the step.
func checker(au *grants.Authority, tx store.Tx, now time.Time, fail *error) negotiation.Checker {
	return func(b negotiation.Binding) []negotiation.Failure {
		ap := au.Pick(b.Agent, b.NegotiationID, now)
		in := grants.CheckInput{
			Grant: ap.Grant, GrantErr: ap.Why, FrameType: b.FrameType, AmountCents: b.Terms.AmountCents, HasAmount: true,
			Category: b.Terms.Category, Sends: b.Terms.Sends, Counterparty: b.Counterparty,
			Arena: b.Arena, Now: now,
		}
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

// bindingStep is the room step of a binding frame with the budget accounting
// of a live deal (DELEGATION.md "The checks"): the proposer's grant must still
// cover the deal when it is accepted (another negotiation may have spent its
// budget meanwhile), and the deal is charged to both parties' grants.
func bindingStep(au *grants.Authority, from string, f negotiation.Frame, now time.Time) store.Step {
	return func(tx store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
		var fail error
		var proposer grants.Applying
		if f.Type == negotiation.TypeAccept && st.Standing != nil && st.Standing.By != from &&
			(st.Standing.ExpiresAt.IsZero() || now.Before(st.Standing.ExpiresAt)) {
			proposer = au.Pick(st.Standing.By, st.ID, now)
			if proposer.BudgetJTI != "" {
				spent, err := tx.GrantSpent(proposer.BudgetIss, proposer.BudgetJTI)
				if err != nil {
					return negotiation.Outcome{}, err
				}
				if !proposer.Covers(spent, st.Standing.AmountCents) {
					return negotiation.Outcome{}, wire.Errorf(wire.CodeInvalidState,
						"proposal %s can no longer be accepted: it is no longer within its proposer's authority", st.Standing.ID)
				}
			}
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
