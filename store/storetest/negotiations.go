package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/wire"
)

func testCreateNegotiation(t *testing.T, f *fixture) {
	st := f.pending(t, false)
	got, err := f.s.Negotiation(f.ctx, st.ID)
	must(t, err)
	sameState(t, "created", got, st)
	o, err := f.s.Offer(f.ctx, st.OfferID)
	must(t, err)
	if o.NegotiationID != st.ID {
		t.Fatalf("offer links negotiation %q, want %q", o.NegotiationID, st.ID)
	}

	// The offer already has its negotiation.
	again := negotiation.NewRequest("neg_again", st.OfferID, st.Offer, f.brand.Party(), f.bouncer.Party(), false, T0)
	wantErr(t, "second negotiation of an offer", f.s.CreateNegotiation(f.ctx, again), store.ErrConflict)
	_, err = f.s.Negotiation(f.ctx, "neg_again")
	wantErr(t, "refused negotiation", err, store.ErrNotFound)

	// The id is taken (by another offer's negotiation).
	o2 := f.offer(t, false)
	dupID := negotiation.NewRequest(st.ID, o2.ID, o2.Body, f.brand.Party(), f.bouncer.Party(), false, T0)
	wantErr(t, "same negotiation id", f.s.CreateNegotiation(f.ctx, dupID), store.ErrConflict)
	o2, err = f.s.Offer(f.ctx, o2.ID)
	must(t, err)
	if o2.NegotiationID != "" {
		t.Fatalf("refused negotiation linked offer %s to %s", o2.ID, o2.NegotiationID)
	}

	noOffer := negotiation.NewRequest("neg_x", "off_nope", nil, f.brand.Party(), f.bouncer.Party(), false, T0)
	wantErr(t, "unknown offer", f.s.CreateNegotiation(f.ctx, noOffer), store.ErrNotFound)
}

func testNegotiationLists(t *testing.T, f *fixture) {
	other := f.agent(t, negotiation.RoleBouncer, "Other")
	a := f.pending(t, false)
	b := f.pending(t, true)
	c := f.live(t, true)
	// One for another bouncer.
	o := store.Offer{ID: f.id("off"), Brand: f.brand.ID, Bouncer: other.ID, Body: json.RawMessage(`{"title":"x"}`), CreatedAt: T0}
	must(t, f.s.CreateOffer(f.ctx, o))
	d := negotiation.NewRequest(f.id("neg"), o.ID, o.Body, f.brand.Party(), other.Party(), false, T0)
	must(t, f.s.CreateNegotiation(f.ctx, d))

	ids := func(sts []negotiation.State) []string {
		out := make([]string, len(sts))
		for i, st := range sts {
			out[i] = st.ID
		}
		return out
	}
	pending, err := f.s.PendingFor(f.ctx, f.bouncer.ID)
	must(t, err)
	if got, want := ids(pending), []string{a.ID, b.ID}; !slices.Equal(got, want) {
		t.Fatalf("PendingFor: %q, want %q (oldest first, pending only)", got, want)
	}
	sameState(t, "pending state", pending[0], a)

	all, err := f.s.Negotiations(f.ctx, store.NegotiationQuery{})
	must(t, err)
	if got, want := ids(all), []string{d.ID, c.ID, b.ID, a.ID}; !slices.Equal(got, want) {
		t.Fatalf("Negotiations: %q, want %q (newest first)", got, want)
	}
	sameState(t, "listed live state", all[1], c)
	arena, notArena := true, false
	got, err := f.s.Negotiations(f.ctx, store.NegotiationQuery{Arena: &arena})
	must(t, err)
	if !slices.Equal(ids(got), []string{c.ID, b.ID}) {
		t.Fatalf("arena: %q", ids(got))
	}
	got, err = f.s.Negotiations(f.ctx, store.NegotiationQuery{Arena: &notArena, Limit: 1})
	must(t, err)
	if !slices.Equal(ids(got), []string{d.ID}) {
		t.Fatalf("not arena, limit 1: %q", ids(got))
	}
	// By agent: brand or bouncer.
	got, err = f.s.Negotiations(f.ctx, store.NegotiationQuery{AgentID: other.ID})
	must(t, err)
	if !slices.Equal(ids(got), []string{d.ID}) {
		t.Fatalf("of the other bouncer: %q", ids(got))
	}
	got, err = f.s.Negotiations(f.ctx, store.NegotiationQuery{Arena: &arena, AgentID: f.brand.ID})
	must(t, err)
	if !slices.Equal(ids(got), []string{c.ID, b.ID}) {
		t.Fatalf("arena of the brand: %q", ids(got))
	}
	got, err = f.s.Negotiations(f.ctx, store.NegotiationQuery{AgentID: "agt_nobody"})
	must(t, err)
	if len(got) != 0 {
		t.Fatalf("of nobody: %q", ids(got))
	}
}

