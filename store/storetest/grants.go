package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/store"
)

func grant(jti, agentID string, created time.Time) store.GrantRecord {
	return store.GrantRecord{
		JTI: jti, AgentID: agentID, Token: "eyJ.token." + jti, Issuer: "thumb",
		IssuedAt: T0, ExpiresAt: T0.Add(24 * time.Hour), CreatedAt: created,
		Scope: json.RawMessage(`{"role":"brand","amount_usd":{"max":3500}, "budget_usd":10000}`),
	}
}

func testGrants(t *testing.T, f *fixture) {
	g1 := grant("jti-b", f.brand.ID, T0.Add(2*time.Second))
	g1.NotBefore = T0.Add(time.Minute)
	g1.NegotiationID = "neg_scoped"
	g2 := grant("jti-a", f.brand.ID, T0.Add(2*time.Second))
	g3 := grant("jti-c", f.brand.ID, T0.Add(time.Second)) // uploaded last, though created first
	g3.Scope = nil
	other := grant("jti-z", f.bouncer.ID, T0)
	for _, g := range []store.GrantRecord{g1, g2, g3, other} {
		must(t, f.s.SaveGrant(f.ctx, g))
	}
	wantErr(t, "jti reused", f.s.SaveGrant(f.ctx, grant("jti-a", f.bouncer.ID, T0)), store.ErrConflict)

	got, err := f.s.Grants(f.ctx, f.brand.ID)
	must(t, err)
	want := []store.GrantRecord{g1, g2, g3} // upload order
	if len(got) != len(want) {
		t.Fatalf("%d grants, want %d", len(got), len(want))
	}
	for i := range want {
		sameGrant(t, fmt.Sprintf("grant %d", i), got[i], want[i])
	}
	none, err := f.s.Grants(f.ctx, "agt_nobody")
	must(t, err)
	if len(none) != 0 {
		t.Fatalf("grants of nobody: %d", len(none))
	}
}

// testGrantsCapped: SaveGrantCapped counts the agent's grants of the
// upload's issuer that are neither revoked nor expired at its CreatedAt,
// refuses past the cap with ErrLimit storing nothing, and holds the cap
// under concurrent uploads.
func testGrantsCapped(t *testing.T, f *fixture) {
	at := T0.Add(time.Hour)
	for i := range 3 {
		must(t, f.s.SaveGrantCapped(f.ctx, grant(fmt.Sprintf("cap-%d", i), f.brand.ID, at), 3))
	}
	wantErr(t, "a fourth active grant", f.s.SaveGrantCapped(f.ctx, grant("cap-3", f.brand.ID, at), 3), store.ErrLimit)
	if got, err := f.s.Grants(f.ctx, f.brand.ID); err != nil || len(got) != 3 {
		t.Fatalf("after a refused upload: %d grants (%v), want 3", len(got), err)
	}
	must(t, f.s.SaveGrantCapped(f.ctx, grant("cap-other-agent", f.bouncer.ID, at), 3)) // another agent's count
	other := grant("cap-other-key", f.brand.ID, at)
	other.Issuer = "another-thumb" // a rotated key's grants never apply: not counted
	must(t, f.s.SaveGrant(f.ctx, other))
	wantErr(t, "still three of this key", f.s.SaveGrantCapped(f.ctx, grant("cap-3", f.brand.ID, at), 3), store.ErrLimit)
	must(t, f.s.RevokeGrant(f.ctx, f.brand.ID, "cap-0", at))
	must(t, f.s.SaveGrantCapped(f.ctx, grant("cap-3", f.brand.ID, at), 3)) // a revoked one frees a place
	// grant() expires at T0+24h: at that time all are expired.
	must(t, f.s.SaveGrantCapped(f.ctx, grant("cap-late", f.brand.ID, T0.Add(24*time.Hour)), 1))
	must(t, f.s.SaveGrantCapped(f.ctx, grant("cap-nocap", f.brand.ID, at), 0))

	// Concurrent uploads of one agent: exactly the cap lands.
	var wg sync.WaitGroup
	var stored, limited atomic.Int32
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := f.s.SaveGrantCapped(f.ctx, grant(fmt.Sprintf("race-%d", i), f.bouncer.ID, at), 5)
			switch {
			case err == nil:
				stored.Add(1)
			case errors.Is(err, store.ErrLimit):
				limited.Add(1)
			default:
				t.Errorf("race-%d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	if stored.Load() != 4 || limited.Load() != 8 { // the bouncer held one already
		t.Fatalf("concurrent uploads under a cap of 5 with one held: %d stored, %d refused; want 4 and 8", stored.Load(), limited.Load())
	}
}

// testGrantsPage: GrantsPage walks an agent's grants in upload order with
// Cursor, skipping other agents' grants, and Grants sets the same cursors.
func testGrantsPage(t *testing.T, f *fixture) {
	var jtis []string
	for i := range 7 {
		jti := fmt.Sprintf("page-%d", i)
		must(t, f.s.SaveGrant(f.ctx, grant(jti, f.brand.ID, T0)))
		jtis = append(jtis, jti)
		must(t, f.s.SaveGrant(f.ctx, grant(jti+"-other", f.bouncer.ID, T0)))
	}
	var seen []string
	var cursors []int64
	after := int64(0)
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("paging never ends")
		}
		page, err := f.s.GrantsPage(f.ctx, f.brand.ID, after, 3)
		must(t, err)
		if len(page) > 3 {
			t.Fatalf("a page of %d, limit 3", len(page))
		}
		if len(page) == 0 {
			break
		}
		for _, g := range page {
			if g.AgentID != f.brand.ID || g.Cursor <= after {
				t.Fatalf("page after %d: %s of %s at cursor %d", after, g.JTI, g.AgentID, g.Cursor)
			}
			after = g.Cursor
			seen = append(seen, g.JTI)
			cursors = append(cursors, g.Cursor)
		}
	}
	if !slices.Equal(seen, jtis) {
		t.Fatalf("paged %v, want %v", seen, jtis)
	}
	all, err := f.s.Grants(f.ctx, f.brand.ID)
	must(t, err)
	for i, g := range all {
		if g.Cursor != cursors[i] {
			t.Fatalf("Grants: %s at cursor %d, GrantsPage said %d", g.JTI, g.Cursor, cursors[i])
		}
	}
	if rest, err := f.s.GrantsPage(f.ctx, f.brand.ID, after, 100); err != nil || len(rest) != 0 {
		t.Fatalf("after the last: %d (%v)", len(rest), err)
	}
}

