package grants

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// GrantClaims is what a principal signs into a grant token (DELEGATION.md "The checks").
type GrantClaims struct {
	Subject   string    // sub: the agent id (required)
	Audience  string    // aud: the venue's audience, see GET /v1/info (required)
	IssuedAt  time.Time // iat (required)
	ExpiresAt time.Time // exp (required, after IssuedAt)
	NotBefore time.Time // nbf; zero for none
	JTI       string    // jti; "" draws 128 random bits
	Scope     Scope     // the grant claim
}

// DecisionClaims is what a principal signs to decide an escalation.
type DecisionClaims struct {
	EscalationID string    // escalation_id (required)
	Decision     string    // DecisionApprove or DecisionDeny
	Audience     string    // aud (required)
	IssuedAt     time.Time // iat (required)
	ExpiresAt    time.Time // exp (required, after IssuedAt)
	JTI          string    // jti; "" draws 128 random bits
	Grant        *Scope    // the new grant: required on approve, nil on deny
}

// SignGrant signs c with the principal's private key into a compact grant
// token: header {"alg":"EdDSA","typ":"grant+jwt"}, iss the thumbprint of the
// public half. Times are truncated to whole seconds. It refuses claims that
// [Verify] would refuse (missing sub, aud or times, exp not after iat, an
// invalid scope) and a key that is not Ed25519 ([ErrBadKey]).
func SignGrant(priv ed25519.PrivateKey, c GrantClaims) (string, error) {
	if err := checkPrivate(priv); err != nil {
		return "", fmt.Errorf("grants: sign grant: %w", err)
	}
	if c.Subject == "" {
		return "", errors.New("grants: sign grant: subject (agent id) is required")
	}
	rc, err := registered(priv, c.Audience, c.JTI, c.IssuedAt, c.ExpiresAt, c.NotBefore)
	if err != nil {
		return "", fmt.Errorf("grants: sign grant: %w", err)
	}
	rc.Subject = c.Subject
	if err := c.Scope.Validate(); err != nil {
		return "", fmt.Errorf("grants: sign grant: %w", err)
	}
	scope, err := json.Marshal(c.Scope)
	if err != nil {
		return "", fmt.Errorf("grants: sign grant: %w", err)
	}
	return sign(priv, TypeGrant, &grantClaims{RegisteredClaims: rc, Grant: scope})
}

// SignDecision signs an escalation decision: header typ decision+jwt, claims
// iss, aud, iat, exp, jti, escalation_id, decision and, on approve, grant.
// Same refusals as [SignGrant]; approve needs Grant, deny must not have it.
func SignDecision(priv ed25519.PrivateKey, c DecisionClaims) (string, error) {
	if err := checkPrivate(priv); err != nil {
		return "", fmt.Errorf("grants: sign decision: %w", err)
	}
	if c.EscalationID == "" {
		return "", errors.New("grants: sign decision: escalation id is required")
	}
	rc, err := registered(priv, c.Audience, c.JTI, c.IssuedAt, c.ExpiresAt, time.Time{})
	if err != nil {
		return "", fmt.Errorf("grants: sign decision: %w", err)
	}
	dc := &decisionClaims{RegisteredClaims: rc, EscalationID: c.EscalationID, Decision: c.Decision}
	switch {
	case c.Decision == DecisionApprove && c.Grant == nil:
		return "", errors.New("grants: sign decision: approve needs a grant")
	case c.Decision == DecisionApprove:
		if err := c.Grant.Validate(); err != nil {
			return "", fmt.Errorf("grants: sign decision: %w", err)
		}
		if dc.Grant, err = json.Marshal(c.Grant); err != nil {
			return "", fmt.Errorf("grants: sign decision: %w", err)
		}
	case c.Decision == DecisionDeny && c.Grant != nil:
		return "", errors.New("grants: sign decision: deny carries no grant")
	case c.Decision != DecisionDeny:
		return "", fmt.Errorf("grants: sign decision: decision %s, want approve or deny", quoteShort(c.Decision))
	}
	return sign(priv, TypeDecision, dc)
}

// registered fills the registered claims shared by both tokens.
func registered(priv ed25519.PrivateKey, aud, jti string, iat, exp, nbf time.Time) (jwt.RegisteredClaims, error) {
	if aud == "" {
		return jwt.RegisteredClaims{}, errors.New("audience is required")
	}
	if iat.IsZero() || exp.IsZero() {
		return jwt.RegisteredClaims{}, errors.New("issued-at and expiry times are required")
	}
	rc := jwt.RegisteredClaims{
		Issuer:    thumbprintOf(priv.Public().(ed25519.PublicKey)),
		Audience:  jwt.ClaimStrings{aud},
		IssuedAt:  jwt.NewNumericDate(iat),
		ExpiresAt: jwt.NewNumericDate(exp),
		ID:        jti,
	}
	if !rc.ExpiresAt.After(rc.IssuedAt.Time) {
		return jwt.RegisteredClaims{}, errors.New("expiry must be at least a second after issued-at")
	}
	if !nbf.IsZero() {
		rc.NotBefore = jwt.NewNumericDate(nbf)
	}
	if rc.ID == "" {
		rc.ID = newJTI()
	}
	return rc, nil
}

func sign(priv ed25519.PrivateKey, typ string, claims jwt.Claims) (string, error) {
	t := jwt.NewWithClaims(jwt.SigningMethodEdDSA, claims)
	t.Header["typ"] = typ
	s, err := t.SignedString(priv)
	if err != nil {
		return "", fmt.Errorf("grants: sign %s: %w", typ, err)
	}
	return s, nil
}

// newJTI returns 128 random bits, unpadded base64url (22 characters).
func newJTI() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b[:])
}
