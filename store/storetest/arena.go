package storetest

import (
	"slices"
	"testing"
	"time"

	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/settlement"
	"github.com/venuehq/venue/store"
)

// testSettlementsAndEvents: a live deal writes its settlement instruction
// and one reputation event per party with the deal; an arena deal writes
// neither; a missed turn writes the missing party's event.
func testSettlementsAndEvents(t *testing.T, f *fixture) {
	deal := func(arena bool, usd string) negotiation.State {
		st := f.live(t, arena)
		f.mustApply(t, st.ID, f.brand.ID, `{"type":"propose_terms","terms":{"amount_usd":`+usd+`}}`, T0.Add(time.Second))
		after, _ := f.mustApply(t, st.ID, f.bouncer.ID, `{"type":"accept"}`, T0.Add(2*time.Second))
		return after
	}
	live := deal(false, "3200.01")
	deal(true, "50")
	for _, id := range []string{f.brand.ID, f.bouncer.ID} {
		list, err := f.s.Settlements(f.ctx, id)
		must(t, err)
		if len(list) != 1 {
			t.Fatalf("settlements of %s: %+v, want the live deal's only", id, list)
		}
		want := settlement.Instruction{ID: settlement.IDFor(live.ID), NegotiationID: live.ID, Payer: f.brand.ID, Payee: f.bouncer.ID,
			AmountMinor: 3_200_010_000, Status: settlement.StatusPending, CreatedAt: T0.Add(2 * time.Second)}
		if got := list[0]; got != want {
			t.Fatalf("settlement %+v, want %+v", got, want)
		}
		evs, err := f.s.ReputationEvents(f.ctx, id, 0)
		must(t, err)
		if len(evs) != 1 || evs[0] != (store.ReputationEvent{AgentID: id, NegotiationID: live.ID, Delta: negotiation.ReputationDeal,
			Reason: negotiation.StatusDeal, At: T0.Add(2 * time.Second)}) {
			t.Fatalf("reputation events of %s: %+v", id, evs)
		}
	}
	other := f.agent(t, negotiation.RoleBouncer, "Nobody")
	if list, err := f.s.Settlements(f.ctx, other.ID); err != nil || len(list) != 0 {
		t.Fatalf("settlements of a stranger: %v %v", list, err)
	}
	st := f.live(t, false)
	_, _, err := f.s.Update(f.ctx, st.ID, func(_ store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
		return st.Tick(T0.Add(negotiation.TurnTime)), nil
	})
	must(t, err)
	evs, err := f.s.ReputationEvents(f.ctx, f.brand.ID, 1)
	must(t, err)
	if len(evs) != 1 || evs[0].NegotiationID != st.ID || evs[0].Delta != negotiation.ReputationTurnMissed || evs[0].Reason != negotiation.StatusTurnMissed {
		t.Fatalf("newest event of the brand: %+v", evs)
	}
	if evs, _ := f.s.ReputationEvents(f.ctx, f.bouncer.ID, 0); len(evs) != 1 {
		t.Fatalf("the bouncer did not miss its turn: %+v", evs)
	}
}

// testNegotiationStatusPaging: the listing filters by status and pages.
func testNegotiationStatusPaging(t *testing.T, f *fixture) {
	a := f.pending(t, true)
	b := f.live(t, true)
	c := f.live(t, true)
	f.mustApply(t, c.ID, f.brand.ID, `{"type":"walk"}`, T0.Add(time.Second))
	ids := func(q store.NegotiationQuery) []string {
		sts, err := f.s.Negotiations(f.ctx, q)
		must(t, err)
		out := make([]string, len(sts))
		for i, st := range sts {
			out[i] = st.ID
		}
		return out
	}
	arena := true
	if got := ids(store.NegotiationQuery{Arena: &arena, Statuses: []string{negotiation.StatusLive}}); !slices.Equal(got, []string{b.ID}) {
		t.Fatalf("live: %q", got)
	}
	if got := ids(store.NegotiationQuery{Arena: &arena, Statuses: []string{negotiation.StatusWalked, negotiation.StatusPending}}); !slices.Equal(got, []string{c.ID, a.ID}) {
		t.Fatalf("walked or pending: %q", got)
	}
	if got := ids(store.NegotiationQuery{Arena: &arena, Limit: 1, Offset: 1}); !slices.Equal(got, []string{b.ID}) {
		t.Fatalf("page 2 of 1: %q", got)
	}
	if got := ids(store.NegotiationQuery{Arena: &arena, Offset: 5}); len(got) != 0 {
		t.Fatalf("past the end: %q", got)
	}
	walked, err := f.s.Negotiation(f.ctx, c.ID)
	must(t, err)
	if !walked.LastAt.Equal(T0.Add(time.Second)) {
		t.Fatalf("last_at %v", walked.LastAt)
	}
}

