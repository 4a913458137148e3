package grants

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// TypeRotation is the `typ` of a key-rotation proof.
const TypeRotation = "key-rotation+jwt"

// MaxRotationLifetime is how long a rotation proof may be valid: it is made
// for one PUT, not kept.
const MaxRotationLifetime = time.Hour

// rotationClaims is the claim set of a key-rotation proof: the current
// principal key (iss) names the key that replaces it (new_thumbprint) for
// one agent (sub).
type rotationClaims struct {
	jwt.RegisteredClaims
	NewThumbprint string `json:"new_thumbprint"`
}

func (c *rotationClaims) registered() *jwt.RegisteredClaims { return &c.RegisteredClaims }

// RotationClaims is what a principal signs to replace its key.
type RotationClaims struct {
	Subject       string    // sub: the agent id (required)
	Audience      string    // aud: the venue's audience (required)
	NewThumbprint string    // RFC 7638 thumbprint of the new public key (required)
	IssuedAt      time.Time // iat (required)
	ExpiresAt     time.Time // exp (required, at most MaxRotationLifetime after iat)
	JTI           string    // "" draws 128 random bits
}

// SignRotation signs a key-rotation proof with the CURRENT principal key
// (DELEGATION.md, "Rotating the principal key"): without one, an agent could
// replace its principal's key with its own and sign itself any grant.
func SignRotation(current ed25519.PrivateKey, c RotationClaims) (string, error) {
	if err := checkPrivate(current); err != nil {
		return "", fmt.Errorf("grants: sign rotation: %w", err)
	}
	if c.Subject == "" || c.NewThumbprint == "" {
		return "", errors.New("grants: sign rotation: agent id and new key thumbprint are required")
	}
	rc, err := registered(current, c.Audience, c.JTI, c.IssuedAt, c.ExpiresAt, time.Time{})
	if err != nil {
		return "", fmt.Errorf("grants: sign rotation: %w", err)
	}
	rc.Subject = c.Subject
	return sign(current, TypeRotation, &rotationClaims{RegisteredClaims: rc, NewThumbprint: c.NewThumbprint})
}

// VerifyRotation checks a key-rotation proof: signed by the current
// principal key (iss its thumbprint), typ key-rotation+jwt, sub the agent,
// aud the venue, exp required and at most MaxRotationLifetime after iat, and
// new_thumbprint equal to newThumbprint. The error is a [*TokenError].
func VerifyRotation(token string, current ed25519.PublicKey, currentThumbprint, newThumbprint string, o VerifyOptions) error {
	var c rotationClaims
	if te := verifyJWS(token, TypeRotation, current, currentThumbprint, o, true, &c); te != nil {
		return te
	}
	if c.NewThumbprint != newThumbprint {
		return tokenErr(CodeMalformed, "the proof names key %s, not the key being set", quoteShort(c.NewThumbprint))
	}
	if c.IssuedAt == nil || c.ExpiresAt.Sub(c.IssuedAt.Time) > MaxRotationLifetime {
		return tokenErr(CodeMalformed, "a rotation proof needs iat and may live at most %s", MaxRotationLifetime)
	}
	return nil
}
