package grants

import (
	"encoding/json"
	"errors"
	"testing"
	"time"
)

func record(t *testing.T, jti, iss string, iat time.Time, negID string, budget *int64) Record {
	t.Helper()
	s := Scope{NegotiationID: negID, BudgetCents: budget}
	b, err := json.Marshal(&s)
	if err != nil {
		t.Fatal(err)
	}
	return Record{JTI: jti, Issuer: iss, IssuedAt: iat, ExpiresAt: iat.Add(24 * time.Hour), NegotiationID: negID, Scope: b}
}

func cents(n int64) *int64 { return &n }

func TestAuthorityPick(t *testing.T) {
	t.Parallel()
	now := checkNow
	old, newer := now.Add(-2*time.Hour), now.Add(-time.Hour)
	tests := []struct {
		name            string
		held            Held
		negID           string
		wantJTI         string
		wantBudget      string
		wantBudgetCents int64
		why             func(error) bool
	}{
		{name: "none ever", held: Held{AgentID: "a", Thumbprint: "k"}, wantJTI: "", why: func(e error) bool { return e == nil }},
		{name: "newest general", held: Held{AgentID: "a", Thumbprint: "k", Records: []Record{
			record(t, "g-new", "k", newer, "", nil), record(t, "g-old", "k", old, "", nil)}}, wantJTI: "g-new"},
		{name: "scoped wins over general", negID: "neg_1", held: Held{AgentID: "a", Thumbprint: "k", Records: []Record{
			record(t, "g", "k", newer, "", nil), record(t, "s", "k", old, "neg_1", nil)}}, wantJTI: "s"},
		{name: "scoped for another negotiation never applies", negID: "neg_1", held: Held{AgentID: "a", Thumbprint: "k", Records: []Record{
			record(t, "s", "k", old, "neg_2", nil)}}, wantJTI: "", why: func(e error) bool { return e == nil }},
		{name: "scoped without budget charges the general budget", negID: "neg_1", held: Held{AgentID: "a", Thumbprint: "k", Records: []Record{
			record(t, "g", "k", old, "", cents(500)), record(t, "s", "k", newer, "neg_1", nil)}},
			wantJTI: "s", wantBudget: "g", wantBudgetCents: 500},
		{name: "scoped with its own budget", negID: "neg_1", held: Held{AgentID: "a", Thumbprint: "k", Records: []Record{
			record(t, "g", "k", old, "", cents(500)), record(t, "s", "k", newer, "neg_1", cents(9))}},
			wantJTI: "s", wantBudget: "s", wantBudgetCents: 9},
		{name: "revoked", held: Held{AgentID: "a", Thumbprint: "k", Records: []Record{func() Record {
			r := record(t, "g", "k", old, "", nil)
			r.RevokedAt = now
			return r
		}()}}, why: func(e error) bool { return errors.Is(e, ErrRevoked) }},
		{name: "key rotated", held: Held{AgentID: "a", Thumbprint: "k2", Records: []Record{record(t, "g", "k", old, "", nil)}},
			why: func(e error) bool { var te *TokenError; return errors.As(e, &te) && te.Code == CodeWrongIssuer }},
		{name: "expired", held: Held{AgentID: "a", Thumbprint: "k", Records: []Record{record(t, "g", "k", now.Add(-48*time.Hour), "", nil)}},
			why: func(e error) bool { var te *TokenError; return errors.As(e, &te) && te.Code == CodeExpired }},
		{name: "not yet valid", held: Held{AgentID: "a", Thumbprint: "k", Records: []Record{func() Record {
			r := record(t, "g", "k", old, "", nil)
			r.NotBefore = now.Add(time.Hour)
			return r
		}()}}, why: func(e error) bool { var te *TokenError; return errors.As(e, &te) && te.Code == CodeNotYetValid }},
		{name: "no principal key: nothing applies", held: Held{AgentID: "a", Records: []Record{record(t, "g", "k", old, "", nil)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			au, err := NewAuthority(tt.held)
			if err != nil {
				t.Fatal(err)
			}
			ap := au.Pick("a", tt.negID, now)
			got := ""
			if ap.Grant != nil {
				got = ap.Grant.JTI
			}
			if got != tt.wantJTI || ap.BudgetJTI != tt.wantBudget {
				t.Fatalf("picked %q budget %q, want %q budget %q", got, ap.BudgetJTI, tt.wantJTI, tt.wantBudget)
			}
			if tt.wantBudget != "" && *ap.Grant.Scope.BudgetCents != tt.wantBudgetCents {
				t.Fatalf("budget %d cents, want %d", *ap.Grant.Scope.BudgetCents, tt.wantBudgetCents)
			}
			if tt.why != nil && !tt.why(ap.Why) {
				t.Fatalf("why none = %v", ap.Why)
			}
		})
	}
}

func TestAuthorityBadScope(t *testing.T) {
	t.Parallel()
	r := record(t, "g", "k", checkNow, "", nil)
	r.Scope = json.RawMessage(`{"budget_usd":"lots"}`)
	if _, err := NewAuthority(Held{AgentID: "a", Thumbprint: "k", Records: []Record{r}}); err == nil {
		t.Fatal("a stored scope that does not parse was taken")
	}
}

func TestApplyingCovers(t *testing.T) {
	t.Parallel()
	ap := Applying{Grant: &Grant{Scope: Scope{BudgetCents: cents(1000)}}, BudgetJTI: "g"}
	for _, tt := range []struct {
		spent, amount int64
		want          bool
	}{{0, 1000, true}, {1, 1000, false}, {999, 1, true}, {1000, 1, false}} {
		if got := ap.Covers(tt.spent, tt.amount); got != tt.want {
			t.Errorf("Covers(%d, %d) = %v", tt.spent, tt.amount, got)
		}
	}
	if !(Applying{}).Covers(1<<40, 1<<40) {
		t.Error("no budget covers anything")
	}
}

func TestRecordStatus(t *testing.T) {
	t.Parallel()
	r := record(t, "g", "k", checkNow.Add(-time.Hour), "", nil)
	if s := r.Status(checkNow, "k"); s != StatusActive {
		t.Fatalf("status %s", s)
	}
	if s := r.Status(checkNow, "k2"); s != StatusKeyRotated {
		t.Fatalf("status %s", s)
	}
	if s := r.Status(checkNow.Add(24*time.Hour), "k"); s != StatusExpired {
		t.Fatalf("status %s", s)
	}
	r.RevokedAt = checkNow
	if s := r.Status(checkNow, "k"); s != StatusRevoked {
		t.Fatalf("status %s", s)
	}
}
