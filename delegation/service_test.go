package delegation

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/venuehq/venue/directory"
	"github.com/venuehq/venue/grants"
	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/store/memory"
	"github.com/venuehq/venue/wire"
)

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

type fixture struct {
	svc      *Service
	st       *memory.Store
	priv     ed25519.PrivateKey
	agent    store.Agent
	replaced []string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	st := memory.New()
	f := &fixture{st: st}
	f.svc = &Service{Store: st, Agents: &directory.Service{Store: st, Now: func() time.Time { return t0 }}, Rooms: st, Audience: "venue",
		OnKeyReplaced: func(_ context.Context, id string, _ time.Time, _ string) { f.replaced = append(f.replaced, id) }}
	ctx := context.Background()
	for _, id := range []string{"agt_a", "agt_b"} {
		if err := st.CreateAgent(ctx, store.Agent{ID: id, Name: id, Role: "brand", KeyHash: "h" + id, CreatedAt: t0, KeyIssuedAt: t0.Add(-time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	pub, priv, err := grants.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	f.priv = priv
	jwk, _ := json.Marshal(grants.PublicJWK(pub))
	a, err := st.Agent(ctx, "agt_a")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.svc.SetPrincipalKey(ctx, a, jwk, func() (string, error) { return "", nil }, t0); err != nil {
		t.Fatal(err)
	}
	if f.agent, err = st.Agent(ctx, "agt_a"); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) grant(t *testing.T, jti string, s grants.Scope) string {
	t.Helper()
	tok, err := grants.SignGrant(f.priv, grants.GrantClaims{Subject: f.agent.ID, Audience: "venue", IssuedAt: t0, ExpiresAt: t0.Add(time.Hour), JTI: jti, Scope: s})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func code(err error) string {
	var te *grants.TokenError
	if errors.As(err, &te) {
		return te.Code
	}
	var we *wire.Error
	if errors.As(err, &we) {
		return we.Code
	}
	if err != nil {
		return "other: " + err.Error()
	}
	return ""
}

func TestUploadListRevoke(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	b, _ := f.st.Agent(ctx, "agt_b")
	if _, err := f.svc.Upload(ctx, b, "x.y.z", t0); code(err) != wire.CodeNoPrincipalKey {
		t.Fatalf("no principal key: %v", err)
	}
	if _, err := f.svc.Upload(ctx, f.agent, "not-a-jwt", t0); code(err) != grants.CodeMalformed {
		t.Fatalf("malformed token: %v", err)
	}
	if _, err := f.svc.Upload(ctx, f.agent, f.grant(t, "j0", grants.Scope{NegotiationID: "neg_nope"}), t0); code(err) != wire.CodeGrantNegotiation {
		t.Fatalf("foreign negotiation: %v", err)
	}
	rec, err := f.svc.Upload(ctx, f.agent, f.grant(t, "j1", grants.Scope{}), t0)
	if err != nil || rec.JTI != "j1" {
		t.Fatalf("upload: %+v %v", rec, err)
	}
	if _, err := f.svc.Upload(ctx, f.agent, f.grant(t, "j1", grants.Scope{}), t0); code(err) != wire.CodeDuplicateJTI {
		t.Fatalf("same jti twice: %v", err)
	}
	if err := f.svc.Revoke(ctx, f.agent.ID, "nope", t0); code(err) != wire.CodeNotFound {
		t.Fatalf("revoke unknown: %v", err)
	}
	if err := f.svc.Revoke(ctx, f.agent.ID, "j1", t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	items, next, err := f.svc.List(ctx, f.agent, t0.Add(2*time.Minute), "", "")
	if err != nil || len(items) != 1 || items[0]["status"] != "revoked" || items[0]["revoked_at"] == nil || next != "" {
		t.Fatalf("list after revoke: %v %q %v", items, next, err)
	}
}

// TestUploadCapAndListPages: past MaxActiveGrants active grants an upload
// is too_many_grants and stores nothing; a revoked or expired grant frees a
// place; List pages with after/limit and next, refusing bad ones.
func TestUploadCapAndListPages(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.svc.MaxActiveGrants = 3
	ctx := context.Background()
	jtis := []string{"c0", "c1", "c2"}
	for _, jti := range jtis {
		if _, err := f.svc.Upload(ctx, f.agent, f.grant(t, jti, grants.Scope{}), t0); err != nil {
			t.Fatalf("upload %s: %v", jti, err)
		}
	}
	if _, err := f.svc.Upload(ctx, f.agent, f.grant(t, "c3", grants.Scope{}), t0); code(err) != wire.CodeTooManyGrants {
		t.Fatalf("a fourth active grant: %v", err)
	}
	if err := f.svc.Revoke(ctx, f.agent.ID, "c1", t0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Upload(ctx, f.agent, f.grant(t, "c3", grants.Scope{}), t0); err != nil {
		t.Fatalf("after a revocation: %v", err)
	}
	jtis = append(jtis, "c3")

	var seen []string
	after := ""
	for range 3 {
		items, next, err := f.svc.List(ctx, f.agent, t0, after, "3")
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range items {
			seen = append(seen, it["jti"].(string))
		}
		if next == "" {
			break
		}
		after = next
	}
	if len(seen) != len(jtis) || seen[0] != "c0" || seen[3] != "c3" {
		t.Fatalf("paged %v, want %v", seen, jtis)
	}
	for _, bad := range [][2]string{{"x", ""}, {"0", ""}, {"-4", ""}, {"", "0"}, {"", "101"}, {"", "two"}} {
		if _, _, err := f.svc.List(ctx, f.agent, t0, bad[0], bad[1]); code(err) != wire.CodeInvalidArgument {
			t.Fatalf("after=%q limit=%q: %v", bad[0], bad[1], err)
		}
	}
}

func TestSetPrincipalKeyNeedsProof(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	pub2, _, _ := grants.GenerateKey()
	jwk2, _ := json.Marshal(grants.PublicJWK(pub2))
	_, _, err := f.svc.SetPrincipalKey(context.Background(), f.agent, jwk2, func() (string, error) { return "", nil }, t0)
	if code(err) != wire.CodeProofRequired {
		t.Fatalf("replace without proof: %v", err)
	}
	if _, _, err := f.svc.SetPrincipalKey(context.Background(), f.agent, json.RawMessage(`{"kty":"RSA"}`), nil, t0); code(err) != wire.CodeInvalidArgument {
		t.Fatalf("bad JWK: %v", err)
	}
	a, _ := f.st.Agent(context.Background(), f.agent.ID)
	if a.PrincipalThumbprint != f.agent.PrincipalThumbprint {
		t.Fatal("a refused replacement changed the key")
	}
}

func TestDecideRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for _, id := range []string{"x", ".e1", "neg_missing.e1"} {
		if _, err := f.svc.Decide(context.Background(), id, "a.b.c", t0); code(err) != wire.CodeNotFound {
			t.Errorf("Decide(%q) = %v, want not_found", id, err)
		}
	}
	for _, tt := range []struct{ id, neg string }{{"neg_1.e3", "neg_1"}, {"neg.e.e2", "neg.e"}, {"e1", ""}} {
		got, ok := EscalationNegotiation(tt.id)
		if got != tt.neg || ok != (tt.neg != "") {
			t.Errorf("EscalationNegotiation(%q) = %q, %v", tt.id, got, ok)
		}
	}
}

// live puts a live negotiation of agt_a and agt_b with agt_a's proposal of
// cents standing.
func (f *fixture) live(t *testing.T, id string, cents int64) {
	t.Helper()
	if err := f.st.CreateOffer(context.Background(), store.Offer{ID: "off_" + id, Brand: "agt_a", Bouncer: "agt_b", Body: json.RawMessage(`{}`), CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	st := negotiation.NewRequest(id, "off_"+id, json.RawMessage(`{}`), negotiation.Party{AgentID: "agt_a"}, negotiation.Party{AgentID: "agt_b"}, false, t0)
	st.Status = negotiation.StatusLive
	st.Standing = &negotiation.Proposal{ID: id + ".p1", By: "agt_a", AmountCents: cents, Terms: json.RawMessage(`{}`)}
	if err := f.st.CreateNegotiation(context.Background(), st); err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) revocation(t *testing.T, c grants.RevocationClaims) string {
	t.Helper()
	c.Subject, c.Audience, c.IssuedAt, c.ExpiresAt = f.agent.ID, "venue", t0, t0.Add(time.Hour)
	tok, err := grants.SignRevocation(f.priv, c)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// A principal's revocation withdraws the standing proposals the remaining
// authority does not cover, and only those (the one shared check).
func TestPrincipalRevokeWithdraws(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	f.live(t, "neg_in", 40000)  // a grant scoped to it stays
	f.live(t, "neg_out", 90000) // only the general grant covered it
	if _, err := f.svc.Upload(ctx, f.agent, f.grant(t, "scoped", grants.Scope{NegotiationID: "neg_in"}), t0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Upload(ctx, f.agent, f.grant(t, "big", grants.Scope{}), t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	now := t0.Add(time.Minute)
	r, err := f.svc.PrincipalRevoke(ctx, f.revocation(t, grants.RevocationClaims{Kind: grants.RevokeGrant, GrantJTI: "big"}), now)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Uploaded || len(r.Withdrawn) != 1 || r.Withdrawn[0] != "neg_out.p1" {
		t.Fatalf("revocation: %+v", r)
	}
	for id, want := range map[string]bool{"neg_in": true, "neg_out": false} {
		st, _ := f.st.Negotiation(ctx, id)
		if (st.Standing != nil) != want {
			t.Errorf("%s standing = %v, want %v", id, st.Standing, want)
		}
	}
	if len(f.replaced) != 0 {
		t.Fatal("a grant revocation closed sockets")
	}
}

func TestPrincipalRevokeAPIKey(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	r, err := f.svc.PrincipalRevoke(context.Background(), f.revocation(t, grants.RevocationClaims{Kind: grants.RevokeAPIKey}), t0.Add(time.Second))
	if err != nil || !r.Replaced || r.Kind != grants.RevokeAPIKey {
		t.Fatalf("%+v %v", r, err)
	}
	if len(f.replaced) != 1 || f.replaced[0] != "agt_a" {
		t.Fatalf("OnKeyReplaced calls: %v", f.replaced)
	}
	if _, err := f.svc.PrincipalRevoke(context.Background(), "garbage", t0); code(err) != grants.CodeMalformed {
		t.Fatalf("garbage token: %v", err)
	}
}
