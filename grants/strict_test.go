package grants

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"
)

// signRaw signs a raw claims JSON text with the grant header, so tests can
// write what SignGrant never would (repeated members, odd values).
func signRaw(t *testing.T, priv ed25519.PrivateKey, typ, claims string) string {
	t.Helper()
	enc := base64.RawURLEncoding
	in := enc.EncodeToString([]byte(`{"alg":"EdDSA","typ":"`+typ+`"}`)) + "." + enc.EncodeToString([]byte(claims))
	return in + "." + enc.EncodeToString(ed25519.Sign(priv, []byte(in)))
}

// TestStrictClaims: a token whose claims repeat a member (the venue would
// keep the last, a reader may believe the first), a jti that cannot be named
// in a URL or stored, and an exp decades ahead are all malformed.
func TestStrictClaims(t *testing.T) {
	t.Parallel()
	pub, priv, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	thumb := Thumbprint(PublicJWK(pub))
	now := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	opts := VerifyOptions{Audience: "venue", Subject: "agt_1", Now: now}
	base := func(extra string) string {
		return `{"iss":"` + thumb + `","sub":"agt_1","aud":"venue","iat":1796025600,"exp":1796112000` + extra + `}`
	}
	for _, tc := range []struct{ name, claims string }{
		{"grant limit twice", base(`,"jti":"j1","grant":{"amount_usd":{"max":1,"max":999999}}`)},
		{"sub twice", `{"iss":"` + thumb + `","sub":"agt_other","sub":"agt_1","aud":"venue","iat":1796025600,"exp":1796112000,"jti":"j2","grant":{}}`},
		{"Sub folded", base(`,"Sub":"agt_1","jti":"j3","grant":{}`)},
		{"jti with a slash", base(`,"jti":"a/b","grant":{}`)},
		{"jti with NUL", base(`,"jti":"a\u0000b","grant":{}`)},
		{"jti too long", base(`,"jti":"` + strings.Repeat("j", 129) + `","grant":{}`)},
		{"exp decades ahead", `{"iss":"` + thumb + `","sub":"agt_1","aud":"venue","iat":1796025600,"exp":1000000000000,"jti":"j4","grant":{}}`},
	} {
		_, err := Verify(signRaw(t, priv, TypeGrant, tc.claims), pub, thumb, opts)
		var te *TokenError
		if !errors.As(err, &te) || te.Code != CodeMalformed {
			t.Errorf("%s: %v, want malformed", tc.name, err)
		}
	}
	dec := `{"iss":"` + thumb + `","aud":"venue","iat":1796025600,"exp":1796112000,"jti":"d1","escalation_id":"n.e1","decision":"deny","decision":"approve","grant":{}}`
	if _, err := VerifyDecision(signRaw(t, priv, TypeDecision, dec), pub, thumb, opts); err == nil {
		t.Error("a decision saying deny then approve was accepted")
	}
	// The same claims once each are fine.
	if _, err := Verify(signRaw(t, priv, TypeGrant, base(`,"jti":"ok-1","grant":{"amount_usd":{"max":1}}`)), pub, thumb, opts); err != nil {
		t.Errorf("a plain grant: %v", err)
	}
}

// TestWeakKeysRefused: the identity and other small-order points verify
// forged signatures, so they are no principal key.
func TestWeakKeysRefused(t *testing.T) {
	t.Parallel()
	for _, x := range []string{
		"AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",        // identity
		"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",        // order 4
		"7P___________________________________________"[:43], // y = -1, order 2
	} {
		if _, _, err := ParseJWK([]byte(`{"kty":"OKP","crv":"Ed25519","x":"` + x + `"}`)); !errors.Is(err, ErrBadKey) {
			t.Errorf("x %s: %v, want ErrBadKey", x, err)
		}
	}
	// y = p + 3 and p + 4 (p = 2^255 - 19): not canonical, so one key
	// would have two encodings and two thumbprints.
	for _, low := range []byte{0xf0, 0xf1} {
		y := make([]byte, 32)
		for i := range y {
			y[i] = 0xff
		}
		y[0], y[31] = low, 0x7f
		x := base64.RawURLEncoding.EncodeToString(y)
		if _, _, err := ParseJWK([]byte(`{"kty":"OKP","crv":"Ed25519","x":"` + x + `"}`)); !errors.Is(err, ErrBadKey) {
			t.Errorf("non-canonical y %x: %v, want ErrBadKey", y[0], err)
		}
	}
}
