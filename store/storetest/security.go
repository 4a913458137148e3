package storetest

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/store"
)

// testGrantJTIPerIssuer: a jti is unique per issuer. Another principal's
// grant with the same jti is stored beside it (no squatting, no probing),
// and its budget is its own.
func testGrantJTIPerIssuer(t *testing.T, f *fixture) {
	mine := grant("shared-jti", f.brand.ID, T0)
	theirs := grant("shared-jti", f.bouncer.ID, T0)
	theirs.Issuer = "other-thumb"
	must(t, f.s.SaveGrant(f.ctx, mine))
	must(t, f.s.SaveGrant(f.ctx, theirs))
	wantErr(t, "same issuer, same jti", f.s.SaveGrant(f.ctx, grant("shared-jti", f.bouncer.ID, T0)), store.ErrConflict)

	st := f.live(t, false)
	_, _, err := f.s.Update(f.ctx, st.ID, func(tx store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
		if err := tx.AddGrantSpent("other-thumb", "shared-jti", 700); err != nil {
			return negotiation.Outcome{}, err
		}
		frame, werr := negotiation.DecodeFrame([]byte(`{"type":"message","content":"spend"}`))
		if werr != nil {
			return negotiation.Outcome{}, werr
		}
		return st.Apply(f.brand.ID, frame, T0.Add(time.Second), nil)
	})
	must(t, err)
	gotMine, err := f.s.Grants(f.ctx, f.brand.ID)
	must(t, err)
	gotTheirs, err := f.s.Grants(f.ctx, f.bouncer.ID)
	must(t, err)
	if len(gotMine) != 1 || gotMine[0].SpentCents != 0 || len(gotTheirs) != 1 || gotTheirs[0].SpentCents != 700 {
		t.Fatalf("spent mine %+v theirs %+v; want 0 and 700", gotMine, gotTheirs)
	}
}

// testIssuerRevoke: a principal's revocation marks the uploaded grant,
// reaches a grant uploaded after it, keeps its first time, and touches no
// other issuer's grant with the same jti.
func testIssuerRevoke(t *testing.T, f *fixture) {
	must(t, f.s.SaveGrant(f.ctx, grant("g-up", f.brand.ID, T0)))
	other := grant("g-up", f.brand.ID, T0)
	other.Issuer = "other-thumb"
	must(t, f.s.SaveGrant(f.ctx, other))
	at := T0.Add(time.Hour)
	marked, err := f.s.RevokeIssuerGrant(f.ctx, f.brand.ID, "thumb", "g-up", at)
	must(t, err)
	if !marked {
		t.Fatal("an uploaded grant was not marked")
	}
	marked, err = f.s.RevokeIssuerGrant(f.ctx, f.brand.ID, "thumb", "g-up", at.Add(time.Hour))
	must(t, err)
	if !marked {
		t.Fatal("revoking again did not find the grant")
	}
	// Revoked before it was uploaded.
	marked, err = f.s.RevokeIssuerGrant(f.ctx, f.brand.ID, "thumb", "g-later", at)
	must(t, err)
	if marked {
		t.Fatal("a grant not uploaded yet was reported marked")
	}
	must(t, f.s.SaveGrant(f.ctx, grant("g-later", f.brand.ID, T0.Add(2*time.Hour))))
	got, err := f.s.Grants(f.ctx, f.brand.ID)
	must(t, err)
	want := map[string]time.Time{"thumb/g-up": at, "other-thumb/g-up": {}, "thumb/g-later": at}
	if len(got) != len(want) {
		t.Fatalf("%d grants, want %d", len(got), len(want))
	}
	for _, g := range got {
		if w := want[g.Issuer+"/"+g.JTI]; !g.RevokedAt.Equal(w) {
			t.Errorf("%s/%s revoked at %v, want %v", g.Issuer, g.JTI, g.RevokedAt, w)
		}
	}
	// The bouncer's same-issuer jti is not the brand's business.
	marked, err = f.s.RevokeIssuerGrant(f.ctx, f.bouncer.ID, "other-thumb", "g-up", at)
	must(t, err)
	if marked {
		t.Fatal("a revocation for another agent marked the brand's grant")
	}
}

