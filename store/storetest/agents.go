package storetest

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/store"
)

func testAgents(t *testing.T, f *fixture) {
	a := store.Agent{
		ID: "agt_x", Name: "Ada Lovelace", Role: negotiation.RoleBouncer, KeyHash: "kh-x",
		PrincipalKey:        json.RawMessage(`{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}`),
		PrincipalThumbprint: "thumb", Reputation: 3, CreatedAt: T0,
		Profile: store.Profile{Description: "Newsletter", Categories: []string{"primary_slot"}, Audience: json.RawMessage(`{"size":12000}`)},
	}
	must(t, f.s.CreateAgent(f.ctx, a))
	got, err := f.s.Agent(f.ctx, a.ID)
	must(t, err)
	sameAgent(t, "Agent", got, a)
	got, err = f.s.AgentByKeyHash(f.ctx, "kh-x")
	must(t, err)
	sameAgent(t, "AgentByKeyHash", got, a)

	// A minimal agent reads back with empty optional fields.
	got, err = f.s.Agent(f.ctx, f.brand.ID)
	must(t, err)
	sameAgent(t, "minimal agent", got, f.brand)
	if len(got.PrincipalKey) != 0 || got.PrincipalThumbprint != "" {
		t.Fatalf("minimal agent has a principal key %q / %q", got.PrincipalKey, got.PrincipalThumbprint)
	}
}

func testAgentConflicts(t *testing.T, f *fixture) {
	dupID := store.Agent{ID: f.brand.ID, Name: "Other", Role: negotiation.RoleBrand, KeyHash: "kh-other", CreatedAt: T0}
	wantErr(t, "same id", f.s.CreateAgent(f.ctx, dupID), store.ErrConflict)
	dupKey := store.Agent{ID: "agt_new", Name: "Other", Role: negotiation.RoleBrand, KeyHash: f.brand.KeyHash, CreatedAt: T0}
	wantErr(t, "same key hash", f.s.CreateAgent(f.ctx, dupKey), store.ErrConflict)
	_, err := f.s.Agent(f.ctx, "agt_new")
	wantErr(t, "refused agent", err, store.ErrNotFound)
}

func testProfile(t *testing.T, f *fixture) {
	p := store.Profile{Description: "Tech newsletter, 40k readers", Categories: []string{"primary_slot", "footer"},
		Audience: json.RawMessage(`{"readers":40000,"regions":["eu","us"]}`)}
	must(t, f.s.SetProfile(f.ctx, f.bouncer.ID, p))
	got, err := f.s.Agent(f.ctx, f.bouncer.ID)
	must(t, err)
	sameJSON(t, "profile", got.Profile, p)
	if got.Name != f.bouncer.Name || got.Role != f.bouncer.Role {
		t.Fatalf("SetProfile changed name/role: %+v", got)
	}
	// Replace, not merge.
	must(t, f.s.SetProfile(f.ctx, f.bouncer.ID, store.Profile{Description: "short"}))
	got, err = f.s.Agent(f.ctx, f.bouncer.ID)
	must(t, err)
	if got.Profile.Description != "short" || len(got.Profile.Categories) != 0 || len(got.Profile.Audience) != 0 {
		t.Fatalf("profile after replace: %+v", got.Profile)
	}
	wantErr(t, "unknown agent", f.s.SetProfile(f.ctx, "agt_nobody", p), store.ErrNotFound)
}

func testPrincipalKey(t *testing.T, f *fixture) {
	k1 := json.RawMessage(`{"kty":"OKP","crv":"Ed25519","x":"AAAA"}`)
	k2 := json.RawMessage(`{"kty":"OKP","crv":"Ed25519","x":"BBBB"}`)
	must(t, f.s.SetPrincipalKey(f.ctx, f.brand.ID, k1, "t1"))
	must(t, f.s.SetPrincipalKey(f.ctx, f.brand.ID, k2, "t2")) // rotation
	got, err := f.s.Agent(f.ctx, f.brand.ID)
	must(t, err)
	if string(got.PrincipalKey) != string(k2) || got.PrincipalThumbprint != "t2" {
		t.Fatalf("principal key %s / %s, want %s / t2", got.PrincipalKey, got.PrincipalThumbprint, k2)
	}
	wantErr(t, "unknown agent", f.s.SetPrincipalKey(f.ctx, "agt_nobody", k1, "t1"), store.ErrNotFound)
}

