package grants

import (
	"filippo.io/edwards25519"

	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/venuehq/venue/wire"
)

// ErrBadKey is returned (wrapped, with the reason) for a principal key that
// is not a public Ed25519 JWK, and for an unusable private key.
var ErrBadKey = errors.New("grants: bad key")

// b64 is the encoding of every JOSE binary member: base64url, no padding,
// canonical (trailing bits must be zero).
var b64 = base64.RawURLEncoding.Strict()

// JWK is a public Ed25519 key in JSON Web Key form (RFC 8037 §2):
// {"kty":"OKP","crv":"Ed25519","x":"<base64url of the 32 key bytes>"}.
// Kid is optional and plays no part in the thumbprint. PROTOCOL.md "Registration and auth".
type JWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Kid string `json:"kid,omitempty"`
}

// ParseJWK parses a principal key as sent to the venue (PROTOCOL.md "Registration and auth") and
// returns it with its 32-byte public key. It is strict: raw must be one JSON
// object with kty "OKP", crv "Ed25519" and x the canonical unpadded base64url
// of exactly 32 bytes; a private member "d" is refused. Members other than
// kty, crv, x and kid (alg, use, ...) are ignored; kid is kept. A member
// given twice anywhere is refused. Every failure wraps [ErrBadKey].
func ParseJWK(raw []byte) (JWK, ed25519.PublicKey, error) {
	if werr := wire.CheckStrict(raw); werr != nil {
		return JWK{}, nil, fmt.Errorf("%w: %s", ErrBadKey, werr.Message)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return JWK{}, nil, fmt.Errorf("%w: not a JSON object", ErrBadKey)
	}
	if _, ok := m["d"]; ok {
		return JWK{}, nil, fmt.Errorf("%w: a private key (member d) was given; send only the public key", ErrBadKey)
	}
	var j JWK
	for _, f := range []struct {
		name string
		dst  *string
		req  bool
	}{{"kty", &j.Kty, true}, {"crv", &j.Crv, true}, {"x", &j.X, true}, {"kid", &j.Kid, false}} {
		v, ok := m[f.name]
		if !ok {
			if f.req {
				return JWK{}, nil, fmt.Errorf("%w: member %s is missing", ErrBadKey, f.name)
			}
			continue
		}
		if err := json.Unmarshal(v, f.dst); err != nil || bytes.Equal(v, []byte("null")) {
			return JWK{}, nil, fmt.Errorf("%w: member %s is not a string", ErrBadKey, f.name)
		}
	}
	if j.Kty != "OKP" {
		return JWK{}, nil, fmt.Errorf("%w: kty %q, want OKP", ErrBadKey, j.Kty)
	}
	if j.Crv != "Ed25519" {
		return JWK{}, nil, fmt.Errorf("%w: crv %q, want Ed25519", ErrBadKey, j.Crv)
	}
	x, err := b64.DecodeString(j.X)
	if err != nil {
		return JWK{}, nil, fmt.Errorf("%w: x is not unpadded base64url", ErrBadKey)
	}
	if len(x) != ed25519.PublicKeySize {
		return JWK{}, nil, fmt.Errorf("%w: x is %d bytes, want %d", ErrBadKey, len(x), ed25519.PublicKeySize)
	}
	// A point of small order (the identity among them) verifies forged
	// signatures: anyone could sign grants for the agent. Refuse it, and
	// anything that is not a canonical point encoding.
	p, err := new(edwards25519.Point).SetBytes(x)
	if err != nil || !bytes.Equal(p.Bytes(), x) {
		// SetBytes also takes y >= p; one key would then have two x.
		return JWK{}, nil, fmt.Errorf("%w: x is not a canonical Ed25519 point encoding", ErrBadKey)
	}
	if new(edwards25519.Point).MultByCofactor(p).Equal(edwards25519.NewIdentityPoint()) == 1 {
		return JWK{}, nil, fmt.Errorf("%w: x is a point of small order, which no real key is", ErrBadKey)
	}
	return j, ed25519.PublicKey(x), nil
}

// PublicJWK returns the JWK of an Ed25519 public key, without kid.
// pub should be 32 bytes; it is encoded as given.
func PublicJWK(pub ed25519.PublicKey) JWK {
	return JWK{Kty: "OKP", Crv: "Ed25519", X: b64.EncodeToString(pub)}
}

// Thumbprint returns the RFC 7638 thumbprint of j: the unpadded base64url of
// SHA-256 over {"crv":..,"kty":..,"x":..} (the required OKP members, in
// lexicographic order, no whitespace). It is a grant's `iss` (DELEGATION.md "The checks")
// and the venue's receipt `kid` (§8). 43 characters.
func Thumbprint(j JWK) string {
	// Struct field order is the lexicographic member order RFC 7638 asks for.
	canon := struct {
		Crv string `json:"crv"`
		Kty string `json:"kty"`
		X   string `json:"x"`
	}{j.Crv, j.Kty, j.X}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(canon) // strings only: cannot fail
	sum := sha256.Sum256(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// thumbprintOf is Thumbprint(PublicJWK(pub)).
func thumbprintOf(pub ed25519.PublicKey) string { return Thumbprint(PublicJWK(pub)) }
