package receipt

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

var iat = time.Date(2026, 11, 30, 8, 27, 22, 0, time.UTC)

func dealClaims(t *testing.T) Claims {
	t.Helper()
	es, c := chain(t, frames)
	return Claims{
		NegotiationID: "neg_1", Brand: "ag_b", Bouncer: "ag_c", Status: StatusDeal,
		Terms:     json.RawMessage(`{"amount_usd":3200,"sends":2}`),
		OfferHash: "sha256:" + strings.Repeat("ab", 32), StartedAt: "2026-11-30T08:19:22.134Z",
		EndedAt: "2026-11-30T08:27:01.002Z", LastSeq: es[len(es)-1].Seq, HeadHash: c.HeadHash, IssuedAt: iat,
	}
}

func TestSignVerify(t *testing.T) {
	t.Parallel()
	k := newKey(t)
	c := dealClaims(t)
	tok, err := Sign(k, c)
	if err != nil {
		t.Fatal(err)
	}
	hdr, _ := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[0])
	var h map[string]string
	if err := json.Unmarshal(hdr, &h); err != nil || h["alg"] != "EdDSA" || h["typ"] != "receipt+jwt" || h["kid"] != k.KID {
		t.Fatalf("header %s", hdr)
	}
	payload, _ := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[1])
	for _, key := range []string{`"negotiation_id":"neg_1"`, `"brand":"ag_b"`, `"bouncer":"ag_c"`, `"status":"deal"`,
		`"terms":{"amount_usd":3200,"sends":2}`, `"arena":false`, `"last_seq":4`, `"head_hash":"sha256:`, `"iss":"venue"`, `"iat":`, `"jti":"`} {
		if !strings.Contains(string(payload), key) {
			t.Errorf("payload %s lacks %s", payload, key)
		}
	}
	if strings.Contains(string(payload), `"exp"`) {
		t.Error("a receipt must not expire")
	}

	got, err := Verify(tok, JWKS(newKey(t), k)) // rotated: the old key still verifies
	if err != nil {
		t.Fatal(err)
	}
	c.Issuer = DefaultIssuer
	c.JTI = got.JTI
	if len(got.JTI) != 22 || !reflect.DeepEqual(*got, c) {
		t.Fatalf("Verify =\n %+v\nwant\n %+v", *got, c)
	}
	es, _ := chain(t, frames)
	if err := VerifyTranscript(got, es); err != nil {
		t.Fatalf("transcript against its receipt: %v", err)
	}

	walked := Claims{NegotiationID: "n2", Brand: "b", Bouncer: "c", Status: StatusWalked, Arena: true,
		StartedAt: c.StartedAt, EndedAt: c.StartedAt, Issuer: "venue.example", JTI: "r-2", IssuedAt: iat}
	tok2, err := Sign(k, walked)
	if err != nil {
		t.Fatal(err)
	}
	got2, err := Verify(tok2, JWKS(k))
	if err != nil || !reflect.DeepEqual(*got2, walked) {
		t.Fatalf("Verify(walked) = %+v, %v", got2, err)
	}
	if err := VerifyTranscript(got2, nil); err != nil {
		t.Fatalf("empty transcript: %v", err)
	}
}

func TestVerifyRefuses(t *testing.T) {
	t.Parallel()
	k, other := newKey(t), newKey(t)
	good, err := Sign(k, dealClaims(t))
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(good, ".")
	b64 := base64.RawURLEncoding
	reheader := func(h string) string { // a new header, signed properly by k
		in := b64.EncodeToString([]byte(h)) + "." + parts[1]
		return in + "." + b64.EncodeToString(ed25519.Sign(k.Private, []byte(in)))
	}
	hs256, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"negotiation_id": "neg_1"}).SignedString(k.Public())

	tests := []struct {
		name    string
		token   string
		jwks    []byte
		unknown bool // want ErrUnknownKey rather than ErrInvalid
	}{
		{name: "kid not in set", token: good, jwks: JWKS(other), unknown: true},
		{name: "empty set", token: good, jwks: JWKS(), unknown: true},
		{name: "same kid, other key", token: good, jwks: JWKS(Key{Private: other.Private, KID: k.KID})},
		{name: "no kid", token: reheader(`{"alg":"EdDSA","typ":"receipt+jwt"}`), jwks: JWKS(k), unknown: true},
		{name: "typ JWT", token: reheader(`{"alg":"EdDSA","typ":"JWT","kid":"` + k.KID + `"}`), jwks: JWKS(k)},
		{name: "alg none", token: b64.EncodeToString([]byte(`{"alg":"none","typ":"receipt+jwt","kid":"`+k.KID+`"}`)) + "." + parts[1] + ".", jwks: JWKS(k)},
		{name: "alg HS256 keyed with the public key", token: hs256, jwks: JWKS(k)},
		{name: "payload changed", token: parts[0] + "." + b64.EncodeToString([]byte(strings.Replace(
			string(must(b64.DecodeString(parts[1]))), `"status":"deal"`, `"status":"walked"`, 1))) + "." + parts[2], jwks: JWKS(k)},
		{name: "not a JWT", token: "hello", jwks: JWKS(k)},
		{name: "JWKS not JSON", token: good, jwks: []byte("{")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := Verify(tt.token, tt.jwks)
			want := ErrInvalid
			if tt.unknown {
				want = ErrUnknownKey
			}
			if c != nil || !errors.Is(err, want) {
				t.Fatalf("Verify = %+v, %v; want %v", c, err, want)
			}
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestSignRefuses(t *testing.T) {
	t.Parallel()
	k := newKey(t)
	tests := []struct {
		name string
		mod  func(c *Claims)
	}{
		{"no negotiation", func(c *Claims) { c.NegotiationID = "" }},
		{"no brand", func(c *Claims) { c.Brand = "" }},
		{"no bouncer", func(c *Claims) { c.Bouncer = "" }},
		{"status unknown", func(c *Claims) { c.Status = "done" }},
		{"terms not JSON", func(c *Claims) { c.Terms = json.RawMessage(`{`) }},
		{"offer hash malformed", func(c *Claims) { c.OfferHash = "sha256:xyz" }},
		{"negative last seq", func(c *Claims) { c.LastSeq = -1; c.HeadHash = "" }},
		{"head hash without entries", func(c *Claims) { c.LastSeq = 0 }},
		{"entries without head hash", func(c *Claims) { c.HeadHash = "" }},
		{"started_at not RFC 3339", func(c *Claims) { c.StartedAt = "yesterday" }},
		{"ended_at missing", func(c *Claims) { c.EndedAt = "" }},
		{"ended before started", func(c *Claims) { c.EndedAt = "2026-11-30T08:00:00.000Z" }},
		{"no iat", func(c *Claims) { c.IssuedAt = time.Time{} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := dealClaims(t)
			tt.mod(&c)
			if tok, err := Sign(k, c); !errors.Is(err, ErrInvalid) {
				t.Fatalf("Sign = %q, %v; want ErrInvalid", tok, err)
			}
		})
	}
	if _, err := Sign(Key{}, dealClaims(t)); err == nil {
		t.Fatal("Sign with no key must fail")
	}
}
