package grants

import (
	"crypto/ed25519"
	"encoding/json"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Grant is a verified grant token (DELEGATION.md "The checks").
type Grant struct {
	JTI       string    // jti, unique per principal; the handle for revocation
	Issuer    string    // iss: the RFC 7638 thumbprint of the principal key
	Subject   string    // sub: the agent id
	IssuedAt  time.Time // iat; zero if the token has none
	NotBefore time.Time // nbf; zero if the token has none
	ExpiresAt time.Time // exp
	Scope     Scope     // the grant claim
	Raw       string    // the compact token as uploaded
}

// ActiveAt reports whether g is in force at now: nbf (if any) <= now < exp.
// No leeway: leeway only forgives clock skew when a token is verified.
func (g *Grant) ActiveAt(now time.Time) bool {
	return now.Before(g.ExpiresAt) && (g.NotBefore.IsZero() || !now.Before(g.NotBefore))
}

// grantClaims is the claim set of a grant token.
type grantClaims struct {
	jwt.RegisteredClaims
	Grant json.RawMessage `json:"grant,omitempty"`
}

func (c *grantClaims) registered() *jwt.RegisteredClaims { return &c.RegisteredClaims }

// Verify checks a grant token (DELEGATION.md "The checks") against the principal's public
// key and its thumbprint ("" computes it from principal) and returns the
// grant. The rules: header alg EdDSA only (none, HS256 keyed with the public
// key, RS256 and every other alg are wrong_algorithm) and typ grant+jwt;
// the signature verifies; iss is the thumbprint; sub is o.Subject; aud
// contains o.Audience; exp is present and not passed; nbf and iat are not in
// the future (each with o.Leeway); jti is non-empty; the grant claim is
// present and a valid [Scope]. The error is always a [*TokenError].
func Verify(token string, principal ed25519.PublicKey, principalThumbprint string, o VerifyOptions) (*Grant, error) {
	var c grantClaims
	if te := verifyJWS(token, TypeGrant, principal, principalThumbprint, o, true, &c); te != nil {
		return nil, te
	}
	if len(c.Grant) == 0 || isNull(c.Grant) {
		return nil, tokenErr(CodeMalformed, "the grant claim is required")
	}
	var s Scope
	if err := json.Unmarshal(c.Grant, &s); err != nil {
		return nil, tokenErr(CodeMalformed, "grant claim: %s", strings.TrimPrefix(err.Error(), "grants: "))
	}
	return &Grant{
		JTI:       c.ID,
		Issuer:    c.Issuer,
		Subject:   c.Subject,
		IssuedAt:  timeOf(c.IssuedAt),
		NotBefore: timeOf(c.NotBefore),
		ExpiresAt: timeOf(c.ExpiresAt),
		Scope:     s,
		Raw:       token,
	}, nil
}
