package grants

import (
	"testing"
	"time"
)

func TestSelect(t *testing.T) {
	t.Parallel()
	now := checkNow
	mk := func(jti, neg string, issuedAgo, expiresIn time.Duration) *Grant {
		return &Grant{JTI: jti, IssuedAt: now.Add(-issuedAgo), ExpiresAt: now.Add(expiresIn), Scope: Scope{NegotiationID: neg}}
	}
	old := mk("old", "", 2*time.Hour, time.Hour)
	newest := mk("new", "", time.Hour, time.Hour)
	expired := mk("expired", "", 10*time.Minute, -time.Second)
	scoped := mk("scoped", "neg_1", 3*time.Hour, time.Hour)
	scopedNewer := mk("scoped2", "neg_1", 2*time.Hour, time.Hour)
	elsewhere := mk("elsewhere", "neg_2", time.Minute, time.Hour)
	future := mk("future", "", 0, time.Hour)
	future.NotBefore = now.Add(time.Minute)
	noIat := mk("noiat", "", 0, time.Hour)
	noIat.IssuedAt = time.Time{}
	otherIss := mk("other", "", 3*time.Hour, time.Hour)
	otherIss.Issuer = "other-principal"
	tieA, tieB := mk("tieA", "", time.Hour, time.Hour), mk("tieB", "", time.Hour, time.Hour)
	revokedSet := func(jtis ...string) func(string) bool {
		return func(j string) bool {
			for _, x := range jtis {
				if x == j {
					return true
				}
			}
			return false
		}
	}

	tests := []struct {
		name    string
		grants  []*Grant
		neg     string
		revoked func(string) bool
		want    *Grant
	}{
		{"none", nil, "neg_1", nil, nil},
		{"newest general", []*Grant{newest, old}, "neg_1", nil, newest},
		{"a newer expired grant leaves none", []*Grant{old, expired}, "neg_1", nil, nil},
		{"not yet valid skipped", []*Grant{old, future}, "neg_1", nil, old},
		{"revoking the newest never brings the older back", []*Grant{old, newest}, "neg_1", revokedSet("new"), nil},
		{"an older revoked grant changes nothing", []*Grant{old, newest}, "neg_1", revokedSet("old"), newest},
		{"upload order does not matter", []*Grant{newest, old}, "neg_1", revokedSet("new"), nil},
		{"all revoked", []*Grant{old, newest}, "neg_1", revokedSet("new", "old"), nil},
		{"scoped beats newer general", []*Grant{newest, scoped}, "neg_1", nil, scoped},
		{"newest scoped", []*Grant{scoped, scopedNewer, newest}, "neg_1", nil, scopedNewer},
		{"revoked newer scoped never brings the older scoped back", []*Grant{scoped, scopedNewer}, "neg_1", revokedSet("scoped2"), nil},
		{"another issuer's grants are separate", []*Grant{old, newest, otherIss}, "neg_1", revokedSet("new"), otherIss},
		{"another issuer's older grant does not supersede", []*Grant{otherIss, newest}, "neg_1", nil, newest},
		{"revoked scoped falls back", []*Grant{scoped, newest}, "neg_1", revokedSet("scoped"), newest},
		{"other negotiation never applies", []*Grant{elsewhere}, "neg_1", nil, nil},
		{"other negotiation ignored", []*Grant{elsewhere, old}, "neg_1", nil, old},
		{"scoped ignored with no negotiation", []*Grant{scoped, old}, "", nil, old},
		{"missing iat is oldest", []*Grant{old, noIat}, "neg_1", nil, old},
		{"tie goes to the later", []*Grant{tieA, tieB}, "neg_1", nil, tieB},
		{"nil entries skipped", []*Grant{nil, old, nil}, "neg_1", nil, old},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := Select(tt.grants, tt.neg, now, tt.revoked); got != tt.want {
				t.Fatalf("Select = %v, want %v", jti(got), jti(tt.want))
			}
		})
	}
}

func jti(g *Grant) string {
	if g == nil {
		return "<nil>"
	}
	return g.JTI
}

func TestGrantActiveAt(t *testing.T) {
	t.Parallel()
	g := &Grant{NotBefore: checkNow, ExpiresAt: checkNow.Add(time.Minute)}
	for _, tt := range []struct {
		at   time.Time
		want bool
	}{
		{checkNow.Add(-time.Nanosecond), false},
		{checkNow, true},
		{checkNow.Add(time.Minute - time.Nanosecond), true},
		{checkNow.Add(time.Minute), false},
	} {
		if got := g.ActiveAt(tt.at); got != tt.want {
			t.Errorf("ActiveAt(%v) = %v, want %v", tt.at, got, tt.want)
		}
	}
}
