package receipt

import (
	"crypto/ed25519"
	"encoding/json"
	"fmt"

	"github.com/venuehq/venue/grants"
)

// Key is the venue's Ed25519 signing key. KID is the RFC 7638 thumbprint of
// its public half (see [grants.Thumbprint]), the `kid` of every receipt
// header and of the key's JWKS entry.
type Key struct {
	Private ed25519.PrivateKey
	KID     string
}

// NewKey draws a fresh signing key.
func NewKey() (Key, error) {
	_, priv, err := grants.GenerateKey()
	if err != nil {
		return Key{}, fmt.Errorf("receipt: new key: %w", err)
	}
	return KeyFromPrivate(priv)
}

// KeyFromPrivate wraps a 64-byte Ed25519 private key (from config or the
// store) and computes its KID. Errors wrap [grants.ErrBadKey].
func KeyFromPrivate(priv ed25519.PrivateKey) (Key, error) {
	if len(priv) != ed25519.PrivateKeySize {
		return Key{}, fmt.Errorf("receipt: %w: private key is %d bytes, want %d", grants.ErrBadKey, len(priv), ed25519.PrivateKeySize)
	}
	if !priv.Equal(ed25519.NewKeyFromSeed(priv.Seed())) {
		return Key{}, fmt.Errorf("receipt: %w: public half does not match the seed", grants.ErrBadKey)
	}
	return Key{Private: priv, KID: grants.Thumbprint(grants.PublicJWK(priv.Public().(ed25519.PublicKey)))}, nil
}

// ParseKey reads a key from PKCS#8 PEM ("PRIVATE KEY"), as written by
// [Key.PEM] and `openssl genpkey -algorithm ed25519`.
func ParseKey(pemBytes []byte) (Key, error) {
	priv, err := grants.ParsePrivateKeyPEM(pemBytes)
	if err != nil {
		return Key{}, fmt.Errorf("receipt: parse key: %w", err)
	}
	return KeyFromPrivate(priv)
}

// PEM returns the key as PKCS#8 PEM; nil if the key is not valid.
func (k Key) PEM() []byte { return grants.MarshalPrivateKeyPEM(k.Private) }

// Public returns the public half; nil if the key is not valid.
func (k Key) Public() ed25519.PublicKey {
	if len(k.Private) != ed25519.PrivateKeySize {
		return nil
	}
	return k.Private.Public().(ed25519.PublicKey)
}

// kid is k.KID, or the thumbprint when KID is empty.
func (k Key) kid() string {
	if k.KID != "" {
		return k.KID
	}
	return grants.Thumbprint(grants.PublicJWK(k.Public()))
}

// jwk is one entry of a JWKS.
type jwk struct {
	grants.JWK
	Alg string `json:"alg"`
	Use string `json:"use"`
}

// JWKS returns the JSON Web Key Set of the keys' public halves, the body of
// GET /.well-known/jwks.json (PROTOCOL.md "Registration and auth"):
//
//	{"keys":[{"kty":"OKP","crv":"Ed25519","x":"...","kid":"...","alg":"EdDSA","use":"sig"}]}
//
// Keys are listed in the order given (pass the current key first, then any
// retired ones whose receipts must still verify). Invalid keys are left out;
// no keys gives {"keys":[]}.
func JWKS(keys ...Key) []byte {
	set := struct {
		Keys []jwk `json:"keys"`
	}{Keys: []jwk{}}
	for _, k := range keys {
		pub := k.Public()
		if pub == nil {
			continue
		}
		j := grants.PublicJWK(pub)
		j.Kid = k.kid()
		set.Keys = append(set.Keys, jwk{JWK: j, Alg: "EdDSA", Use: "sig"})
	}
	b, _ := json.Marshal(set) // strings only: cannot fail
	return b
}
