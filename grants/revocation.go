package grants

import (
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/venuehq/venue/wire"
)

// TypeRevocation is the `typ` of a principal's revocation token.
const TypeRevocation = "revocation+jwt"

// What a revocation token revokes (the `revoke` claim).
const (
	RevokeGrant  = "grant"   // one grant, named by grant_jti, of this issuer
	RevokeAPIKey = "api_key" // the agent's API key(s) issued before iat
)

// MaxRevocationLifetime is how long a revocation token may be valid: it is
// made to be posted at once, and a short life keeps a copied one from being
// replayed much later (replays change nothing: see [Revocation]).
const MaxRevocationLifetime = 24 * time.Hour

// Revocation is a verified revocation token: the principal's own channel to
// the venue, which needs no API key (DELEGATION.md "Revoking without the
// agent"). Replaying one is harmless: a grant revoked stays revoked, and an
// API-key revocation touches only keys issued before its IssuedAt.
type Revocation struct {
	Kind       string    // RevokeGrant or RevokeAPIKey
	GrantJTI   string    // the jti of the grant revoked (RevokeGrant)
	NewKeyHash string    // RevokeAPIKey: hex SHA-256 of the key that replaces the revoked ones; "" for none
	Subject    string    // sub: the agent id
	Issuer     string    // iss: the principal key thumbprint
	JTI        string    // jti of the revocation token itself
	IssuedAt   time.Time // iat (required)
	ExpiresAt  time.Time // exp
	Raw        string    // the compact token
}

// revocationClaims is the claim set of a revocation token.
type revocationClaims struct {
	jwt.RegisteredClaims
	Revoke     string `json:"revoke"`
	GrantJTI   string `json:"grant_jti,omitempty"`
	NewKeyHash string `json:"new_key_sha256,omitempty"`
}

func (c *revocationClaims) registered() *jwt.RegisteredClaims { return &c.RegisteredClaims }

// RevocationClaims is what a principal signs to revoke.
type RevocationClaims struct {
	Subject    string    // sub: the agent id (required)
	Audience   string    // aud: the venue's audience (required)
	Kind       string    // RevokeGrant or RevokeAPIKey
	GrantJTI   string    // required for RevokeGrant, empty otherwise
	NewKeyHash string    // RevokeAPIKey only: hex SHA-256 (64 lower-case hex digits) of a replacement key; "" none
	IssuedAt   time.Time // iat (required)
	ExpiresAt  time.Time // exp (required, at most MaxRevocationLifetime after iat)
	JTI        string    // "" draws 128 random bits
}

// SignRevocation signs a revocation token with the principal key: header
// typ revocation+jwt; claims iss, sub, aud, iat, exp, jti, revoke and
// grant_jti or new_key_sha256. It refuses what [VerifyRevocation] would.
func SignRevocation(priv ed25519.PrivateKey, c RevocationClaims) (string, error) {
	if err := checkPrivate(priv); err != nil {
		return "", fmt.Errorf("grants: sign revocation: %w", err)
	}
	if c.Subject == "" {
		return "", errors.New("grants: sign revocation: subject (agent id) is required")
	}
	if err := checkRevocation(c.Kind, c.GrantJTI, c.NewKeyHash); err != nil {
		return "", fmt.Errorf("grants: sign revocation: %s", err.Message)
	}
	if c.ExpiresAt.Sub(c.IssuedAt) > MaxRevocationLifetime {
		return "", fmt.Errorf("grants: sign revocation: it may live at most %s", MaxRevocationLifetime)
	}
	rc, err := registered(priv, c.Audience, c.JTI, c.IssuedAt, c.ExpiresAt, time.Time{})
	if err != nil {
		return "", fmt.Errorf("grants: sign revocation: %w", err)
	}
	rc.Subject = c.Subject
	return sign(priv, TypeRevocation, &revocationClaims{RegisteredClaims: rc, Revoke: c.Kind, GrantJTI: c.GrantJTI, NewKeyHash: c.NewKeyHash})
}

// VerifyRevocation checks a revocation token with the strictness of
// [Verify]: alg EdDSA, typ revocation+jwt, signed by the principal key
// (iss its thumbprint), sub o.Subject, aud o.Audience, exp not passed and
// at most MaxRevocationLifetime after iat, iat required and not in the
// future, dates JSON numbers in range; revoke "grant" with a valid
// grant_jti, or "api_key" with an optional new_key_sha256. The error is a
// [*TokenError].
func VerifyRevocation(token string, principal ed25519.PublicKey, principalThumbprint string, o VerifyOptions) (*Revocation, error) {
	var c revocationClaims
	if te := verifyJWS(token, TypeRevocation, principal, principalThumbprint, o, true, &c); te != nil {
		return nil, te
	}
	if c.IssuedAt == nil {
		return nil, tokenErr(CodeMalformed, "a revocation needs iat")
	}
	if c.ExpiresAt.Sub(c.IssuedAt.Time) > MaxRevocationLifetime {
		return nil, tokenErr(CodeMalformed, "a revocation may live at most %s", MaxRevocationLifetime)
	}
	if te := checkRevocation(c.Revoke, c.GrantJTI, c.NewKeyHash); te != nil {
		return nil, te
	}
	return &Revocation{
		Kind: c.Revoke, GrantJTI: c.GrantJTI, NewKeyHash: c.NewKeyHash, Subject: c.Subject,
		Issuer: c.Issuer, JTI: c.ID, IssuedAt: timeOf(c.IssuedAt), ExpiresAt: timeOf(c.ExpiresAt), Raw: token,
	}, nil
}

func checkRevocation(kind, grantJTI, newKeyHash string) *TokenError {
	switch kind {
	case RevokeGrant:
		if !jtiRE.MatchString(grantJTI) {
			return tokenErr(CodeMalformed, "revoke grant needs grant_jti: 1-128 characters of A-Z a-z 0-9 . _ ~ : -")
		}
		if newKeyHash != "" {
			return tokenErr(CodeMalformed, "new_key_sha256 belongs to an api_key revocation")
		}
	case RevokeAPIKey:
		if grantJTI != "" {
			return tokenErr(CodeMalformed, "grant_jti belongs to a grant revocation")
		}
		if newKeyHash != "" {
			if b, err := hex.DecodeString(newKeyHash); err != nil || len(b) != 32 || hex.EncodeToString(b) != newKeyHash {
				return tokenErr(CodeMalformed, "new_key_sha256 must be 64 lower-case hex digits")
			}
		}
	default:
		return tokenErr(CodeMalformed, "revoke %s, want grant or api_key", quoteShort(kind))
	}
	return nil
}

// PeekSubject returns the sub claim of a token WITHOUT verifying it, so the
// venue can find whose principal key verifies it (a revocation is posted
// with no API key). Nothing else may be trusted before the token verifies.
// Errors: a malformed *TokenError.
func PeekSubject(token string) (string, error) {
	if len(token) > MaxTokenLen {
		return "", tokenErr(CodeMalformed, "token is longer than %d bytes", MaxTokenLen)
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return "", tokenErr(CodeMalformed, "token is not a compact JWS (three dot-separated parts)")
	}
	raw, err := b64.DecodeString(parts[1])
	if err != nil {
		return "", tokenErr(CodeMalformed, "payload is not base64url")
	}
	m, werr := wire.DecodeObject(raw)
	if werr != nil {
		return "", tokenErr(CodeMalformed, "claims: %s", werr.Message)
	}
	var sub string
	if err := json.Unmarshal(m["sub"], &sub); err != nil || sub == "" {
		return "", tokenErr(CodeMalformed, "sub (the agent id) is required")
	}
	return sub, nil
}
