package grants

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestRevocationRoundTrip(t *testing.T) {
	t.Parallel()
	pub, priv, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	thumb := Thumbprint(PublicJWK(pub))
	now := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	opts := VerifyOptions{Audience: "venue", Subject: "agt_1", Now: now}
	hash := strings.Repeat("ab", 32)
	for _, c := range []RevocationClaims{
		{Kind: RevokeGrant, GrantJTI: "grant-b"},
		{Kind: RevokeAPIKey},
		{Kind: RevokeAPIKey, NewKeyHash: hash},
	} {
		c.Subject, c.Audience, c.IssuedAt, c.ExpiresAt = "agt_1", "venue", now, now.Add(time.Hour)
		tok, err := SignRevocation(priv, c)
		if err != nil {
			t.Fatalf("sign %+v: %v", c, err)
		}
		r, err := VerifyRevocation(tok, pub, thumb, opts)
		if err != nil {
			t.Fatalf("verify %+v: %v", c, err)
		}
		if r.Kind != c.Kind || r.GrantJTI != c.GrantJTI || r.NewKeyHash != c.NewKeyHash || r.Issuer != thumb ||
			r.Subject != "agt_1" || !r.IssuedAt.Equal(now) || r.JTI == "" {
			t.Errorf("verified %+v from %+v", r, c)
		}
	}
}

func TestRevocationRefused(t *testing.T) {
	t.Parallel()
	pub, priv, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	_, other, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	thumb := Thumbprint(PublicJWK(pub))
	now := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	opts := VerifyOptions{Audience: "venue", Subject: "agt_1", Now: now}
	good := RevocationClaims{Subject: "agt_1", Audience: "venue", Kind: RevokeGrant, GrantJTI: "g", IssuedAt: now, ExpiresAt: now.Add(time.Hour)}

	// What SignRevocation itself refuses.
	for name, mod := range map[string]func(*RevocationClaims){
		"no kind":           func(c *RevocationClaims) { c.Kind = "" },
		"grant without jti": func(c *RevocationClaims) { c.GrantJTI = "" },
		"jti with a slash":  func(c *RevocationClaims) { c.GrantJTI = "a/b" },
		"hash on a grant":   func(c *RevocationClaims) { c.NewKeyHash = strings.Repeat("0", 64) },
		"jti on an api key": func(c *RevocationClaims) { c.Kind = RevokeAPIKey },
		"short hash":        func(c *RevocationClaims) { c.Kind, c.GrantJTI, c.NewKeyHash = RevokeAPIKey, "", "abcd" },
		"upper-case hash": func(c *RevocationClaims) {
			c.Kind, c.GrantJTI, c.NewKeyHash = RevokeAPIKey, "", strings.Repeat("AB", 32)
		},
		"lives over 24 hours": func(c *RevocationClaims) { c.ExpiresAt = now.Add(25 * time.Hour) },
		"no subject":          func(c *RevocationClaims) { c.Subject = "" },
	} {
		c := good
		mod(&c)
		if _, err := SignRevocation(priv, c); err == nil {
			t.Errorf("sign, %s: accepted", name)
		}
	}

	tok, err := SignRevocation(priv, good)
	if err != nil {
		t.Fatal(err)
	}
	forged, err := SignRevocation(other, good)
	if err != nil {
		t.Fatal(err)
	}
	grant, err := SignGrant(priv, GrantClaims{Subject: "agt_1", Audience: "venue", IssuedAt: now, ExpiresAt: now.Add(time.Hour), JTI: "g"})
	if err != nil {
		t.Fatal(err)
	}
	claims := func(extra string) string {
		return `{"iss":"` + thumb + `","sub":"agt_1","aud":"venue","exp":1796025600,"jti":"r1"` + extra + `}`
	}
	for _, tc := range []struct {
		name, token string
		o           VerifyOptions
		code        string
	}{
		{"another key", forged, opts, CodeBadSignature},
		{"a grant is no revocation", grant, opts, CodeWrongType},
		{"another agent", tok, VerifyOptions{Audience: "venue", Subject: "agt_2", Now: now}, CodeWrongSubject},
		{"another venue", tok, VerifyOptions{Audience: "other", Subject: "agt_1", Now: now}, CodeWrongAudience},
		{"expired", tok, VerifyOptions{Audience: "venue", Subject: "agt_1", Now: now.Add(2 * time.Hour)}, CodeExpired},
		{"no iat", signRaw(t, priv, TypeRevocation, claims(`,"revoke":"api_key"`)), opts, CodeMalformed},
		{"lives too long", signRaw(t, priv, TypeRevocation, claims(`,"iat":1795900000,"revoke":"api_key"`)), opts, CodeMalformed},
		{"unknown kind", signRaw(t, priv, TypeRevocation, claims(`,"iat":1796020000,"revoke":"everything"`)), opts, CodeMalformed},
		{"revoke twice", signRaw(t, priv, TypeRevocation, claims(`,"iat":1796020000,"revoke":"api_key","revoke":"grant","grant_jti":"g"`)), opts, CodeMalformed},
		{"iat a string", signRaw(t, priv, TypeRevocation, claims(`,"iat":"1796020000","revoke":"api_key"`)), opts, CodeMalformed},
	} {
		_, err := VerifyRevocation(tc.token, pub, thumb, tc.o)
		var te *TokenError
		if !errors.As(err, &te) || te.Code != tc.code {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.code)
		}
	}
}

// FuzzRevocationClaims: whatever the claims of a correctly signed
// revocation hold, VerifyRevocation and PeekSubject never panic, and a
// revocation they accept names a kind and, for a grant, a valid jti.
func FuzzRevocationClaims(f *testing.F) {
	pub, priv, err := GenerateKey()
	if err != nil {
		f.Fatal(err)
	}
	thumb := Thumbprint(PublicJWK(pub))
	opts := VerifyOptions{Audience: "venue", Subject: "agt_1", Now: time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)}
	for _, s := range []string{
		`"revoke":"grant","grant_jti":"g"`, `"revoke":"api_key"`, `"revoke":"api_key","new_key_sha256":"00"`,
		`"revoke":["grant"]`, `"grant_jti":1`, `"revoke":"grant","revoke":"api_key"`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, extra string) {
		claims := `{"iss":"` + thumb + `","sub":"agt_1","aud":"venue","iat":1796025000,"exp":1796026000,"jti":"r",` + extra + `}`
		tok := signRaw(t, priv, TypeRevocation, claims)
		_, _ = PeekSubject(tok)
		r, err := VerifyRevocation(tok, pub, thumb, opts)
		if err != nil {
			return
		}
		if (r.Kind != RevokeGrant && r.Kind != RevokeAPIKey) || (r.Kind == RevokeGrant && !jtiRE.MatchString(r.GrantJTI)) {
			t.Fatalf("accepted %+v from %s", r, claims)
		}
	})
}
