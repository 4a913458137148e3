package negotiation

import (
	"time"

	"github.com/venuehq/venue/wire"
)

// ReasonGrantRevoked is the reason of a proposal_withdrawn the venue sends
// when a principal's revocation left the proposer without the authority for
// its standing proposal (DELEGATION.md "Revoking without the agent").
const ReasonGrantRevoked = "grant_revoked"

// WithdrawStanding takes the standing proposal proposalID off the table on
// the venue's own account (not a party's frame): the transcript gets
//
//	{"type":"proposal_withdrawn","proposal_id","by","offer_hash","reason"}
//
// sent to both parties and every observer, after which the proposal can no
// longer be accepted. The turn is not touched. Clocks due by now settle
// first. Errors: CodeInvalidState when the negotiation is not live or that
// proposal no longer stands (accepted, replaced, withdrawn or expired:
// nothing changes then beyond the settled clocks).
func (s *State) WithdrawStanding(proposalID, reason string, now time.Time) (Outcome, error) {
	var out Outcome
	s.advance(now, &out)
	if s.Status != StatusLive {
		return out, wire.Errorf(wire.CodeInvalidState, "the negotiation is %s", s.statusText())
	}
	p := s.Standing
	if p == nil || p.ID != proposalID {
		return out, wire.Errorf(wire.CodeInvalidState, "proposal %s does not stand", proposalID)
	}
	s.Standing = nil
	s.appendEntry(map[string]any{"type": TypeProposalWithdrawn, "proposal_id": p.ID, "by": p.By,
		"offer_hash": p.OfferHash, "reason": reason}, now, &out)
	return out, nil
}