// testReplaceKey: the key is replaced only when the current one was issued
// before `before`; the old hash stops working at once; an empty hash leaves
// no usable key; another agent's hash conflicts.
func testReplaceKey(t *testing.T, f *fixture) {
	a, err := f.s.Agent(f.ctx, f.brand.ID)
	must(t, err)
	if !a.KeyIssuedAt.Equal(T0) {
		t.Fatalf("key issued at %v, want the registration time %v", a.KeyIssuedAt, T0)
	}
	at := T0.Add(time.Hour)
	ok, err := f.s.ReplaceKey(f.ctx, f.brand.ID, "hash-new", T0, at)
	must(t, err)
	if ok {
		t.Fatal("a key issued at `before` was replaced")
	}
	ok, err = f.s.ReplaceKey(f.ctx, f.brand.ID, "hash-new", T0.Add(time.Second), at)
	must(t, err)
	if !ok {
		t.Fatal("an older key was not replaced")
	}
	_, err = f.s.AgentByKeyHash(f.ctx, f.brand.KeyHash)
	wantErr(t, "old key", err, store.ErrNotFound)
	a, err = f.s.AgentByKeyHash(f.ctx, "hash-new")
	must(t, err)
	if a.ID != f.brand.ID || !a.KeyIssuedAt.Equal(at) {
		t.Fatalf("new key finds %s issued %v", a.ID, a.KeyIssuedAt)
	}
	// A replay of the same revocation (before = T0+1s) changes nothing now.
	ok, err = f.s.ReplaceKey(f.ctx, f.brand.ID, "", T0.Add(time.Second), at.Add(time.Hour))
	must(t, err)
	if ok {
		t.Fatal("a replayed revocation replaced a newer key")
	}
	_, err = f.s.ReplaceKey(f.ctx, f.brand.ID, f.bouncer.KeyHash, time.Time{}, at)
	wantErr(t, "another agent's hash", err, store.ErrConflict)
	_, err = f.s.ReplaceKey(f.ctx, "agt_nobody", "hash-x", time.Time{}, at)
	wantErr(t, "unknown agent", err, store.ErrNotFound)
	ok, err = f.s.ReplaceKey(f.ctx, f.brand.ID, "", time.Time{}, at.Add(time.Minute))
	must(t, err)
	if !ok {
		t.Fatal("disabling did not replace")
	}
	_, err = f.s.AgentByKeyHash(f.ctx, "hash-new")
	wantErr(t, "disabled key", err, store.ErrNotFound)
	_, err = f.s.AgentByKeyHash(f.ctx, "")
	wantErr(t, "empty hash", err, store.ErrNotFound)
}

// testVenueKeyRotate: after a rotation the new key is current and the old
// one is listed, retired, after it.
func testVenueKeyRotate(t *testing.T, f *fixture) {
	first, err := f.s.VenueKey(f.ctx, func() ([]byte, error) { return []byte("key-1"), nil })
	must(t, err)
	at := T0.Add(time.Hour)
	must(t, f.s.RotateVenueKey(f.ctx, []byte("key-2"), at))
	must(t, f.s.RotateVenueKey(f.ctx, []byte("key-3"), at.Add(time.Hour)))
	cur, err := f.s.VenueKey(f.ctx, func() ([]byte, error) { return nil, errors.New("create called with a key stored") })
	must(t, err)
	if string(cur) != "key-3" {
		t.Fatalf("current key %q, want key-3", cur)
	}
	keys, err := f.s.VenueKeys(f.ctx)
	must(t, err)
	var names []string
	for _, k := range keys {
		names = append(names, fmt.Sprintf("%s@%d retired=%v", k.Key, k.ID, !k.RetiredAt.IsZero()))
	}
	want := []string{"key-3@3 retired=false", "key-2@2 retired=true", "key-1@1 retired=true"}
	if !slices.Equal(names, want) || string(first) != "key-1" || !keys[1].RetiredAt.Equal(at.Add(time.Hour)) ||
		!keys[0].CreatedAt.Equal(at.Add(time.Hour)) {
		t.Fatalf("keys %v (retired %v), want %v", names, keys[1].RetiredAt, want)
	}
}