func testNotFound(t *testing.T, f *fixture) {
	_, err := f.s.Agent(f.ctx, "agt_nope")
	wantErr(t, "Agent", err, store.ErrNotFound)
	_, err = f.s.AgentByKeyHash(f.ctx, "nope")
	wantErr(t, "AgentByKeyHash", err, store.ErrNotFound)
	_, err = f.s.Negotiation(f.ctx, "neg_nope")
	wantErr(t, "Negotiation", err, store.ErrNotFound)
	_, err = f.s.Transcript(f.ctx, "neg_nope", 0)
	wantErr(t, "Transcript", err, store.ErrNotFound)
	called := false
	_, _, err = f.s.Update(f.ctx, "neg_nope", func(store.Tx, *negotiation.State) (negotiation.Outcome, error) {
		called = true
		return negotiation.Outcome{}, nil
	})
	wantErr(t, "Update", err, store.ErrNotFound)
	if called {
		t.Fatal("Update ran the step of an unknown negotiation")
	}
	// Ids no row can hold (a NUL byte) are simply not found.
	_, err = f.s.Agent(f.ctx, "agt_\x00")
	wantErr(t, "Agent with NUL", err, store.ErrNotFound)
	_, err = f.s.Negotiation(f.ctx, "neg_\x00")
	wantErr(t, "Negotiation with NUL", err, store.ErrNotFound)
	must(t, f.s.Ping(f.ctx))
}

func testUpdateUnchanged(t *testing.T, f *fixture) {
	st := f.live(t, false)
	after, out, err := f.s.Update(f.ctx, st.ID, func(_ store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
		st.Status = "scribbled" // a step that reports no change is not saved
		st.LastSeq = 99
		return negotiation.Outcome{}, nil
	})
	must(t, err)
	if out.Changed() {
		t.Fatal("outcome changed")
	}
	sameState(t, "returned state", after, st)
	got, err := f.s.Negotiation(f.ctx, st.ID)
	must(t, err)
	sameState(t, "stored state", got, st)
}

func testUpdateAppends(t *testing.T, f *fixture) {
	st := f.live(t, false)
	at := T0.Add(time.Second)
	after, out := f.mustApply(t, st.ID, f.brand.ID, `{"type":"message","id":"c1","content":"hello"}`, at)
	if len(out.Entries) != 1 || out.Entries[0].Seq != 1 || after.LastSeq != 1 || out.Ack == nil {
		t.Fatalf("first message: entries %+v, last seq %d", out.Entries, after.LastSeq)
	}
	if after.Turn != f.bouncer.ID {
		t.Fatalf("turn %s, want the bouncer's", after.Turn)
	}
	after2, out2 := f.mustApply(t, st.ID, f.bouncer.ID,
		`{"type":"propose_terms","terms":{"amount_usd":3200,"sends":2, "note":"x"},"ttl_seconds":60}`, at.Add(time.Second))
	if out2.Entries[0].Seq != 2 || after2.LastSeq != 2 || after2.Standing == nil {
		t.Fatalf("proposal: %+v", after2)
	}
	got, err := f.s.Negotiation(f.ctx, st.ID)
	must(t, err)
	sameState(t, "stored after two steps", got, after2)
	entries, err := f.s.Transcript(f.ctx, st.ID, 0)
	must(t, err)
	if len(entries) != 2 {
		t.Fatalf("%d entries, want 2", len(entries))
	}
	all := slices.Concat(out.Entries, out2.Entries)
	for i, e := range entries {
		want := all[i]
		if e.Seq != want.Seq || string(e.Frame) != string(want.Frame) || e.Hash != want.Hash || !e.At.Equal(want.At) ||
			e.Type != want.Type || e.From != want.From {
			t.Fatalf("entry %d: got %+v\nwant %+v", i, e, want)
		}
	}
	if head := VerifyChain(t, entries); head != after2.HeadHash {
		t.Fatalf("head hash %s, state says %s", head, after2.HeadHash)
	}
}

