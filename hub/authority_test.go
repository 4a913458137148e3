package hub

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/venuehq/venue/grants"
	"github.com/venuehq/venue/negotiation"
)

type spentTx map[string]int64

func (s spentTx) GrantSpent(iss, jti string) (int64, error) { return s[iss+"/"+jti], nil }
func (s spentTx) AddGrantSpent(iss, jti string, c int64) error {
	s[iss+"/"+jti] += c
	return nil
}

// StandingCheck is the one "still covered" answer: an accept is blocked by
// the budget alone, a revocation by any failure.
func TestStandingCheck(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	budget, max := int64(100000), int64(50000)
	scope, _ := json.Marshal(grants.Scope{BudgetCents: &budget, Amount: &grants.AmountLimit{MaxCents: &max}})
	rec := grants.Record{JTI: "g", Issuer: "k", IssuedAt: now.Add(-time.Hour), ExpiresAt: now.Add(time.Hour), Scope: scope}
	au, err := grants.NewAuthority(grants.Held{AgentID: "a", Thumbprint: "k", Records: []grants.Record{rec}},
		grants.Held{AgentID: "b", Thumbprint: "k2"})
	if err != nil {
		t.Fatal(err)
	}
	checks := func(fs []grants.Failure) []string {
		var out []string
		for _, f := range fs {
			out = append(out, f.Check)
		}
		return out
	}
	tests := []struct {
		name        string
		by          string
		cents       int64
		spent       int64
		expires     time.Time
		wantChecks  []string
		wantBlocked bool
	}{
		{name: "covered", by: "a", cents: 40000},
		{name: "over the amount: revocation withdraws, accept goes on", by: "a", cents: 60000, wantChecks: []string{grants.CheckAmount}},
		{name: "budget spent elsewhere: both refuse", by: "a", cents: 40000, spent: 70000, wantChecks: []string{grants.CheckBudget}, wantBlocked: true},
		{name: "no grant: only the grant check", by: "b", cents: 40000, wantChecks: []string{grants.CheckGrant}},
		{name: "ttl passed: nothing stands", by: "a", cents: 60000, spent: 90000, expires: now},
	}
	for _, tt := range tests {
		st := &negotiation.State{ID: "neg_1", Brand: negotiation.Party{AgentID: "a"}, Bouncer: negotiation.Party{AgentID: "b"},
			Standing: &negotiation.Proposal{ID: "p", By: tt.by, AmountCents: tt.cents, ExpiresAt: tt.expires}}
		fails, _, err := StandingCheck(au, spentTx{"k/g": tt.spent}, st, now)
		if err != nil {
			t.Fatal(err)
		}
		got := checks(fails)
		if len(got) != len(tt.wantChecks) || (len(got) > 0 && got[0] != tt.wantChecks[0]) || AcceptBlocked(fails) != tt.wantBlocked {
			t.Errorf("%s: checks %v blocked %v, want %v %v", tt.name, got, AcceptBlocked(fails), tt.wantChecks, tt.wantBlocked)
		}
	}
}