// testLobbyQuotas: pending counts per brand and per bouncer, blocks, live
// negotiations of an agent, and the purge of old requests.
func testLobbyQuotas(t *testing.T, f *fixture) {
	other := f.agent(t, negotiation.RoleBrand, "Other brand")
	p1, p2 := f.pending(t, false), f.pending(t, false)
	unused := f.offer(t, false)
	live := f.live(t, false)
	o := store.Offer{ID: f.id("off"), Brand: other.ID, Bouncer: f.bouncer.ID, Body: []byte(`{}`), CreatedAt: T0}
	must(t, f.s.CreateOffer(f.ctx, o))
	must(t, f.s.CreateNegotiation(f.ctx, negotiation.NewRequest(f.id("neg"), o.ID, o.Body, other.Party(), f.bouncer.Party(), false, T0)))
	pair, total, err := f.s.PendingCounts(f.ctx, f.bouncer.ID, f.brand.ID)
	must(t, err)
	if pair != 2 || total != 3 {
		t.Fatalf("pending counts %d/%d, want 2/3", pair, total)
	}
	if pair, total, err = f.s.PendingCounts(f.ctx, f.brand.ID, f.brand.ID); err != nil || pair != 0 || total != 0 {
		t.Fatalf("pending counts of a brand: %d/%d %v", pair, total, err)
	}
	_, _, err = f.s.Update(f.ctx, p2.ID, func(_ store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
		return st.Decline("busy", T0.Add(time.Second))
	})
	must(t, err)
	if pair, _, _ = f.s.PendingCounts(f.ctx, f.bouncer.ID, f.brand.ID); pair != 1 {
		t.Fatalf("after a decline: %d pending, want 1", pair)
	}

	for _, id := range []string{f.brand.ID, f.bouncer.ID} {
		lives, err := f.s.LiveNegotiations(f.ctx, id)
		must(t, err)
		if len(lives) != 1 || lives[0].ID != live.ID {
			t.Fatalf("live negotiations of %s: %d", id, len(lives))
		}
	}
	if lives, err := f.s.LiveNegotiations(f.ctx, other.ID); err != nil || len(lives) != 0 {
		t.Fatalf("live negotiations of a brand with none: %d %v", len(lives), err)
	}

	blocked, err := f.s.Blocked(f.ctx, f.bouncer.ID, other.ID)
	must(t, err)
	if blocked {
		t.Fatal("blocked before any block")
	}
	must(t, f.s.SetBlocked(f.ctx, f.bouncer.ID, other.ID, true, T0))
	must(t, f.s.SetBlocked(f.ctx, f.bouncer.ID, other.ID, true, T0))
	if blocked, _ = f.s.Blocked(f.ctx, f.bouncer.ID, other.ID); !blocked {
		t.Fatal("not blocked after a block")
	}
	if blocked, _ = f.s.Blocked(f.ctx, f.bouncer.ID, f.brand.ID); blocked {
		t.Fatal("a block reached another brand")
	}
	must(t, f.s.SetBlocked(f.ctx, f.bouncer.ID, other.ID, false, T0))
	if blocked, _ = f.s.Blocked(f.ctx, f.bouncer.ID, other.ID); blocked {
		t.Fatal("still blocked after unblocking")
	}

	n, err := f.s.PurgeRequests(f.ctx, T0)
	must(t, err)
	if n != 0 {
		t.Fatalf("purged %d requests created at the cut-off, want 0", n)
	}
	n, err = f.s.PurgeRequests(f.ctx, T0.Add(time.Second))
	must(t, err)
	if n != 3 {
		t.Fatalf("purged %d requests, want 3 (two pending, one declined)", n)
	}
	for _, id := range []string{p1.ID, p2.ID} {
		_, err := f.s.Negotiation(f.ctx, id)
		wantErr(t, "purged request", err, store.ErrNotFound)
	}
	_, err = f.s.Offer(f.ctx, p1.OfferID)
	wantErr(t, "purged offer", err, store.ErrNotFound)
	_, err = f.s.Offer(f.ctx, unused.ID)
	wantErr(t, "purged unused offer", err, store.ErrNotFound)
	if _, err := f.s.Negotiation(f.ctx, live.ID); err != nil {
		t.Fatalf("a live negotiation was purged: %v", err)
	}
}