func testGrantRevoke(t *testing.T, f *fixture) {
	must(t, f.s.SaveGrant(f.ctx, grant("jti-1", f.brand.ID, T0)))
	wantErr(t, "another agent's grant", f.s.RevokeGrant(f.ctx, f.bouncer.ID, "jti-1", T0), store.ErrNotFound)
	wantErr(t, "unknown grant", f.s.RevokeGrant(f.ctx, f.brand.ID, "jti-nope", T0), store.ErrNotFound)
	at := T0.Add(time.Hour)
	must(t, f.s.RevokeGrant(f.ctx, f.brand.ID, "jti-1", at))
	must(t, f.s.RevokeGrant(f.ctx, f.brand.ID, "jti-1", at.Add(time.Hour))) // the first revocation stands
	got, err := f.s.Grants(f.ctx, f.brand.ID)
	must(t, err)
	if len(got) != 1 || !got[0].RevokedAt.Equal(at) {
		t.Fatalf("after revoke: %+v", got)
	}
}

func sameGrant(t *testing.T, what string, got, want store.GrantRecord) {
	t.Helper()
	if got.JTI != want.JTI || got.AgentID != want.AgentID || got.Token != want.Token || got.Issuer != want.Issuer ||
		!got.IssuedAt.Equal(want.IssuedAt) || !got.NotBefore.Equal(want.NotBefore) || !got.ExpiresAt.Equal(want.ExpiresAt) ||
		got.NegotiationID != want.NegotiationID || !got.CreatedAt.Equal(want.CreatedAt) ||
		!got.RevokedAt.Equal(want.RevokedAt) || got.SpentCents != want.SpentCents {
		t.Fatalf("%s:\n got %+v\nwant %+v", what, got, want)
	}
	if string(got.Scope) != string(want.Scope) {
		t.Fatalf("%s: scope %s, want %s", what, got.Scope, want.Scope)
	}
}

var errOverBudget = errors.New("over budget")