func testUpdateRefused(t *testing.T, f *fixture) {
	st := f.live(t, false)
	// Nothing stands: accept is refused, no clock is due, nothing changes.
	after, out, err := f.apply(st.ID, f.bouncer.ID, `{"type":"accept"}`, T0.Add(time.Second))
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != wire.CodeInvalidState {
		t.Fatalf("err = %v, want invalid_state", err)
	}
	if out.Changed() {
		t.Fatalf("refused frame changed: %+v", out)
	}
	sameState(t, "returned", after, st)
	got, err := f.s.Negotiation(f.ctx, st.ID)
	must(t, err)
	sameState(t, "stored", got, st)
	entries, err := f.s.Transcript(f.ctx, st.ID, 0)
	must(t, err)
	if len(entries) != 0 {
		t.Fatalf("refused frame left %d entries", len(entries))
	}
}

func testUpdateStepErrorCommits(t *testing.T, f *fixture) {
	st := f.live(t, false)
	f.mustApply(t, st.ID, f.brand.ID, `{"type":"propose_terms","terms":{"amount_usd":100},"ttl_seconds":10}`, T0.Add(time.Second))
	// 30 s later the proposal has expired: the bouncer's accept settles the
	// expiry first (an entry), then is refused. The expiry must be stored.
	after, out, err := f.apply(st.ID, f.bouncer.ID, `{"type":"accept"}`, T0.Add(30*time.Second))
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != wire.CodeInvalidState {
		t.Fatalf("err = %v, want invalid_state", err)
	}
	if len(out.Entries) != 1 || after.LastSeq != 2 || after.Standing != nil {
		t.Fatalf("after refused accept: entries %d, last seq %d, standing %v", len(out.Entries), after.LastSeq, after.Standing)
	}
	got, err := f.s.Negotiation(f.ctx, st.ID)
	must(t, err)
	sameState(t, "stored", got, after)
	entries, err := f.s.Transcript(f.ctx, st.ID, 1)
	must(t, err)
	var head struct{ Type string }
	if len(entries) != 1 || json.Unmarshal(entries[0].Frame, &head) != nil || head.Type != negotiation.TypeProposalExpired {
		t.Fatalf("transcript after seq 1: %+v", entries)
	}
	if !entries[0].At.Equal(T0.Add(11 * time.Second)) {
		t.Fatalf("expiry entry at %v, want the expiry time %v", entries[0].At, T0.Add(11*time.Second))
	}
}

func testUpdateReplay(t *testing.T, f *fixture) {
	st := f.live(t, false)
	frame := `{"type":"message","id":"dup-1","content":"once"}`
	_, out1 := f.mustApply(t, st.ID, f.brand.ID, frame, T0.Add(time.Second))
	after, out2 := f.mustApply(t, st.ID, f.brand.ID, frame, T0.Add(2*time.Second))
	if !out2.Replay || out2.Changed() || after.LastSeq != 1 {
		t.Fatalf("resend: replay %v, changed %v, last seq %d", out2.Replay, out2.Changed(), after.LastSeq)
	}
	if string(out2.Ack) != string(out1.Ack) { // the ack kept in the state, byte for byte
		t.Fatalf("replayed ack %s, want %s", out2.Ack, out1.Ack)
	}
}

func testUpdateDecline(t *testing.T, f *fixture) {
	st := f.pending(t, false)
	after, out, err := f.s.Update(f.ctx, st.ID, func(_ store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
		return st.Decline("busy", T0.Add(time.Second))
	})
	must(t, err)
	if !out.Declined || len(out.Entries) != 0 || after.Status != negotiation.StatusDeclined {
		t.Fatalf("decline: %+v, status %s", out, after.Status)
	}
	got, err := f.s.Negotiation(f.ctx, st.ID)
	must(t, err)
	sameState(t, "stored", got, after)
	pending, err := f.s.PendingFor(f.ctx, f.bouncer.ID)
	must(t, err)
	if len(pending) != 0 {
		t.Fatalf("declined negotiation still pending")
	}
}

