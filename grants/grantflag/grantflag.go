// Package grantflag signs a principal's grant and decision tokens from
// command-line flags (DELEGATION.md "The grant token", "Escalation end to
// end", "The principal's CLI"): the scope flags shared by `venue grant` and
// `venue decide approve`, their checks, the principal's key file, the
// token's summary. cmd/venue only registers
// the commands; the flags, what they build and the errors naming a flag
// live here, where a test reaches them.
package grantflag

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/venuehq/venue/grants"
	"github.com/venuehq/venue/wire"
)

// Grant is the flags of `venue grant` but the key (see LoadPrincipalKey):
// the agent the grant is for, its audience, an optional negotiation, its
// validity and its scope.
type Grant struct {
	KeyFile     string
	Agent       string
	Audience    string
	Negotiation string
	TTL         time.Duration
	NotBefore   time.Duration
	Scope       Scope
}

// Register adds the grant's flags (--key, --agent, --aud, --negotiation,
// --ttl 24h, --not-before and the scope flags) to f.
func (g *Grant) Register(f *pflag.FlagSet) {
	f.StringVar(&g.KeyFile, "key", "", "the principal's private key, PKCS#8 PEM as written by venue keygen (required)")
	f.StringVar(&g.Agent, "agent", "", "the agent id the grant is for: the token's sub (required)")
	f.StringVar(&g.Audience, "aud", "venue", "the venue's grant audience, see GET /v1/info")
	f.StringVar(&g.Negotiation, "negotiation", "", "tie the grant to one negotiation id")
	f.DurationVar(&g.TTL, "ttl", 24*time.Hour, "how long the grant is valid (short by default: a leaked grant dies on its own)")
	f.DurationVar(&g.NotBefore, "not-before", 0, "start the grant this long from now (e.g. 1h); the --ttl counts from then")
	g.Scope.Register(f)
}

// Sign checks the flags given in f and signs the grant, valid from now (or
// now + NotBefore) for TTL. It returns the token and a summary for stderr
// (validity, jti, issuer, scope). Errors name the flag: --agent missing,
// --ttl under 1s, --not-before negative, a key file or scope flag refused.
func (g *Grant) Sign(f *pflag.FlagSet, now time.Time) (token, summary string, err error) {
	if g.Agent == "" {
		return "", "", errors.New("--agent is required: the id of the agent the grant is for")
	}
	if g.TTL < time.Second {
		return "", "", fmt.Errorf("--ttl %s: want at least 1s", g.TTL)
	}
	if g.NotBefore < 0 {
		return "", "", fmt.Errorf("--not-before %s: want a duration from now, not negative", g.NotBefore)
	}
	priv, err := LoadPrincipalKey(g.KeyFile)
	if err != nil {
		return "", "", err
	}
	scope, err := g.Scope.Build(f)
	if err != nil {
		return "", "", err
	}
	scope.NegotiationID = g.Negotiation
	c := grants.GrantClaims{Subject: g.Agent, Audience: g.Audience, IssuedAt: now, Scope: scope}
	start := now
	if g.NotBefore > 0 {
		start = now.Add(g.NotBefore)
		c.NotBefore = start
	}
	c.ExpiresAt = start.Add(g.TTL)
	if token, err = grants.SignGrant(priv, c); err != nil {
		return "", "", err
	}
	return token, fmt.Sprintf("grant for agent %s, valid %s to %s\n%s\n",
		g.Agent, stamp(start), stamp(c.ExpiresAt), Describe(token, "grant")), nil
}

// Decision is the flags of `venue decide` that make its token: the key,
// the escalation, the audience, the validity, an approval's scope.
type Decision struct {
	KeyFile    string
	Escalation string
	Audience   string
	TTL        time.Duration
	Scope      Scope
}

