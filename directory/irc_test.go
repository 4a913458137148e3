package directory_test

import (
	"errors"
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
