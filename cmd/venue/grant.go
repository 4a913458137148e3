package main

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/venuehq/venue/grants"
)

// grantOptions are the flags of `venue grant`.
type grantOptions struct {
	keyFile     string
	agent       string
	audience    string
	negotiation string
	ttl         time.Duration
	notBefore   time.Duration
	scope       scopeFlags
}

// grantCmd is `venue grant`: the principal signs a grant token (DELEGATION.md)
// for one of its agents, offline, with the key `venue keygen` wrote.
func grantCmd() *cobra.Command {
	var o grantOptions
	cmd := &cobra.Command{
		Use:   "grant --key FILE --agent ID [scope flags]",
		Short: "Sign a grant token (what an agent may agree to) with a principal key",
		Long: `Sign a grant: a JWT (EdDSA, typ grant+jwt) in which the principal tells the
venue what its agent may agree to (DELEGATION.md). The token is signed offline
with the private key written by "venue keygen"; the venue only needs the
public key, uploaded with PUT /v1/agents/me/principal-key.

The token is printed on stdout, one line; a summary (jti, validity, scope) goes
to stderr. Give the token to the agent: it uploads it with
POST /v1/grants {"token":"<token>"}. The newest grant supersedes the older
ones (an agent can never bring an older one back); revoke one yourself with
venue revoke --grant <jti> --post.

Each scope flag restricts; a flag left out leaves its key absent, which does
not restrict. Amounts are dollars with at most two decimals (3500, 3500.25),
read exactly, never rounded.

The grant is valid from now (or from now + --not-before) for --ttl, 24 hours
by default: a leaked or forgotten grant dies on its own (DELEGATION.md "Why
grants are short").

Example:
  venue grant --key principal.pem --agent agt_123 --role brand \
    --max-amount 3500 --category primary_slot --max-sends 2 --budget 10000`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runGrant(cmd, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.keyFile, "key", "", "the principal's private key, PKCS#8 PEM as written by venue keygen (required)")
	f.StringVar(&o.agent, "agent", "", "the agent id the grant is for: the token's sub (required)")
	f.StringVar(&o.audience, "aud", "venue", "the venue's grant audience, see GET /v1/info")
	f.StringVar(&o.negotiation, "negotiation", "", "tie the grant to one negotiation id")
	f.DurationVar(&o.ttl, "ttl", 24*time.Hour, "how long the grant is valid (short by default: a leaked grant dies on its own)")
	f.DurationVar(&o.notBefore, "not-before", 0, "start the grant this long from now (e.g. 1h); the --ttl counts from then")
	o.scope.register(cmd)
	_ = cmd.MarkFlagRequired("key")
	_ = cmd.MarkFlagRequired("agent")
	return cmd
}

func runGrant(cmd *cobra.Command, o grantOptions) error {
	if o.agent == "" {
		return errors.New("--agent is required: the id of the agent the grant is for")
	}
	if o.ttl < time.Second {
		return fmt.Errorf("--ttl %s: want at least 1s", o.ttl)
	}
	if o.notBefore < 0 {
		return fmt.Errorf("--not-before %s: want a duration from now, not negative", o.notBefore)
	}
	priv, err := loadPrincipalKey(o.keyFile)
	if err != nil {
		return err
	}
	scope, err := o.scope.build(cmd)
	if err != nil {
		return err
	}
	scope.NegotiationID = o.negotiation
	now := time.Now()
	c := grants.GrantClaims{Subject: o.agent, Audience: o.audience, IssuedAt: now, Scope: scope}
	start := now
	if o.notBefore > 0 {
		start = now.Add(o.notBefore)
		c.NotBefore = start
	}
	c.ExpiresAt = start.Add(o.ttl)
	token, err := grants.SignGrant(priv, c)
	if err != nil {
		return err
	}
	fmt.Fprintln(cmd.OutOrStdout(), token)
	fmt.Fprintf(cmd.ErrOrStderr(), "grant for agent %s, valid %s to %s\n%s\n",
		o.agent, stamp(start), stamp(c.ExpiresAt), describeToken(token, "grant"))
	return nil
}

// scopeFlags are the flags that build a [grants.Scope], shared by
// `venue grant` and `venue decide ... approve`.
type scopeFlags struct {
	role           string
	maxAmount      string
	minAmount      string
	categories     []string
	maxSends       int
	budget         string
	counterparties []string
	arenaOnly      bool
	flightFrom     string
	flightTo       string
	minUsageDays   int
	maxUsageDays   int
	minExclDays    int
	maxExclDays    int
	requiredTerms  []string
}

// scopeFlagNames are the flags scopeFlags registers.
var scopeFlagNames = []string{"role", "max-amount", "min-amount", "category", "max-sends", "budget", "counterparty", "arena-only",
	"flight-not-before", "flight-not-after", "min-usage-rights-days", "max-usage-rights-days", "min-exclusivity-days", "max-exclusivity-days", "require"}

func (s *scopeFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&s.role, "role", "", "brand or bouncer (informative)")
	f.StringVar(&s.maxAmount, "max-amount", "", "amount_usd.max in dollars: the ceiling a brand may spend per deal")
	f.StringVar(&s.minAmount, "min-amount", "", "amount_usd.min in dollars: the floor a bouncer may accept per deal")
	f.StringArrayVar(&s.categories, "category", nil, "an allowed terms.category (repeatable)")
	f.IntVar(&s.maxSends, "max-sends", 0, "the most terms.sends a deal may have (0-1000)")
	f.StringVar(&s.budget, "budget", "", "budget_usd in dollars: the total of all deals made under this grant")
	f.StringArrayVar(&s.counterparties, "counterparty", nil, "an agent id the agent may deal with (repeatable)")
	f.BoolVar(&s.arenaOnly, "arena-only", false, "allow deals only in the arena")
	f.StringVar(&s.flightFrom, "flight-not-before", "", "flight.not_before (YYYY-MM-DD): terms.flight must start on or after it")
	f.StringVar(&s.flightTo, "flight-not-after", "", "flight.not_after (YYYY-MM-DD): terms.flight must end on or before it")
	f.IntVar(&s.minUsageDays, "min-usage-rights-days", 0, "usage_rights_days.min (0-3650)")
	f.IntVar(&s.maxUsageDays, "max-usage-rights-days", 0, "usage_rights_days.max (0-3650): the longest the brand may reuse the content")
	f.IntVar(&s.minExclDays, "min-exclusivity-days", 0, "exclusivity_days.min (0-365)")
	f.IntVar(&s.maxExclDays, "max-exclusivity-days", 0, "exclusivity_days.max (0-365): the longest exclusivity the agent may promise")
	f.StringArrayVar(&s.requiredTerms, "require", nil, "a term key every deal must carry: category, sends, flight, usage_rights_days or exclusivity (repeatable)")
}