// Register adds the decision's flags (--key, --escalation, --aud, --ttl
// 10m and the scope flags) to f.
func (d *Decision) Register(f *pflag.FlagSet) {
	f.StringVar(&d.KeyFile, "key", "", "the principal's private key, PKCS#8 PEM as written by venue keygen (required)")
	f.StringVar(&d.Escalation, "escalation", "", "the escalation id, <negotiation_id>.e<seq> (required)")
	f.StringVar(&d.Audience, "aud", "venue", "the venue's grant audience, see GET /v1/info")
	f.DurationVar(&d.TTL, "ttl", 10*time.Minute, "how long the decision (and an approved grant) is valid")
	d.Scope.Register(f)
}

// Sign signs decision (grants.DecisionApprove or DecisionDeny) on the
// escalation, valid from now for TTL. An approval carries a grant of the
// scope flags tied to the escalation's negotiation (negotiation of, its
// id's part before the last ".e"); a denial takes no scope flag. It returns
// the token and a summary for stderr.
func (d *Decision) Sign(f *pflag.FlagSet, decision string, now time.Time, negotiationOf func(string) (string, bool)) (token, summary string, err error) {
	if d.Escalation == "" {
		return "", "", errors.New("--escalation is required: the id of the escalation to decide")
	}
	if d.TTL < time.Second {
		return "", "", fmt.Errorf("--ttl %s: want at least 1s", d.TTL)
	}
	priv, err := LoadPrincipalKey(d.KeyFile)
	if err != nil {
		return "", "", err
	}
	c := grants.DecisionClaims{
		EscalationID: d.Escalation, Decision: decision, Audience: d.Audience,
		IssuedAt: now, ExpiresAt: now.Add(d.TTL),
	}
	if decision == grants.DecisionApprove {
		negotiationID, ok := negotiationOf(d.Escalation)
		if !ok {
			return "", "", fmt.Errorf("--escalation %q: want <negotiation_id>.e<seq>, as in the escalation_id of escalate's message_ack", d.Escalation)
		}
		scope, err := d.Scope.Build(f)
		if err != nil {
			return "", "", err
		}
		scope.NegotiationID = negotiationID
		c.Grant = &scope
	} else if n := d.Scope.AnySet(f); n != "" {
		return "", "", fmt.Errorf("--%s: scope flags apply only to approve; a denial carries no grant", n)
	}
	if token, err = grants.SignDecision(priv, c); err != nil {
		return "", "", err
	}
	return token, fmt.Sprintf("%s of escalation %s, valid until %s\n%s\n",
		decision, d.Escalation, stamp(c.ExpiresAt), Describe(token, "decision")), nil
}

// LoadPrincipalKey reads the PKCS#8 PEM Ed25519 key `venue keygen` writes
// (--key FILE).
func LoadPrincipalKey(path string) (ed25519.PrivateKey, error) {
	if path == "" {
		return nil, errors.New("--key is required: the principal's private key file (create one with `venue keygen --out FILE`)")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read principal key: %w", err)
	}
	priv, err := grants.ParsePrivateKeyPEM(b)
	if err != nil {
		return nil, fmt.Errorf("principal key %s (want the PKCS#8 PEM Ed25519 key `venue keygen` writes): %w", path, err)
	}
	return priv, nil
}

// Describe summarizes a signed grant or decision token for stderr: its
// jti, issuer and (for a grant or an approval) its scope. The token was just
// signed, so its payload is read without verifying it again.
func Describe(token, kind string) string {
	var claims struct {
		JTI   string          `json:"jti"`
		Iss   string          `json:"iss"`
		Grant json.RawMessage `json:"grant"`
	}
	if err := DecodePayload(token, &claims); err != nil {
		return kind + ": " + err.Error()
	}
	s := fmt.Sprintf("%s jti %s, iss (principal thumbprint) %s", kind, claims.JTI, claims.Iss)
	if len(claims.Grant) > 0 {
		s += "\nscope " + string(claims.Grant)
	}
	return s
}

// DecodePayload decodes the claims of a compact JWS into v, unverified.
func DecodePayload(token string, v any) error {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return errors.New("not a compact JWS")
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return fmt.Errorf("payload is not base64url: %w", err)
	}
	return json.Unmarshal(b, v)
}

// stamp formats t as the wire does: RFC 3339 UTC with milliseconds.
func stamp(t time.Time) string { return t.UTC().Format(wire.TimeLayout) }