func testAgentsQuery(t *testing.T, f *fixture) {
	mk := func(name string, rep int, desc string, cats ...string) store.Agent {
		a := store.Agent{ID: f.id("agt"), Name: name, Role: negotiation.RoleBouncer, Reputation: rep, CreatedAt: T0,
			Profile: store.Profile{Description: desc, Categories: cats}}
		a.KeyHash = "hash-" + a.ID
		must(t, f.s.CreateAgent(f.ctx, a))
		return a
	}
	// f.bouncer is "Bouncer", reputation 0, no profile.
	alpha := mk("alpha", 5, "Weekly digest on GARDENING", "primary_slot")
	beta := mk("Beta", 5, "", "footer", "primary_slot")
	mk("ÉCOLE des chefs", 2, "cuisine")
	mk("zed", 9, "podcasts and more", "audio")
	mk("Low", -3, "")
	// Another brand never shows among bouncers.
	f.agent(t, negotiation.RoleBrand, "alpha brand")

	ids := func(as []store.Agent) []string {
		out := make([]string, len(as))
		for i, a := range as {
			out[i] = a.Name
		}
		return out
	}
	cases := []struct {
		name  string
		q     store.AgentQuery
		want  []string
		total int
	}{
		// Reputation descending, then name bytewise ("Beta" < "alpha").
		{"all", store.AgentQuery{Role: negotiation.RoleBouncer, Limit: 50}, []string{"zed", "Beta", "alpha", "ÉCOLE des chefs", "Bouncer", "Low"}, 6},
		{"page", store.AgentQuery{Role: negotiation.RoleBouncer, Limit: 2, Offset: 1}, []string{"Beta", "alpha"}, 6},
		{"past the end", store.AgentQuery{Role: negotiation.RoleBouncer, Limit: 5, Offset: 10}, nil, 6},
		{"category", store.AgentQuery{Role: negotiation.RoleBouncer, Category: "primary_slot", Limit: 50}, []string{"Beta", "alpha"}, 2},
		{"category is exact", store.AgentQuery{Role: negotiation.RoleBouncer, Category: "primary", Limit: 50}, nil, 0},
		{"q in name, any case", store.AgentQuery{Role: negotiation.RoleBouncer, Q: "ALP", Limit: 50}, []string{"alpha"}, 1},
		{"q in description", store.AgentQuery{Role: negotiation.RoleBouncer, Q: "gardening", Limit: 50}, []string{"alpha"}, 1},
		{"q non-ASCII any case", store.AgentQuery{Role: negotiation.RoleBouncer, Q: "école", Limit: 50}, []string{"ÉCOLE des chefs"}, 1},
		{"q is a substring, not a pattern", store.AgentQuery{Role: negotiation.RoleBouncer, Q: "%", Limit: 50}, nil, 0},
		{"q and category", store.AgentQuery{Role: negotiation.RoleBouncer, Q: "e", Category: "footer", Limit: 50}, []string{"Beta"}, 1},
		{"brands", store.AgentQuery{Role: negotiation.RoleBrand, Limit: 50}, []string{"Brand", "alpha brand"}, 2},
		{"any role", store.AgentQuery{Q: "alpha", Limit: 50}, []string{"alpha", "alpha brand"}, 2},
	}
	for _, c := range cases {
		got, total, err := f.s.Agents(f.ctx, c.q)
		must(t, err)
		if !slices.Equal(ids(got), c.want) || total != c.total {
			t.Errorf("%s: got %q total %d, want %q total %d", c.name, ids(got), total, c.want, c.total)
		}
	}
	got, _, err := f.s.Agents(f.ctx, store.AgentQuery{Role: negotiation.RoleBouncer, Category: "footer", Limit: 1})
	must(t, err)
	if len(got) != 1 {
		t.Fatalf("footer: %d agents", len(got))
	}
	sameAgent(t, "listed agent", got[0], beta)

	// A profile change moves an agent in and out of category and q matches.
	must(t, f.s.SetProfile(f.ctx, alpha.ID, store.Profile{Description: "now about cars", Categories: []string{"footer"}}))
	got, total, err := f.s.Agents(f.ctx, store.AgentQuery{Role: negotiation.RoleBouncer, Category: "footer", Q: "CARS", Limit: 50})
	must(t, err)
	if total != 1 || len(got) != 1 || got[0].ID != alpha.ID {
		t.Fatalf("after profile change: %q total %d", ids(got), total)
	}
}

func testOffers(t *testing.T, f *fixture) {
	o := f.offer(t, true)
	got, err := f.s.Offer(f.ctx, o.ID)
	must(t, err)
	if got.ID != o.ID || got.Brand != o.Brand || got.Bouncer != o.Bouncer || !got.Arena || !got.CreatedAt.Equal(o.CreatedAt) || got.NegotiationID != "" {
		t.Fatalf("offer %+v, want %+v", got, o)
	}
	if string(got.Body) != string(o.Body) { // the exact bytes
		t.Fatalf("offer body %s, want %s", got.Body, o.Body)
	}
	wantErr(t, "same id", f.s.CreateOffer(f.ctx, o), store.ErrConflict)
	_, err = f.s.Offer(f.ctx, "off_nope")
	wantErr(t, "unknown offer", err, store.ErrNotFound)
}

// sameAgent compares what a store returns with what went in.
func sameAgent(t *testing.T, what string, got, want store.Agent) {
	t.Helper()
	if got.ID != want.ID || got.Name != want.Name || got.Role != want.Role || got.KeyHash != want.KeyHash ||
		got.PrincipalThumbprint != want.PrincipalThumbprint || got.Reputation != want.Reputation ||
		!got.CreatedAt.Equal(want.CreatedAt) {
		t.Fatalf("%s: got %+v, want %+v", what, got, want)
	}
	if string(got.PrincipalKey) != string(want.PrincipalKey) {
		t.Fatalf("%s: principal key %s, want %s", what, got.PrincipalKey, want.PrincipalKey)
	}
	sameJSON(t, what+": profile", got.Profile, want.Profile)
}
