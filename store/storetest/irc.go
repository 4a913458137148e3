package storetest

import (
	"slices"
	"testing"

	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/store"
)

// ircAgent registers an agent bound to a NickServ account.
func (f *fixture) ircAgent(t *testing.T, name, account string, caps ...string) store.Agent {
	t.Helper()
	id := f.id("agt")
	a := store.Agent{ID: id, Name: name, Role: "agent", KeyHash: "hash-" + id, CreatedAt: T0,
		Profile: store.Profile{Description: "desc of " + name},
		IRC:     &store.IRCBinding{Account: account, Nick: "n-" + account, Capabilities: caps, CardURL: "https://example.org/" + account}}
	must(t, f.s.CreateAgent(f.ctx, a))
	return a
}

func testIRCAgents(t *testing.T, f *fixture) {
	a := f.ircAgent(t, "Hazmat Agent", "hazmat", "Hazmat", "chemistry")
	got, err := f.s.AgentByIRCAccount(f.ctx, "hazmat")
	must(t, err)
	sameAgent(t, "by irc account", got, a)
	if got.IRC == nil || got.IRC.Account != "hazmat" || got.IRC.Nick != "n-hazmat" ||
		!slices.Equal(got.IRC.Capabilities, []string{"Hazmat", "chemistry"}) || got.IRC.CardURL != "https://example.org/hazmat" {
		t.Fatalf("irc binding %+v", got.IRC)
	}
	got, err = f.s.Agent(f.ctx, a.ID)
	must(t, err)
	if got.IRC == nil || got.IRC.Account != "hazmat" {
		t.Fatalf("Agent lost the irc binding: %+v", got.IRC)
	}
	// A venue agent has none.
	got, err = f.s.Agent(f.ctx, f.brand.ID)
	must(t, err)
	if got.IRC != nil {
		t.Fatalf("venue agent with irc binding %+v", got.IRC)
	}
	_, err = f.s.AgentByIRCAccount(f.ctx, "nobody")
	wantErr(t, "unknown account", err, store.ErrNotFound)
	_, err = f.s.AgentByIRCAccount(f.ctx, "ha\x00zmat")
	wantErr(t, "NUL account", err, store.ErrNotFound)

	// One agent per account: a second HELLO racing the first loses.
	dup := store.Agent{ID: "agt_dup", Name: "Dup", Role: "agent", KeyHash: "kh-dup", CreatedAt: T0,
		IRC: &store.IRCBinding{Account: "hazmat"}}
	wantErr(t, "same account", f.s.CreateAgent(f.ctx, dup), store.ErrConflict)
	_, err = f.s.Agent(f.ctx, "agt_dup")
	wantErr(t, "refused agent", err, store.ErrNotFound)

	must(t, f.s.SetIRCNick(f.ctx, a.ID, "Hazmat|away"))
	got, err = f.s.AgentByIRCAccount(f.ctx, "hazmat")
	must(t, err)
	if got.IRC.Nick != "Hazmat|away" {
		t.Fatalf("nick %q", got.IRC.Nick)
	}
	wantErr(t, "nick of a venue agent", f.s.SetIRCNick(f.ctx, f.brand.ID, "x"), store.ErrNotFound)
	wantErr(t, "nick of nobody", f.s.SetIRCNick(f.ctx, "agt_nobody", "x"), store.ErrNotFound)
}

func testCapabilityQuery(t *testing.T, f *fixture) {
	f.ircAgent(t, "Hazmat Agent", "hazmat", "Hazmat", "chemistry")
	f.ircAgent(t, "Chem Two", "chem2", "CHEMISTRY")
	f.ircAgent(t, "Plain", "plain")
	names := func(q store.AgentQuery) []string {
		q.Limit = 50
		got, total, err := f.s.Agents(f.ctx, q)
		must(t, err)
		out := make([]string, len(got))
		for i, a := range got {
			out[i] = a.Name
		}
		if total != len(out) {
			t.Fatalf("%+v: total %d, listed %d", q, total, len(out))
		}
		return out
	}
	cases := []struct {
		q    store.AgentQuery
		want []string
	}{
		{store.AgentQuery{Capability: "chemistry"}, []string{"Chem Two", "Hazmat Agent"}},
		{store.AgentQuery{Capability: "HAZMAT"}, []string{"Hazmat Agent"}},
		{store.AgentQuery{Capability: "chem"}, []string{}},
		// A venue agent shows its role as a capability; an IRC agent's role does not.
		{store.AgentQuery{Capability: "Bouncer"}, []string{"Bouncer"}},
		{store.AgentQuery{Capability: negotiation.RoleBrand}, []string{"Brand"}},
		{store.AgentQuery{Capability: "agent"}, []string{}},
		{store.AgentQuery{Capability: "chemistry", Q: "two"}, []string{"Chem Two"}},
		{store.AgentQuery{Q: "desc of"}, []string{"Chem Two", "Hazmat Agent", "Plain"}},
		{store.AgentQuery{}, []string{"Bouncer", "Brand", "Chem Two", "Hazmat Agent", "Plain"}},
	}
	for _, c := range cases {
		if got := names(c.q); !slices.Equal(got, c.want) {
			t.Errorf("%+v: got %q, want %q", c.q, got, c.want)
		}
	}
}
