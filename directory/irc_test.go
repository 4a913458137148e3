package directory_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/venuehq/venue/directory"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/store/memory"
)

func TestRegisterIRC(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	s := &directory.Service{Store: memory.New(), Now: func() time.Time { return now }}
	a, err := s.RegisterIRC(t.Context(), directory.IRCRegistration{Account: "alice", Nick: "Alice", Name: "A",
		Capabilities: []string{"x"}, CardURL: "https://example.org/c"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Role != directory.RoleAgent || a.IRC == nil || a.IRC.Account != "alice" || a.KeyHash == "" || !a.CreatedAt.Equal(now) {
		t.Fatalf("agent %+v", a)
	}
	got, err := s.AgentByIRCAccount(t.Context(), "alice")
	if err != nil || got.ID != a.ID {
		t.Fatalf("by account %+v, %v", got, err)
	}
	if _, err := s.RegisterIRC(t.Context(), directory.IRCRegistration{Account: "alice", Name: "B"}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("second registration of the account: %v", err)
	}
	if err := s.SetIRCNick(t.Context(), a.ID, "Alice2"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.AgentByIRCAccount(t.Context(), "alice"); got.IRC.Nick != "Alice2" {
		t.Fatalf("nick %q", got.IRC.Nick)
	}
}

// The account bindings the handshake reads: the agent of an account, the
// account of an agent; none for a venue agent or an unknown one.
func TestIRCAccounts(t *testing.T) {
	t.Parallel()
	st := memory.New()
	s := &directory.Service{Store: st, Now: time.Now}
	a, err := s.RegisterIRC(t.Context(), directory.IRCRegistration{Account: "alice", Nick: "Alice", Name: "A"})
	if err != nil {
		t.Fatal(err)
	}
	venueAgent := store.Agent{ID: "agt_v", Name: "V", Role: "brand", KeyHash: "kh", CreatedAt: time.Now()}
	if err := st.CreateAgent(t.Context(), venueAgent); err != nil {
		t.Fatal(err)
	}
	acc := directory.IRCAccounts{Store: st}
	for _, c := range []struct {
		account string
		want    string
	}{{"alice", "[" + a.ID + "]"}, {"bob", "[]"}, {"", "[]"}} {
		got, err := acc.AgentsOf(t.Context(), c.account)
		if err != nil || fmt.Sprint(got) != c.want {
			t.Errorf("AgentsOf(%q) = %v, %v; want %s", c.account, got, err, c.want)
		}
	}
	for _, c := range []struct{ id, want string }{{a.ID, "[alice]"}, {"agt_v", "[]"}, {"agt_none", "[]"}} {
		got, err := acc.AccountsOf(t.Context(), c.id)
		if err != nil || fmt.Sprint(got) != c.want {
			t.Errorf("AccountsOf(%q) = %v, %v; want %s", c.id, got, err, c.want)
		}
	}
}
