package grants

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// The two decisions a principal can take on an escalation (DELEGATION.md "The checks").
const (
	DecisionApprove = "approve"
	DecisionDeny    = "deny"
)

// Decision is a verified escalation decision token (DELEGATION.md "The checks").
type Decision struct {
	EscalationID string    // escalation_id
	Decision     string    // DecisionApprove or DecisionDeny
	Scope        *Scope    // the new grant on approve; nil on deny
	JTI          string    // jti
	Issuer       string    // iss: the principal key thumbprint
	IssuedAt     time.Time // iat; zero if absent
	NotBefore    time.Time // nbf; zero if absent
	ExpiresAt    time.Time // exp
	Raw          string    // the compact token
}

// decisionClaims is the claim set of a decision token.
type decisionClaims struct {
	jwt.RegisteredClaims
	EscalationID string          `json:"escalation_id"`
	Decision     string          `json:"decision"`
	Grant        json.RawMessage `json:"grant,omitempty"`
}

func (c *decisionClaims) registered() *jwt.RegisteredClaims { return &c.RegisteredClaims }

// VerifyDecision checks an escalation decision token with the same
// strictness as [Verify] (alg EdDSA only, typ decision+jwt, iss, aud, exp
// required, nbf/iat with leeway, jti) except that sub is not checked
// (o.Subject is ignored: escalation_id names the escalation and so the
// agent). escalation_id must be non-empty, decision "approve" or "deny";
// approve requires a valid grant claim, deny must not carry one. The error
// is always a [*TokenError].
func VerifyDecision(token string, principal ed25519.PublicKey, principalThumbprint string, o VerifyOptions) (*Decision, error) {
	var c decisionClaims
	if te := verifyJWS(token, TypeDecision, principal, principalThumbprint, o, false, &c); te != nil {
		return nil, te
	}
	if c.EscalationID == "" {
		return nil, tokenErr(CodeMalformed, "escalation_id is required")
	}
	hasGrant := len(c.Grant) > 0 && !isNull(c.Grant)
	var scope *Scope
	switch c.Decision {
	case DecisionApprove:
		if !hasGrant {
			return nil, tokenErr(CodeMalformed, "an approve decision needs a grant claim")
		}
		scope = new(Scope)
		if err := json.Unmarshal(c.Grant, scope); err != nil {
			return nil, tokenErr(CodeMalformed, "grant claim: %s", strings.TrimPrefix(err.Error(), "grants: "))
		}
	case DecisionDeny:
		if hasGrant {
			return nil, tokenErr(CodeMalformed, "a deny decision must not carry a grant claim")
		}
	default:
		return nil, tokenErr(CodeMalformed, "decision %s, want approve or deny", quoteShort(c.Decision))
	}
	return &Decision{
		EscalationID: c.EscalationID,
		Decision:     c.Decision,
		Scope:        scope,
		JTI:          c.ID,
		Issuer:       c.Issuer,
		IssuedAt:     timeOf(c.IssuedAt),
		NotBefore:    timeOf(c.NotBefore),
		ExpiresAt:    timeOf(c.ExpiresAt),
		Raw:          token,
	}, nil
}

// ErrNotApproved is returned by [Decision.AsGrant] for a deny decision.
var ErrNotApproved = errors.New("grants: decision is not an approval")

// AsGrant turns an approve decision into the negotiation-scoped grant it
// carries (DELEGATION.md "The checks"): subject agentID, Scope.NegotiationID set to
// negotiationID (the escalation's negotiation), and the decision's jti, iss,
// iat, nbf and exp. It fails with [ErrNotApproved] for a deny, and with an
// error wrapping [ErrBadScope] if the scope names another negotiation.
func (d *Decision) AsGrant(agentID, negotiationID string) (*Grant, error) {
	if d.Decision != DecisionApprove || d.Scope == nil {
		return nil, ErrNotApproved
	}
	s := *d.Scope
	if s.NegotiationID != "" && s.NegotiationID != negotiationID {
		return nil, fmt.Errorf("%w: the approved grant names negotiation %s, the escalation is in %s",
			ErrBadScope, quoteShort(s.NegotiationID), quoteShort(negotiationID))
	}
	s.NegotiationID = negotiationID
	return &Grant{
		JTI:       d.JTI,
		Issuer:    d.Issuer,
		Subject:   agentID,
		IssuedAt:  d.IssuedAt,
		NotBefore: d.NotBefore,
		ExpiresAt: d.ExpiresAt,
		Scope:     s,
		Raw:       d.Raw,
	}, nil
}