// testTxBudget: many negotiations spend under one grant at once; the
// check-then-add inside the step is serialised by the Tx, so the budget is
// never exceeded.
func testTxBudget(t *testing.T, f *fixture) {
	const (
		workers = 50
		cost    = 100
		budget  = 1000
	)
	must(t, f.s.SaveGrant(f.ctx, grant("jti-budget", f.brand.ID, T0)))
	ids := make([]string, workers)
	for i := range ids {
		ids[i] = f.live(t, false).ID
	}
	frame, werr := negotiation.DecodeFrame([]byte(`{"type":"message","content":"spend"}`))
	if werr != nil {
		t.Fatal(werr)
	}
	var landed atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for _, id := range ids {
		wg.Go(func() {
			_, out, err := f.s.Update(f.ctx, id, func(tx store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
				spent, err := tx.GrantSpent("thumb", "jti-budget")
				if err != nil {
					return negotiation.Outcome{}, err
				}
				if spent+cost > budget {
					return negotiation.Outcome{}, errOverBudget
				}
				if err := tx.AddGrantSpent("thumb", "jti-budget", cost); err != nil {
					return negotiation.Outcome{}, err
				}
				return st.Apply(f.brand.ID, frame, T0.Add(time.Second), nil)
			})
			switch {
			case errors.Is(err, errOverBudget):
			case err != nil:
				errs <- err
			case out.Changed():
				landed.Add(1)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := landed.Load(); n != budget/cost {
		t.Fatalf("%d steps spent, want exactly %d", n, budget/cost)
	}
	got, err := f.s.Grants(f.ctx, f.brand.ID)
	must(t, err)
	if got[0].SpentCents != budget {
		t.Fatalf("spent %d cents, want %d", got[0].SpentCents, budget)
	}
}

// testTxRollback: spend added by a step whose outcome changed nothing is not
// kept; an unknown jti has spent nothing.
func testTxRollback(t *testing.T, f *fixture) {
	must(t, f.s.SaveGrant(f.ctx, grant("jti-rb", f.brand.ID, T0)))
	st := f.live(t, false)
	_, _, err := f.s.Update(f.ctx, st.ID, func(tx store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
		if err := tx.AddGrantSpent("thumb", "jti-rb", 500); err != nil {
			return negotiation.Outcome{}, err
		}
		spent, err := tx.GrantSpent("thumb", "jti-rb")
		if err != nil || spent != 500 {
			return negotiation.Outcome{}, fmt.Errorf("spent inside the step %d, %v; want 500", spent, err)
		}
		unknown, err := tx.GrantSpent("thumb", "jti-unknown")
		if err != nil || unknown != 0 {
			return negotiation.Outcome{}, fmt.Errorf("unknown jti spent %d, %v; want 0", unknown, err)
		}
		if err := tx.AddGrantSpent("thumb", "jti-unknown", 5); err != nil {
			return negotiation.Outcome{}, err
		}
		return negotiation.Outcome{}, errOverBudget // refused: nothing changed
	})
	wantErr(t, "refused step", err, errOverBudget)
	got, err := f.s.Grants(f.ctx, f.brand.ID)
	must(t, err)
	if got[0].SpentCents != 0 {
		t.Fatalf("spent %d cents after a refused step, want 0", got[0].SpentCents)
	}
}

// testTxConflictSpendsNothing: spend added by a step that lost the race
// for its seq (store.ErrConflict) is not kept: the step is refused whole.
func testTxConflictSpendsNothing(t *testing.T, f *fixture) {
	must(t, f.s.SaveGrant(f.ctx, grant("jti-race", f.brand.ID, T0)))
	st := f.live(t, false)
	f.mustApply(t, st.ID, f.brand.ID, `{"type":"message","content":"one"}`, T0.Add(time.Second))
	_, _, err := f.s.Update(f.ctx, st.ID, func(tx store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
		if err := tx.AddGrantSpent("thumb", "jti-race", 700); err != nil {
			return negotiation.Outcome{}, err
		}
		st.LastSeq = 5
		return negotiation.Outcome{Entries: []negotiation.Entry{{Seq: 5, Frame: json.RawMessage(`{"type":"x"}`), Hash: "h", At: T0}}}, nil
	})
	wantErr(t, "entry seq 5 after 1", err, store.ErrConflict)
	got, err := f.s.Grants(f.ctx, f.brand.ID)
	must(t, err)
	if got[0].SpentCents != 0 {
		t.Fatalf("spent %d cents after a step refused for its seq, want 0", got[0].SpentCents)
	}
}

func testVenueKey(t *testing.T, f *fixture) {
	boom := errors.New("no entropy")
	_, err := f.s.VenueKey(f.ctx, func() ([]byte, error) { return nil, boom })
	wantErr(t, "create fails", err, boom)

	const callers = 8
	keys := make([][]byte, callers)
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for i := range callers {
		wg.Go(func() {
			k, err := f.s.VenueKey(f.ctx, func() ([]byte, error) {
				return fmt.Appendf(nil, "-----BEGIN PRIVATE KEY-----\nkey %d\n-----END PRIVATE KEY-----\n", i), nil
			})
			if err != nil {
				errs <- err
			}
			keys[i] = k
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i := range keys {
		if len(keys[i]) == 0 || !slices.Equal(keys[i], keys[0]) {
			t.Fatalf("callers got different keys: %q vs %q", keys[i], keys[0])
		}
	}
	var again []byte
	again, err = f.s.VenueKey(f.ctx, func() ([]byte, error) {
		return nil, errors.New("create called with a key stored")
	})
	must(t, err)
	if !slices.Equal(again, keys[0]) {
		t.Fatalf("later call: %q, want %q", again, keys[0])
	}
}
