package negotiation

import (
	"testing"

	"github.com/venuehq/venue/wire"
)

// TestWithdrawStanding: the venue takes a standing proposal off the table
// (a principal revoked the grant behind it); the other side can no longer
// accept it, and a stale or wrong id changes nothing.
func TestWithdrawStanding(t *testing.T) {
	t.Parallel()
	r := newRoom(t, false)
	r.ok(brand, propose(termsA, 0), 10*sec)
	id := r.s.Standing.ID
	turn := r.s.Turn

	before := snapshot(t, r.s)
	if _, err := r.s.WithdrawStanding("neg1.p999", ReasonGrantRevoked, at(11*sec)); err == nil {
		t.Fatal("withdrew a proposal that does not stand")
	}
	if snapshot(t, r.s) != before {
		t.Fatal("a refused withdrawal changed the state")
	}

	out, err := r.s.WithdrawStanding(id, ReasonGrantRevoked, at(12*sec))
	if err != nil {
		t.Fatal(err)
	}
	r.record(out)
	wantTypes(t, out.Entries, TypeProposalWithdrawn)
	wantFields(t, out.Entries[0].Frame, map[string]any{
		"proposal_id": id, "by": brand, "offer_hash": mustOfferHash(t, termsA), "reason": ReasonGrantRevoked, "at": ts(12 * sec),
	})
	if r.s.Standing != nil || r.s.Turn != turn || r.s.Status != StatusLive {
		t.Fatalf("after withdrawal: %s", snapshot(t, r.s))
	}
	_, err = r.refused(bouncer, accept, 13*sec)
	wantCode(t, err, wire.CodeInvalidState)
	if _, err := r.s.WithdrawStanding(id, ReasonGrantRevoked, at(14*sec)); err == nil {
		t.Fatal("withdrew the same proposal twice")
	}
}