func testUpdateReputation(t *testing.T, f *fixture) {
	deal := func(arena bool) {
		st := f.live(t, arena)
		f.mustApply(t, st.ID, f.brand.ID, `{"type":"propose_terms","terms":{"amount_usd":100}}`, T0.Add(time.Second))
		after, out := f.mustApply(t, st.ID, f.bouncer.ID, `{"type":"accept"}`, T0.Add(2*time.Second))
		if after.Status != negotiation.StatusDeal || !out.Ended {
			t.Fatalf("accept: status %s", after.Status)
		}
	}
	deal(false)
	deal(true) // arena deals change no reputation
	for _, id := range []string{f.brand.ID, f.bouncer.ID} {
		a, err := f.s.Agent(f.ctx, id)
		must(t, err)
		if a.Reputation != negotiation.ReputationDeal {
			t.Fatalf("%s reputation %d, want %d", id, a.Reputation, negotiation.ReputationDeal)
		}
	}
	// A missed turn costs the party on turn (the brand, first).
	st := f.live(t, false)
	_, out, err := f.s.Update(f.ctx, st.ID, func(_ store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
		return st.Tick(T0.Add(negotiation.TurnTime)), nil
	})
	must(t, err)
	if !out.Ended {
		t.Fatal("turn not missed")
	}
	a, err := f.s.Agent(f.ctx, f.brand.ID)
	must(t, err)
	if want := negotiation.ReputationDeal + negotiation.ReputationTurnMissed; a.Reputation != want {
		t.Fatalf("brand reputation %d, want %d", a.Reputation, want)
	}
}

func testUpdateWrongSeq(t *testing.T, f *fixture) {
	st := f.live(t, false)
	f.mustApply(t, st.ID, f.brand.ID, `{"type":"message","content":"one"}`, T0.Add(time.Second))
	before, err := f.s.Negotiation(f.ctx, st.ID)
	must(t, err)
	// A step whose entry does not follow the stored last seq is a lost
	// race: refused whole, never a fork.
	_, _, err = f.s.Update(f.ctx, st.ID, func(_ store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
		st.LastSeq = 5
		return negotiation.Outcome{Entries: []negotiation.Entry{{Seq: 5, Frame: json.RawMessage(`{"type":"x"}`), Hash: "h", At: T0}}}, nil
	})
	wantErr(t, "entry seq 5 after 1", err, store.ErrConflict)
	got, err := f.s.Negotiation(f.ctx, st.ID)
	must(t, err)
	sameState(t, "stored", got, before)
	entries, err := f.s.Transcript(f.ctx, st.ID, 0)
	must(t, err)
	if len(entries) != 1 {
		t.Fatalf("%d entries, want 1", len(entries))
	}
}

