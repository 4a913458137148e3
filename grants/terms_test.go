package grants

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func days(n int) *int { return &n }

// The grant keys bounding terms: read strictly, written back the same.
func TestScopeTermKeys(t *testing.T) {
	t.Parallel()
	raw := `{"flight":{"not_before":"2026-06-01","not_after":"2026-08-31"},"usage_rights_days":{"max":90},` +
		`"exclusivity_days":{"min":0,"max":30},"required_terms":["flight","category"]}`
	var s Scope
	if err := json.Unmarshal([]byte(raw), &s); err != nil {
		t.Fatal(err)
	}
	if s.Flight.NotAfter != "2026-08-31" || *s.UsageRightsDays.Max != 90 || *s.ExclusivityDays.Max != 30 || len(s.RequiredTerms) != 2 {
		t.Fatalf("read %+v", s)
	}
	b, _ := json.Marshal(s)
	var again Scope
	if err := json.Unmarshal(b, &again); err != nil {
		t.Fatal(err)
	}
	b2, _ := json.Marshal(again)
	if string(b) != string(b2) || !strings.Contains(string(b), `"required_terms":["flight","category"]`) {
		t.Fatalf("round trip %s / %s", b, b2)
	}
	for _, bad := range []string{
		`{"flight":{"not_before":"2026-13-01"}}`,
		`{"flight":{"not_before":"2026-06-02","not_after":"2026-06-01"}}`,
		`{"flight":{"start":"2026-06-01"}}`,
		`{"usage_rights_days":{"max":3651}}`,
		`{"usage_rights_days":{"min":5,"max":4}}`,
		`{"usage_rights_days":30}`,
		`{"exclusivity_days":{"max":366}}`,
		`{"exclusivity_days":{"max":1.5}}`,
		`{"required_terms":["amount_usd"]}`,
		`{"required_terms":"flight"}`,
		`{"exclusivity":{"days":3}}`,
	} {
		if err := json.Unmarshal([]byte(bad), new(Scope)); !errors.Is(err, ErrBadScope) {
			t.Errorf("%s: %v, want ErrBadScope", bad, err)
		}
	}
}

// Each new check fails alone, and all together come after the others in
// the documented order.
func TestCheckTermKeys(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	max := int64(100000)
	g := &Grant{ExpiresAt: now.Add(time.Hour), Scope: Scope{
		Amount:          &AmountLimit{MaxCents: &max},
		Flight:          &FlightLimit{NotBefore: "2026-06-01", NotAfter: "2026-06-30"},
		UsageRightsDays: &DaysLimit{Max: days(90)},
		ExclusivityDays: &DaysLimit{Min: days(7)},
		RequiredTerms:   []string{"flight", "sends"},
	}}
	ok := TermsRead{FlightStart: "2026-06-01", FlightEnd: "2026-06-30", UsageRightsDays: days(90), ExclusivityDays: days(7),
		Present: []string{"flight", "sends", "usage_rights_days", "exclusivity"}}
	in := func(amount int64, tr TermsRead) CheckInput {
		return CheckInput{Grant: g, FrameType: "propose_terms", AmountCents: amount, HasAmount: true, Sends: 1, Now: now, TermsRead: tr}
	}
	tests := []struct {
		name  string
		in    CheckInput
		want  []string
		got   []string
		limit []string
	}{
		{name: "within", in: in(100, ok)},
		{name: "flight late", in: in(100, func() TermsRead { r := ok; r.FlightEnd = "2026-07-01"; return r }()),
			want: []string{CheckFlight}, got: []string{"2026-06-01 to 2026-07-01"}, limit: []string{"2026-06-01 to 2026-06-30"}},
		{name: "flight early", in: in(100, func() TermsRead { r := ok; r.FlightStart = "2026-05-31"; return r }()),
			want: []string{CheckFlight}, got: []string{"2026-05-31 to 2026-06-30"}},
		{name: "usage rights over", in: in(100, func() TermsRead { r := ok; r.UsageRightsDays = days(91); return r }()),
			want: []string{CheckUsageRightsDays}, got: []string{"91"}, limit: []string{"<= 90"}},
		{name: "usage rights absent is 0", in: in(100, func() TermsRead { r := ok; r.UsageRightsDays = nil; return r }())},
		{name: "no exclusivity is 0 days", in: in(100, func() TermsRead { r := ok; r.ExclusivityDays = nil; return r }()),
			want: []string{CheckExclusivityDays}, got: []string{"none"}, limit: []string{">= 7"}},
		{name: "required missing", in: in(100, func() TermsRead { r := ok; r.Present = []string{"flight"}; return r }()),
			want: []string{CheckRequiredTerms}, got: []string{"[flight]"}, limit: []string{"[flight, sends]"}},
		{name: "all at once after amount", in: in(200000, TermsRead{UsageRightsDays: days(365), ExclusivityDays: days(1)}),
			want: []string{CheckAmount, CheckFlight, CheckUsageRightsDays, CheckExclusivityDays, CheckRequiredTerms},
			got:  []string{"2000.00", "none", "365", "1", "none"}},
	}
	for _, tt := range tests {
		fails := Check(tt.in)
		if len(fails) != len(tt.want) {
			t.Errorf("%s: %+v, want checks %v", tt.name, fails, tt.want)
			continue
		}
		for i, f := range fails {
			if f.Check != tt.want[i] || (tt.got != nil && f.Got != tt.got[i]) || (tt.limit != nil && i < len(tt.limit) && f.Limit != tt.limit[i]) || f.Message == "" {
				t.Errorf("%s: failure %d = %+v, want %s got %v limit %v", tt.name, i, f, tt.want[i], tt.got, tt.limit)
			}
		}
	}
	// No grant: only the grant check, whatever the terms.
	if fails := Check(CheckInput{FrameType: "propose_terms", Now: now}); len(fails) != 1 || fails[0].Check != CheckGrant {
		t.Errorf("no grant: %+v", fails)
	}
}
