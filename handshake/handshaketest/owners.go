package handshaketest

import (
	"errors"
	"reflect"
	"testing"

	"github.com/venuehq/venue/handshake"
	"github.com/venuehq/venue/wire"
)

// testOwners: owner records round-trip (pending, then confirmed), OwnedBy
// lists confirmed ones only, a failed transaction leaves none, and the
// Service's rules on the store: the agent's own account owns it until the
// named owner confirms, then nothing.
func testOwners(t *testing.T, s handshake.Store) {
	pending := handshake.Owner{AgentID: "b", Account: "alice", NamedAt: T0}
	do(t, s, func(tx handshake.Tx) error {
		must(t, tx.SetOwner(pending))
		must(t, tx.SetOwner(handshake.Owner{AgentID: "c", Account: "alice", NamedAt: T0, ConfirmedAt: T0.Add(1)}))
		return tx.SetOwner(handshake.Owner{AgentID: "a", Account: "alice", NamedAt: T0, ConfirmedAt: T0})
	})
	do(t, s, func(tx handshake.Tx) error {
		if o, err := tx.Owner("b"); err != nil || !reflect.DeepEqual(o, pending) {
			t.Errorf("pending owner %+v %v", o, err)
		}
		if ids, err := tx.OwnedBy("alice"); err != nil || !reflect.DeepEqual(ids, []string{"a", "c"}) {
			t.Errorf("owned by alice %v %v", ids, err)
		}
		if _, err := tx.Owner("zz"); !errors.Is(err, handshake.ErrNotFound) {
			t.Errorf("no owner: %v", err)
		}
		must(t, tx.DeleteOwner("a"))
		return tx.DeleteOwner("zz")
	})
	boom := errors.New("boom")
	if err := s.Atomically(t.Context(), nil, func(tx handshake.Tx) error {
		must(t, tx.DeleteOwner("c"))
		must(t, tx.SetOwner(handshake.Owner{AgentID: "b", Account: "mallory", NamedAt: T0}))
		return boom
	}); !errors.Is(err, boom) {
		t.Fatal(err)
	}
	do(t, s, func(tx handshake.Tx) error {
		if ids, _ := tx.OwnedBy("alice"); !reflect.DeepEqual(ids, []string{"c"}) {
			t.Errorf("after the rollback: owned by alice %v", ids)
		}
		if o, _ := tx.Owner("b"); o.Account != "alice" {
			t.Errorf("after the rollback: owner of b %+v", o)
		}
		must(t, tx.DeleteOwner("b"))
		return tx.DeleteOwner("c")
	})

	ctx := t.Context()
	svc := &handshake.Service{Store: s, Agents: agents{"a": {ID: "a", Name: "A"}, "b": {ID: "b", Name: "B"}},
		Accounts: handshake.StaticAccounts{"bacct": {"b"}}, NewID: func(p string) string { return p + "_1" }}
	code := func(err error) string {
		var we *wire.Error
		if errors.As(err, &we) {
			return we.Code
		}
		return ""
	}
	owned := func(account string, want ...string) {
		t.Helper()
		ids, err := svc.OwnedAgents(ctx, account)
		if err != nil || len(ids) != len(want) || len(want) > 0 && !reflect.DeepEqual(ids, want) {
			t.Fatalf("%s owns %v (%v), want %v", account, ids, err, want)
		}
	}
	if v, _ := svc.OwnerOf(ctx, "b"); v.Name != "bacct" || v.Verification != handshake.OwnerSelf {
		t.Fatalf("no owner named: %+v", v)
	}
	if _, err := svc.NameOwner(ctx, "b", "bacct", T0); code(err) != handshake.CodeInvalidArgument {
		t.Fatalf("its own account: %v", err)
	}
	if v, err := svc.NameOwner(ctx, "b", "alice", T0); err != nil || v.Verification != handshake.OwnerPending {
		t.Fatalf("named %+v %v", v, err)
	}
	owned("bacct", "b") // until alice confirms
	owned("alice")
	if _, err := svc.ConfirmOwner(ctx, "mallory", "b", T0); code(err) != handshake.CodeNotFound {
		t.Fatalf("confirmed by another: %v", err)
	}
	if v, err := svc.ConfirmOwner(ctx, "alice", "b", T0); err != nil || v != (handshake.OwnerView{Name: "alice", Verification: handshake.OwnerConfirmed}) {
		t.Fatalf("confirmed %+v %v", v, err)
	}
	owned("bacct")
	owned("alice", "b")
	if _, err := svc.NameOwner(ctx, "b", "mallory", T0); code(err) != handshake.CodeNotAuthorized {
		t.Fatalf("the agent replaces a confirmed owner: %v", err)
	}
	// The owner's policy binds the agent; the agent's own account cannot
	// sign in to the portal.
	if _, err := svc.SetPolicy(ctx, handshake.OwnerActor("alice"), "b", handshake.PolicyDeny, T0); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.SetPolicy(ctx, handshake.AgentActor("b"), "b", handshake.PolicyAutoAccept, T0); code(err) != handshake.CodeNotAuthorized {
		t.Fatalf("the agent lifts its owner's deny: %v", err)
	}
	if _, err := svc.SetPolicy(ctx, handshake.OwnerActor("bacct"), "b", handshake.PolicyAutoAccept, T0); code(err) != handshake.CodeNotAuthorized {
		t.Fatalf("the agent's account as owner: %v", err)
	}
	p := &handshake.Portal{Service: svc}
	st, err := p.Start(ctx, "192.0.2.1", "test", T0)
	must(t, err)
	if _, err := p.Login(ctx, "bacct", st.Code, T0); code(err) != handshake.CodeNotAuthorized {
		t.Fatalf("LOGIN from the agent's account: %v", err)
	}
	if _, err := p.Login(ctx, "alice", st.Code, T0); err != nil {
		t.Fatalf("LOGIN from the owner: %v", err)
	}
	if _, err := svc.Disown(ctx, "bacct", "b", T0); code(err) != handshake.CodeNotFound {
		t.Fatalf("disowned by the agent's account: %v", err)
	}
	if v, err := svc.Disown(ctx, "alice", "b", T0); err != nil || v.Verification != handshake.OwnerSelf {
		t.Fatalf("disown %+v %v", v, err)
	}
	owned("bacct", "b")
}