func testUpdateConcurrent(t *testing.T, f *fixture) {
	st := f.live(t, false)
	const workers, each = 16, 8
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	seqs := make(chan int64, workers*each)
	for w := range workers {
		from := f.brand.ID
		if w%2 == 1 {
			from = f.bouncer.ID
		}
		wg.Go(func() {
			for i := range each {
				frame := fmt.Sprintf(`{"type":"message","id":"w%d-%d","content":"from worker %d"}`, w, i, w)
				_, out, err := f.apply(st.ID, from, frame, T0.Add(time.Second))
				if err != nil {
					errs <- err
					return
				}
				for _, e := range out.Entries {
					seqs <- e.Seq
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	close(seqs)
	for err := range errs {
		t.Fatal(err)
	}
	var got []int64
	for s := range seqs {
		got = append(got, s)
	}
	slices.Sort(got)
	for i, s := range got {
		if s != int64(i)+1 {
			t.Fatalf("seqs handed out %v: not 1..%d once each", got, workers*each)
		}
	}
	entries, err := f.s.Transcript(f.ctx, st.ID, 0)
	must(t, err)
	if len(entries) != workers*each {
		t.Fatalf("%d entries, want %d", len(entries), workers*each)
	}
	head := VerifyChain(t, entries)
	final, err := f.s.Negotiation(f.ctx, st.ID)
	must(t, err)
	if final.LastSeq != workers*each || final.HeadHash != head {
		t.Fatalf("state last seq %d head %s; transcript %d head %s", final.LastSeq, final.HeadHash, len(entries), head)
	}
}

func testTranscript(t *testing.T, f *fixture) {
	st := f.live(t, false)
	entries, err := f.s.Transcript(f.ctx, st.ID, 0)
	must(t, err)
	if len(entries) != 0 {
		t.Fatalf("new negotiation has %d entries", len(entries))
	}
	for i := range 5 {
		f.mustApply(t, st.ID, f.brand.ID, fmt.Sprintf(`{"type":"message","content":"m%d"}`, i), T0.Add(time.Duration(i+1)*time.Second))
	}
	for _, since := range []int64{0, 2, 4, 5, 9} {
		entries, err := f.s.Transcript(f.ctx, st.ID, since)
		must(t, err)
		want := max(0, 5-int(since))
		if len(entries) != want {
			t.Fatalf("since %d: %d entries, want %d", since, len(entries), want)
		}
		for i, e := range entries {
			if e.Seq != since+int64(i)+1 {
				t.Fatalf("since %d: entry %d has seq %d", since, i, e.Seq)
			}
			if !e.At.Equal(T0.Add(time.Duration(e.Seq) * time.Second)) {
				t.Fatalf("seq %d at %v", e.Seq, e.At)
			}
		}
	}
}

func testWakes(t *testing.T, f *fixture) {
	pending := f.pending(t, false)
	live := f.live(t, false)
	f.mustApply(t, live.ID, f.brand.ID, `{"type":"propose_terms","terms":{"amount_usd":100},"ttl_seconds":10}`, T0.Add(time.Second))
	ended := f.live(t, false)
	f.mustApply(t, ended.ID, f.brand.ID, `{"type":"walk"}`, T0.Add(time.Second))
	declined := f.pending(t, false)
	_, _, err := f.s.Update(f.ctx, declined.ID, func(_ store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
		return st.Decline("no", T0)
	})
	must(t, err)

	wakes, err := f.s.Wakes(f.ctx)
	must(t, err)
	got := map[string]time.Time{}
	for _, w := range wakes {
		got[w.NegotiationID] = w.At
	}
	want := map[string]time.Time{
		pending.ID:  pending.RequestExpiresAt, // the request lapses
		live.ID:     T0.Add(11 * time.Second), // the proposal's ttl, before the turn clock
		ended.ID:    {},                       // ended: no clock runs
		declined.ID: {},                       // declined: none either
	}
	for id, at := range want {
		if at.IsZero() {
			if _, ok := got[id]; ok {
				t.Errorf("wake for %s (no clock runs)", id)
			}
			continue
		}
		if !got[id].Equal(at) {
			t.Errorf("wake of %s at %v, want %v", id, got[id], at)
		}
	}
	if len(got) != 2 {
		t.Errorf("%d wakes, want 2: %v", len(got), got)
	}

	// Overdue: the wakes before a time, earliest first, at most limit.
	first, second := pending.ID, live.ID
	if want[live.ID].Before(want[pending.ID]) {
		first, second = live.ID, pending.ID
	}
	for _, tc := range []struct {
		before time.Time
		limit  int
		ids    []string
	}{
		{want[first], 10, nil}, // strictly before
		{want[first].Add(time.Microsecond), 10, []string{first}},          // the earliest only
		{want[second].Add(time.Microsecond), 10, []string{first, second}}, // both, in order
		{want[second].Add(time.Hour), 1, []string{first}},                 // the limit
	} {
		ws, err := f.s.Overdue(f.ctx, tc.before, tc.limit)
		must(t, err)
		var ids []string
		for _, w := range ws {
			ids = append(ids, w.NegotiationID)
			if !w.At.Equal(want[w.NegotiationID]) {
				t.Errorf("overdue %s at %v, want %v", w.NegotiationID, w.At, want[w.NegotiationID])
			}
		}
		if !slices.Equal(ids, tc.ids) {
			t.Errorf("Overdue(%v, %d) = %v, want %v", tc.before, tc.limit, ids, tc.ids)
		}
	}
}