// termLimits adds the flags bounding terms beyond the amount to sc.
func (s *scopeFlags) termLimits(set func(string) bool, sc *grants.Scope) {
	if set("flight-not-before") || set("flight-not-after") {
		sc.Flight = &grants.FlightLimit{NotBefore: s.flightFrom, NotAfter: s.flightTo}
	}
	days := func(minFlag, maxFlag string, lo, hi int) *grants.DaysLimit {
		if !set(minFlag) && !set(maxFlag) {
			return nil
		}
		d := &grants.DaysLimit{}
		if set(minFlag) {
			d.Min = &lo
		}
		if set(maxFlag) {
			d.Max = &hi
		}
		return d
	}
	sc.UsageRightsDays = days("min-usage-rights-days", "max-usage-rights-days", s.minUsageDays, s.maxUsageDays)
	sc.ExclusivityDays = days("min-exclusivity-days", "max-exclusivity-days", s.minExclDays, s.maxExclDays)
	if set("require") {
		sc.RequiredTerms = s.requiredTerms
	}
}

// anySet reports the first scope flag given on the command line, or "".
func (s *scopeFlags) anySet(cmd *cobra.Command) string {
	for _, n := range scopeFlagNames {
		if cmd.Flags().Changed(n) {
			return n
		}
	}
	return ""
}

// build turns the flags given into a scope; flags not given stay absent.
func (s *scopeFlags) build(cmd *cobra.Command) (grants.Scope, error) {
	set := cmd.Flags().Changed
	var sc grants.Scope
	if set("role") {
		sc.Role = s.role
	}
	var lim grants.AmountLimit
	if set("max-amount") {
		c, err := dollars("--max-amount", s.maxAmount, grants.ParseUSD)
		if err != nil {
			return grants.Scope{}, err
		}
		lim.MaxCents = &c
	}
	if set("min-amount") {
		c, err := dollars("--min-amount", s.minAmount, grants.ParseUSD)
		if err != nil {
			return grants.Scope{}, err
		}
		lim.MinCents = &c
	}
	if lim.MaxCents != nil || lim.MinCents != nil {
		sc.Amount = &lim
	}
	if set("category") {
		sc.Categories = s.categories
	}
	if set("max-sends") {
		n := s.maxSends
		sc.MaxSends = &n
	}
	if set("budget") {
		c, err := dollars("--budget", s.budget, grants.ParseBudgetUSD)
		if err != nil {
			return grants.Scope{}, err
		}
		sc.BudgetCents = &c
	}
	if set("counterparty") {
		sc.Counterparties = s.counterparties
	}
	sc.ArenaOnly = s.arenaOnly
	s.termLimits(set, &sc)
	if err := sc.Validate(); err != nil {
		return grants.Scope{}, fmt.Errorf("scope flags: %w", err)
	}
	return sc, nil
}

// dollars parses the text of a money flag into cents with parse, naming the
// flag in the error.
func dollars(flag, text string, parse func([]byte) (int64, error)) (int64, error) {
	c, err := parse([]byte(text))
	if err != nil {
		return 0, fmt.Errorf("%s %q: want dollars with at most 2 decimals, e.g. 3500 or 3500.25: %w", flag, text, err)
	}
	return c, nil
}

// loadPrincipalKey reads the PKCS#8 PEM Ed25519 key `venue keygen` writes.
func loadPrincipalKey(path string) (ed25519.PrivateKey, error) {
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

// describeToken summarizes a signed grant or decision token for stderr: its
// jti, issuer and (for a grant or an approval) its scope. The token was just
// signed here, so its payload is read without verifying it again.
func describeToken(token, kind string) string {
	var claims struct {
		JTI   string          `json:"jti"`
		Iss   string          `json:"iss"`
		Grant json.RawMessage `json:"grant"`
	}
	if err := decodePayload(token, &claims); err != nil {
		return kind + ": " + err.Error()
	}
	s := fmt.Sprintf("%s jti %s, iss (principal thumbprint) %s", kind, claims.JTI, claims.Iss)
	if len(claims.Grant) > 0 {
		s += "\nscope " + string(claims.Grant)
	}
	return s
}

// stamp formats t as the wire does: RFC 3339 UTC with milliseconds.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// decodePayload decodes the claims of a compact JWS into v, unverified.
func decodePayload(token string, v any) error {
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
