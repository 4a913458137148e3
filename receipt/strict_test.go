package receipt

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestVerifyStrict: a receipt whose claims repeat a key (a fake status
// first, the signed one second) and a JWKS that repeats a key or a kid are
// refused, even though the signature holds.
func TestVerifyStrict(t *testing.T) {
	t.Parallel()
	k, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	jwks := JWKS(k)
	enc := base64.RawURLEncoding
	signRaw := func(header, claims string) string {
		in := enc.EncodeToString([]byte(header)) + "." + enc.EncodeToString([]byte(claims))
		return in + "." + enc.EncodeToString(ed25519.Sign(k.Private, []byte(in)))
	}
	header := `{"alg":"EdDSA","typ":"receipt+jwt","kid":"` + k.KID + `"}`
	claims := `{"iss":"venue","negotiation_id":"neg_1","brand":"a","bouncer":"b","status":"deal","status":"timeout",` +
		`"arena":false,"started_at":"2026-11-30T08:00:00.000Z","ended_at":"2026-11-30T08:01:00.000Z","last_seq":0,"head_hash":""}`
	if _, err := Verify(signRaw(header, claims), jwks); !errors.Is(err, ErrInvalid) {
		t.Errorf("status twice: %v, want ErrInvalid", err)
	}
	if _, err := Verify(signRaw(`{"alg":"EdDSA","typ":"receipt+jwt","kid":"x","kid":"`+k.KID+`"}`, strings.Replace(claims, `"status":"deal",`, "", 1)), jwks); !errors.Is(err, ErrInvalid) {
		t.Errorf("kid twice in the header: %v, want ErrInvalid", err)
	}
	good, err := Sign(k, Claims{NegotiationID: "neg_1", Brand: "a", Bouncer: "b", Status: StatusWalked,
		StartedAt: "2026-11-30T08:00:00.000Z", EndedAt: "2026-11-30T08:01:00.000Z", JTI: "neg_1",
		IssuedAt: time.Date(2026, 11, 30, 8, 1, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(good, jwks); err != nil {
		t.Fatalf("a plain receipt: %v", err)
	}
	entry := strings.TrimSuffix(strings.TrimPrefix(string(jwks), `{"keys":[`), `]}`)
	for name, set := range map[string]string{
		"keys twice":    `{"keys":[],"keys":[` + entry + `]}`,
		"kid twice":     `{"keys":[` + entry + `,` + entry + `]}`,
		"x twice":       `{"keys":[` + strings.Replace(entry, `"x":`, `"x":"AAAA","x":`, 1) + `]}`,
		"trailing data": string(jwks) + `{}`,
	} {
		if _, err := Verify(good, []byte(set)); !errors.Is(err, ErrInvalid) {
			t.Errorf("JWKS with %s: %v, want ErrInvalid", name, err)
		}
	}
}
