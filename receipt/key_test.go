package receipt

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"testing"

	"github.com/venuehq/venue/grants"
)

func newKey(t *testing.T) Key {
	t.Helper()
	k, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestKey(t *testing.T) {
	t.Parallel()
	k := newKey(t)
	if want := grants.Thumbprint(grants.PublicJWK(k.Public())); k.KID != want || len(k.KID) != 43 {
		t.Fatalf("KID = %q, want thumbprint %q", k.KID, want)
	}
	back, err := ParseKey(k.PEM())
	if err != nil || !back.Private.Equal(k.Private) || back.KID != k.KID {
		t.Fatalf("ParseKey(PEM) = %+v, %v", back, err)
	}
	if _, err := ParseKey([]byte("nope")); !errors.Is(err, grants.ErrBadKey) {
		t.Fatalf("ParseKey(garbage) = %v", err)
	}
	for name, priv := range map[string]ed25519.PrivateKey{
		"short":        k.Private[:32],
		"inconsistent": append(append(ed25519.PrivateKey{}, k.Private[:32]...), make([]byte, 32)...),
	} {
		if _, err := KeyFromPrivate(priv); !errors.Is(err, grants.ErrBadKey) {
			t.Errorf("KeyFromPrivate(%s) = %v, want ErrBadKey", name, err)
		}
	}
	if (Key{}).Public() != nil || (Key{}).PEM() != nil {
		t.Fatal("zero Key must have no public half and no PEM")
	}
}

func TestJWKS(t *testing.T) {
	t.Parallel()
	k1, k2 := newKey(t), newKey(t)
	var set struct {
		Keys []map[string]string `json:"keys"`
	}
	if err := json.Unmarshal(JWKS(k1, Key{}, k2), &set); err != nil {
		t.Fatal(err)
	}
	if len(set.Keys) != 2 {
		t.Fatalf("%d keys, want 2 (the invalid one left out)", len(set.Keys))
	}
	for i, k := range []Key{k1, k2} {
		e := set.Keys[i]
		if e["kty"] != "OKP" || e["crv"] != "Ed25519" || e["alg"] != "EdDSA" || e["use"] != "sig" || e["kid"] != k.KID ||
			e["x"] != grants.PublicJWK(k.Public()).X || len(e) != 6 {
			t.Fatalf("entry %d = %v", i, e)
		}
	}
	if got := string(JWKS()); got != `{"keys":[]}` {
		t.Fatalf("JWKS() = %s", got)
	}
	// A Key built without KID is published under its thumbprint.
	noKID := Key{Private: k1.Private}
	if err := json.Unmarshal(JWKS(noKID), &set); err != nil || set.Keys[0]["kid"] != k1.KID {
		t.Fatalf("JWKS(no KID) = %v, %v", set.Keys, err)
	}
}
