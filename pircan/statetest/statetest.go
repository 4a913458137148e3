// Package statetest is the contract of pircan.State: one suite that the
// memory and Postgres implementations pass.
package statetest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/venuehq/venue/pircan"
)

// T0 is the suite's clock: whole seconds.
var T0 = time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)

// Run runs the contract; newState returns an empty State for one test.
func Run(t *testing.T, newState func(t *testing.T) pircan.State) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, ctx context.Context, s pircan.State)
	}{
		{"Channels", testChannels},
		{"Membership", testMembership},
		{"Hit", testHit},
		{"HitConcurrent", testHitConcurrent},
		{"Charge", testCharge},
		{"Names", testNames},
		{"Accounts", testAccounts},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, t.Context(), newState(t))
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func names(cs []pircan.Channel) []string {
	out := []string{}
	for _, c := range cs {
		out = append(out, c.Name)
	}
	return out
}

func testChannels(t *testing.T, ctx context.Context, s pircan.State) {
	must(t, s.PutChannel(ctx, pircan.Channel{Name: "#Hazmat", Topic: "Chemical releases"}, T0))
	must(t, s.PutChannel(ctx, pircan.Channel{Name: "#agents", Topic: "The lobby"}, T0))
	must(t, s.PutChannel(ctx, pircan.Channel{Name: "#secret", Private: true, Topic: "hush"}, T0))
	c, err := s.Channel(ctx, pircan.ChannelKey("#HAZMAT"))
	must(t, err)
	if c.Name != "#Hazmat" || c.Private || c.Topic != "Chemical releases" || c.Members != 0 {
		t.Fatalf("channel %+v", c)
	}
	// Update in place.
	must(t, s.PutChannel(ctx, pircan.Channel{Name: "#hazmat", Topic: "Spills"}, T0))
	c, err = s.Channel(ctx, "#hazmat")
	must(t, err)
	if c.Name != "#hazmat" || c.Topic != "Spills" {
		t.Fatalf("updated channel %+v", c)
	}
	got, total, err := s.Channels(ctx, pircan.ChannelQuery{Limit: 20})
	must(t, err)
	if !slices.Equal(names(got), []string{"#agents", "#hazmat"}) || total != 2 {
		t.Fatalf("public channels %q total %d", names(got), total)
	}
	got, total, err = s.Channels(ctx, pircan.ChannelQuery{Q: "SPILL", Limit: 20})
	must(t, err)
	if !slices.Equal(names(got), []string{"#hazmat"}) || total != 1 {
		t.Fatalf("q on topic: %q %d", names(got), total)
	}
	got, total, err = s.Channels(ctx, pircan.ChannelQuery{Limit: 1, Offset: 1})
	must(t, err)
	if !slices.Equal(names(got), []string{"#hazmat"}) || total != 2 {
		t.Fatalf("page: %q %d", names(got), total)
	}
	_, err = s.Channel(ctx, "#nope")
	if !errors.Is(err, pircan.ErrNoChannel) {
		t.Fatalf("unknown channel: %v", err)
	}
	must(t, s.DeleteChannel(ctx, "#hazmat"))
	if err := s.DeleteChannel(ctx, "#hazmat"); !errors.Is(err, pircan.ErrNoChannel) {
		t.Fatalf("delete twice: %v", err)
	}
	if _, err = s.Channel(ctx, "#hazmat"); !errors.Is(err, pircan.ErrNoChannel) {
		t.Fatalf("deleted channel: %v", err)
	}
}

func testMembership(t *testing.T, ctx context.Context, s pircan.State) {
	must(t, s.PutChannel(ctx, pircan.Channel{Name: "#pub"}, T0))
	must(t, s.PutChannel(ctx, pircan.Channel{Name: "#priv", Private: true}, T0))
	must(t, s.AddMember(ctx, "#pub", "agt_a", T0))
	must(t, s.AddMember(ctx, "#pub", "agt_a", T0)) // idempotent
	must(t, s.AddMember(ctx, "#pub", "agt_b", T0))
	c, err := s.Channel(ctx, "#pub")
	must(t, err)
	if c.Members != 2 {
		t.Fatalf("members %d", c.Members)
	}
	if err := s.AddMember(ctx, "#nope", "agt_a", T0); !errors.Is(err, pircan.ErrNoChannel) {
		t.Fatalf("member of nothing: %v", err)
	}
	if err := s.Invite(ctx, "#nope", "agt_a", T0); !errors.Is(err, pircan.ErrNoChannel) {
		t.Fatalf("invite to nothing: %v", err)
	}
	ok, err := s.Invited(ctx, "#priv", "agt_a")
	must(t, err)
	if ok {
		t.Fatal("invited before Invite")
	}
	for _, who := range []string{"agt_a", "agt_b", ""} {
		got, _, err := s.Channels(ctx, pircan.ChannelQuery{AgentID: who, Limit: 20})
		must(t, err)
		if !slices.Equal(names(got), []string{"#pub"}) {
			t.Fatalf("%q sees %q before any invitation", who, names(got))
		}
	}
	got, total, err := s.Channels(ctx, pircan.ChannelQuery{All: true, Limit: 20})
	must(t, err)
	if !slices.Equal(names(got), []string{"#priv", "#pub"}) || total != 2 {
		t.Fatalf("all channels %q %d", names(got), total)
	}
	must(t, s.Invite(ctx, "#priv", "agt_a", T0))
	must(t, s.Invite(ctx, "#priv", "agt_a", T0))
	ok, err = s.Invited(ctx, "#priv", "agt_a")
	must(t, err)
	if !ok {
		t.Fatal("not invited after Invite")
	}
	got, total, err = s.Channels(ctx, pircan.ChannelQuery{AgentID: "agt_a", Limit: 20})
	must(t, err)
	if !slices.Equal(names(got), []string{"#priv", "#pub"}) || total != 2 {
		t.Fatalf("invited agent sees %q %d", names(got), total)
	}
	got, _, err = s.Channels(ctx, pircan.ChannelQuery{AgentID: "agt_b", Limit: 20})
	must(t, err)
	if !slices.Equal(names(got), []string{"#pub"}) {
		t.Fatalf("other agent sees %q", names(got))
	}
	// A member (not invited) also sees it.
	must(t, s.AddMember(ctx, "#priv", "agt_c", T0))
	got, _, err = s.Channels(ctx, pircan.ChannelQuery{AgentID: "agt_c", Limit: 20})
	must(t, err)
	if !slices.Equal(names(got), []string{"#priv", "#pub"}) {
		t.Fatalf("member sees %q", names(got))
	}
}