// testPurgeArena: arena negotiations that are over and older than the
// cut-off go with their transcripts and offers; live ones, younger ones and
// live-mode ones stay.
func testPurgeArena(t *testing.T, f *fixture) {
	over := f.live(t, true)
	f.mustApply(t, over.ID, f.brand.ID, `{"type":"walk"}`, T0.Add(time.Second))
	playing := f.live(t, true)
	real := f.live(t, false)
	f.mustApply(t, real.ID, f.brand.ID, `{"type":"walk"}`, T0.Add(time.Second))
	n, err := f.s.PurgeArena(f.ctx, T0)
	must(t, err)
	if n != 0 {
		t.Fatalf("purged %d created at the cut-off, want 0", n)
	}
	n, err = f.s.PurgeArena(f.ctx, T0.Add(time.Hour))
	must(t, err)
	if n != 1 {
		t.Fatalf("purged %d, want 1 (the ended arena negotiation)", n)
	}
	_, err = f.s.Negotiation(f.ctx, over.ID)
	wantErr(t, "purged negotiation", err, store.ErrNotFound)
	_, err = f.s.Offer(f.ctx, over.OfferID)
	wantErr(t, "purged offer", err, store.ErrNotFound)
	if tr, err := f.s.Transcript(f.ctx, over.ID, 0); err == nil && len(tr) > 0 {
		t.Fatalf("the purged negotiation's transcript is still there: %d entries", len(tr))
	}
	for _, id := range []string{playing.ID, real.ID} {
		if _, err := f.s.Negotiation(f.ctx, id); err != nil {
			t.Fatalf("%s was purged: %v", id, err)
		}
	}
}

// testPresence: online while a node holds a presence entry that lasts past
// Now, on any node; last_seen_at moves forward only; agents not seen since
// ActiveSince drop out of the query; house agents read back as house.
func testPresence(t *testing.T, f *fixture) {
	house := store.Agent{ID: f.id("agt"), Name: "House", Role: negotiation.RoleBouncer, KeyHash: f.id("kh"), CreatedAt: T0, House: true}
	must(t, f.s.CreateAgent(f.ctx, house))
	got, err := f.s.Agent(f.ctx, house.ID)
	must(t, err)
	if !got.House || !got.LastSeenAt.IsZero() || got.Online {
		t.Fatalf("house agent %+v", got)
	}
	now := T0.Add(time.Hour)
	q := func(extra func(*store.AgentQuery)) map[string]store.Agent {
		aq := store.AgentQuery{Role: negotiation.RoleBouncer, Limit: 50, Now: now}
		if extra != nil {
			extra(&aq)
		}
		list, _, err := f.s.Agents(f.ctx, aq)
		must(t, err)
		m := map[string]store.Agent{}
		for _, a := range list {
			m[a.ID] = a
		}
		return m
	}
	must(t, f.s.SetPresence(f.ctx, f.bouncer.ID, "node-a", now.Add(time.Minute), now))
	must(t, f.s.SetPresence(f.ctx, f.bouncer.ID, "node-b", now.Add(time.Minute), now.Add(time.Second)))
	m := q(func(aq *store.AgentQuery) { aq.OnlineOnly = true })
	if len(m) != 1 || !m[f.bouncer.ID].Online || !m[f.bouncer.ID].LastSeenAt.Equal(now.Add(time.Second)) {
		t.Fatalf("online only: %+v", m)
	}
	// Closing on node a leaves it online through node b; a seen time in
	// the past does not move last_seen_at back.
	must(t, f.s.SetPresence(f.ctx, f.bouncer.ID, "node-a", time.Time{}, now))
	if m := q(nil); !m[f.bouncer.ID].Online || m[house.ID].Online || !m[f.bouncer.ID].LastSeenAt.Equal(now.Add(time.Second)) {
		t.Fatalf("after node a closed: %+v", m)
	}
	must(t, f.s.SetPresence(f.ctx, f.bouncer.ID, "node-b", time.Time{}, now.Add(2*time.Second)))
	if m := q(func(aq *store.AgentQuery) { aq.OnlineOnly = true }); len(m) != 0 {
		t.Fatalf("nobody is online: %+v", m)
	}
	// An entry whose time ran out (a node that died) no longer counts.
	must(t, f.s.SetPresence(f.ctx, house.ID, "node-c", now, now.Add(-time.Minute)))
	if m := q(nil); m[house.ID].Online {
		t.Fatalf("expired presence counts: %+v", m[house.ID])
	}
	// Active since: the bouncer was seen at now+2s; the house agent at
	// now-1m; "Other"-less fixtures: the brand is no bouncer.
	m = q(func(aq *store.AgentQuery) { aq.ActiveSince = now })
	if _, ok := m[house.ID]; ok || len(m) != 1 {
		t.Fatalf("active since now: %+v", m)
	}
	m = q(func(aq *store.AgentQuery) { aq.ActiveSince = T0.Add(-time.Hour) })
	if len(m) != 2 {
		t.Fatalf("active since before anyone: %+v", m)
	}
}
