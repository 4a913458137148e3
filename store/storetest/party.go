package storetest

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/store"
)

// testPartyLists: an agent's own negotiations and offers, newest first,
// filtered by status, paged, with the total; another agent's are not listed.
func testPartyLists(t *testing.T, f *fixture) {
	other := f.agent(t, negotiation.RoleBouncer, "Other")
	a := f.pending(t, false)
	b := f.live(t, true)
	o := store.Offer{ID: f.id("off"), Brand: f.brand.ID, Bouncer: other.ID, Body: json.RawMessage(`{"title":"x"}`), CreatedAt: T0.Add(time.Hour)}
	must(t, f.s.CreateOffer(f.ctx, o))
	c := negotiation.NewRequest(f.id("neg"), o.ID, o.Body, f.brand.Party(), other.Party(), false, T0)
	must(t, f.s.CreateNegotiation(f.ctx, c))

	ids := func(sts []negotiation.State) []string {
		out := []string{}
		for _, st := range sts {
			out = append(out, st.ID)
		}
		return out
	}
	for _, tc := range []struct {
		q     store.PartyQuery
		want  []string
		total int
	}{
		{store.PartyQuery{AgentID: f.brand.ID}, []string{c.ID, b.ID, a.ID}, 3},
		{store.PartyQuery{AgentID: f.bouncer.ID}, []string{b.ID, a.ID}, 2},
		{store.PartyQuery{AgentID: other.ID}, []string{c.ID}, 1},
		{store.PartyQuery{AgentID: f.brand.ID, Status: negotiation.StatusLive}, []string{b.ID}, 1},
		{store.PartyQuery{AgentID: f.brand.ID, Limit: 1, Offset: 1}, []string{b.ID}, 3},
		{store.PartyQuery{AgentID: f.brand.ID, Offset: 5}, []string{}, 3},
		{store.PartyQuery{AgentID: "agt_nobody"}, []string{}, 0},
	} {
		got, total, err := f.s.NegotiationsOf(f.ctx, tc.q)
		must(t, err)
		if !slices.Equal(ids(got), tc.want) || total != tc.total {
			t.Errorf("NegotiationsOf(%+v) = %q of %d, want %q of %d", tc.q, ids(got), total, tc.want, tc.total)
		}
	}

	offers, total, err := f.s.OffersOf(f.ctx, store.PartyQuery{AgentID: f.brand.ID, Limit: 2})
	must(t, err)
	if total != 3 || len(offers) != 2 || offers[0].ID != o.ID || offers[0].NegotiationID != c.ID {
		t.Fatalf("OffersOf brand: %d in all, first %+v", total, offers)
	}
	offers, total, err = f.s.OffersOf(f.ctx, store.PartyQuery{AgentID: other.ID})
	must(t, err)
	if total != 1 || len(offers) != 1 || offers[0].Bouncer != other.ID {
		t.Fatalf("OffersOf other: %d %+v", total, offers)
	}
}