func testHit(t *testing.T, ctx context.Context, s pircan.State) {
	w1, w2 := T0, T0.Add(time.Minute)
	for i := 1; i <= 3; i++ {
		n, err := s.Hit(ctx, "acct:alice", w1)
		must(t, err)
		if n != i {
			t.Fatalf("hit %d counted %d", i, n)
		}
	}
	n, err := s.Hit(ctx, "acct:bob", w1)
	must(t, err)
	if n != 1 {
		t.Fatalf("another key counted %d", n)
	}
	n, err = s.Hit(ctx, "acct:alice", w2)
	must(t, err)
	if n != 1 {
		t.Fatalf("new window counted %d", n)
	}
	// A node whose clock is behind counts in the current window.
	n, err = s.Hit(ctx, "acct:alice", w1)
	must(t, err)
	if n != 2 {
		t.Fatalf("late hit counted %d", n)
	}
	// Pruning forgets old windows only: bob's (w1) goes, alice's (w2) stays.
	must(t, s.PruneWindows(ctx, w2))
	n, err = s.Hit(ctx, "acct:alice", w2)
	must(t, err)
	if n != 3 {
		t.Fatalf("pruning reset a current window: %d", n)
	}
	n, err = s.Hit(ctx, "acct:bob", w1)
	must(t, err)
	if n != 1 {
		t.Fatalf("pruned window still counted: %d", n)
	}
}

// Charge counts n at once, in the window Hit counts in.
func testCharge(t *testing.T, ctx context.Context, s pircan.State) {
	w1, w2 := T0, T0.Add(time.Minute)
	n, err := s.Charge(ctx, "acct:carol", w1, 4)
	must(t, err)
	if n != 4 {
		t.Fatalf("a first charge of 4 counted %d", n)
	}
	if n, err = s.Hit(ctx, "acct:carol", w1); err != nil || n != 5 {
		t.Fatalf("hit after a charge of 4 counted %d (%v)", n, err)
	}
	if n, err = s.Charge(ctx, "acct:carol", w1, 3); err != nil || n != 8 {
		t.Fatalf("a second charge counted %d (%v)", n, err)
	}
	if n, err = s.Charge(ctx, "acct:carol", w2, 2); err != nil || n != 2 {
		t.Fatalf("a charge in a new window counted %d (%v)", n, err)
	}
}

// The first claim of a name key holds it; later claims return the holder.
func testNames(t *testing.T, ctx context.Context, s pircan.State) {
	if h, err := s.NameHolder(ctx, "ann"); err != nil || h != "" {
		t.Fatalf("holder of an unclaimed key %q (%v)", h, err)
	}
	if h, err := s.ClaimName(ctx, "ann", "agt_1", T0); err != nil || h != "agt_1" {
		t.Fatalf("first claim %q (%v)", h, err)
	}
	if h, err := s.ClaimName(ctx, "ann", "agt_2", T0); err != nil || h != "agt_1" {
		t.Fatalf("second claim %q (%v)", h, err)
	}
	if h, err := s.NameHolder(ctx, "ann"); err != nil || h != "agt_1" {
		t.Fatalf("holder %q (%v)", h, err)
	}
}

func testHitConcurrent(t *testing.T, ctx context.Context, s pircan.State) {
	const n = 40
	seen := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			c, err := s.Hit(ctx, "unidentified", T0)
			if err != nil {
				t.Error(err)
			}
			seen[i] = c
		})
	}
	wg.Wait()
	slices.Sort(seen)
	for i, c := range seen {
		if c != i+1 {
			t.Fatalf("concurrent hits counted %v", seen)
		}
	}
}

// testAccounts: the first account id is kept, the same again passes,
// another is refused (and pending) until ConfirmAccount adopts it.
func testAccounts(t *testing.T, ctx context.Context, s pircan.State) {
	check := func(account, id string, want bool) {
		t.Helper()
		if ok, err := s.CheckAccount(ctx, account, id, T0); err != nil || ok != want {
			t.Fatalf("CheckAccount(%s, %s) = %v (%v), want %v", account, id, ok, err, want)
		}
	}
	if ok, err := s.ConfirmAccount(ctx, "ann", T0); err != nil || ok {
		t.Fatalf("confirm of an unknown account %v %v", ok, err)
	}
	check("ann", "101", true)
	check("ann", "101", true)
	check("bob", "202", true)
	if ok, err := s.ConfirmAccount(ctx, "ann", T0); err != nil || ok {
		t.Fatalf("confirm with none pending %v %v", ok, err)
	}
	check("ann", "999", false)
	check("ann", "999", false)
	check("ann", "101", true) // the first registration is still itself
	check("bob", "202", true)
	if ok, err := s.ConfirmAccount(ctx, "ann", T0.Add(time.Hour)); err != nil || !ok {
		t.Fatalf("confirm %v %v", ok, err)
	}
	check("ann", "999", true)
	check("ann", "101", false)
}
