package grants

import (
	"encoding/json"
	"testing"
	"time"
)

// TestAuthorityRevokedNewestLeavesNone: the red-team attack. The principal
// signs A (max 10,000) then B (max 100); the agent revokes B itself. No
// general grant applies then: A never comes back.
func TestAuthorityRevokedNewestLeavesNone(t *testing.T) {
	t.Parallel()
	now := checkNow
	rec := func(jti string, iat time.Time, maxUSD int, revoked bool) Record {
		r := Record{JTI: jti, AgentID: "agt_1", Issuer: "thumb", IssuedAt: iat, ExpiresAt: now.Add(time.Hour),
			Scope: json.RawMessage(`{"amount_usd":{"max":` + jsonInt(maxUSD) + `}}`), CreatedAt: iat}
		if revoked {
			r.RevokedAt = now
		}
		return r
	}
	a := rec("A", now.Add(-2*time.Hour), 10000, false)
	b := rec("B", now.Add(-time.Hour), 100, false)

	au, err := NewAuthority(Held{AgentID: "agt_1", Thumbprint: "thumb", Records: []Record{a, b}})
	if err != nil {
		t.Fatal(err)
	}
	if ap := au.Pick("agt_1", "neg_1", now); ap.Grant == nil || ap.Grant.JTI != "B" {
		t.Fatalf("both active: %+v, want B", ap.Grant)
	}
	b.RevokedAt = now
	au, err = NewAuthority(Held{AgentID: "agt_1", Thumbprint: "thumb", Records: []Record{a, b}})
	if err != nil {
		t.Fatal(err)
	}
	ap := au.Pick("agt_1", "neg_1", now)
	if ap.Grant != nil {
		t.Fatalf("B revoked: grant %s applies, want none", ap.Grant.JTI)
	}
	if ap.Why != ErrRevoked {
		t.Errorf("why: %v, want ErrRevoked", ap.Why)
	}
	// A key rotation leaves both behind; a grant of the new key applies.
	c := rec("C", now.Add(-time.Minute), 50, false)
	c.Issuer = "thumb2"
	au, err = NewAuthority(Held{AgentID: "agt_1", Thumbprint: "thumb2", Records: []Record{a, b, c}})
	if err != nil {
		t.Fatal(err)
	}
	if ap := au.Pick("agt_1", "neg_1", now); ap.Grant == nil || ap.Grant.JTI != "C" {
		t.Fatalf("after rotation: %+v, want C", ap.Grant)
	}
}

func jsonInt(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
