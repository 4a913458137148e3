package grants

import (
	"errors"
	"testing"
	"time"
)

// TestDateClaimsStrict: every date claim that is not a JSON number, or lies
// outside [MinNumericDate, MaxNumericDate], is malformed (422), in grants and
// escalation decisions alike; exp 1e30 is never reported as expired.
func TestDateClaimsStrict(t *testing.T) {
	t.Parallel()
	pub, priv, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	thumb := Thumbprint(PublicJWK(pub))
	now := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	opts := VerifyOptions{Audience: "venue", Subject: "agt_1", Now: now}
	const iat, exp = `1796025600`, `1796112000`
	dates := func(i, e, extra string) string {
		return `"iat":` + i + `,"exp":` + e + extra
	}
	bad := []struct{ name, dates string }{
		{"exp 1e30", dates(iat, `1e30`, ``)},
		{"exp -1e30", dates(iat, `-1e30`, ``)},
		{"exp a numeric string", dates(iat, `"1796112000"`, ``)},
		{"exp null", dates(iat, `null`, ``)},
		{"exp true", dates(iat, `true`, ``)},
		{"exp an object", dates(iat, `{"n":1}`, ``)},
		{"exp past year 9999", dates(iat, `253402300800`, ``)},
		{"iat negative", dates(`-1`, exp, ``)},
		{"iat 1e300", dates(`1e300`, exp, ``)},
		{"iat a string", dates(`"1796025600"`, exp, ``)},
		{"nbf 1e19", dates(iat, exp, `,"nbf":1e19`)},
		{"nbf a string", dates(iat, exp, `,"nbf":"now"`)},
		{"nbf negative", dates(iat, exp, `,"nbf":-5`)},
	}
	for _, tc := range bad {
		grant := `{"iss":"` + thumb + `","sub":"agt_1","aud":"venue",` + tc.dates + `,"jti":"g1","grant":{}}`
		_, err := Verify(signRaw(t, priv, TypeGrant, grant), pub, thumb, opts)
		var te *TokenError
		if !errors.As(err, &te) || te.Code != CodeMalformed || te.HTTPStatus() != 422 {
			t.Errorf("grant, %s: %v, want malformed (422)", tc.name, err)
		}
		dec := `{"iss":"` + thumb + `","aud":"venue",` + tc.dates + `,"jti":"d1","escalation_id":"n.e1","decision":"deny"}`
		_, err = VerifyDecision(signRaw(t, priv, TypeDecision, dec), pub, thumb, opts)
		if !errors.As(err, &te) || te.Code != CodeMalformed {
			t.Errorf("decision, %s: %v, want malformed", tc.name, err)
		}
	}
	// In range, fractional seconds included, is fine.
	for _, d := range []string{dates(iat, exp, ``), dates(`1796025600.5`, `1796112000.25`, `,"nbf":0`)} {
		grant := `{"iss":"` + thumb + `","sub":"agt_1","aud":"venue",` + d + `,"jti":"g2","grant":{}}`
		if _, err := Verify(signRaw(t, priv, TypeGrant, grant), pub, thumb, opts); err != nil {
			t.Errorf("grant with dates %s: %v", d, err)
		}
	}
}

// FuzzDateClaims: whatever an exp claim holds, Verify never panics, and a
// token it accepts has an exp within the range.
func FuzzDateClaims(f *testing.F) {
	pub, priv, err := GenerateKey()
	if err != nil {
		f.Fatal(err)
	}
	thumb := Thumbprint(PublicJWK(pub))
	opts := VerifyOptions{Audience: "venue", Subject: "agt_1", Now: time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)}
	for _, s := range []string{`1796112000`, `1e30`, `"1"`, `-0`, `1796112000.999999999999`, `null`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, exp string) {
		claims := `{"iss":"` + thumb + `","sub":"agt_1","aud":"venue","iat":1796025600,"exp":` + exp + `,"jti":"g","grant":{}}`
		g, err := Verify(signRaw(t, priv, TypeGrant, claims), pub, thumb, opts)
		if err == nil && (g.ExpiresAt.Unix() < MinNumericDate || g.ExpiresAt.Unix() > MaxNumericDate) {
			t.Fatalf("exp %s accepted as %v", exp, g.ExpiresAt)
		}
	})
}

// TestJWKRepeatedMember: a principal key that names x twice is no key (which
// x a reader takes is not defined).
func TestJWKRepeatedMember(t *testing.T) {
	t.Parallel()
	pub, _, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	x := PublicJWK(pub).X
	if _, _, err := ParseJWK([]byte(`{"kty":"OKP","crv":"Ed25519","x":"` + x + `"}`)); err != nil {
		t.Fatal(err)
	}
	for _, raw := range []string{
		`{"kty":"OKP","crv":"Ed25519","x":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA","x":"` + x + `"}`,
		`{"kty":"OKP","crv":"Ed25519","X":"` + x + `","x":"` + x + `"}`,
	} {
		if _, _, err := ParseJWK([]byte(raw)); !errors.Is(err, ErrBadKey) {
			t.Errorf("%s: %v, want ErrBadKey", raw, err)
		}
	}
}
