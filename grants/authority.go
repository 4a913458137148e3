package grants

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/venuehq/venue/wire"
)

// Record is an uploaded grant token and what the venue read of it, as the
// store keeps it (DELEGATION.md "Uploading, listing, revoking"). Scope is the grant
// claim as JSON; SpentCents is what live deals have charged to its budget.
type Record struct {
	JTI           string          `json:"jti"`
	AgentID       string          `json:"agent_id"`
	Token         string          `json:"token"`
	Issuer        string          `json:"iss"` // principal key thumbprint
	IssuedAt      time.Time       `json:"iat"`
	NotBefore     time.Time       `json:"nbf,omitzero"`
	ExpiresAt     time.Time       `json:"exp"`
	NegotiationID string          `json:"negotiation_id,omitempty"`
	Scope         json.RawMessage `json:"grant"`
	CreatedAt     time.Time       `json:"created_at"`
	RevokedAt     time.Time       `json:"revoked_at,omitzero"`
	SpentCents    int64           `json:"spent_cents"`
	// Cursor is where the record stands in the store's upload order (a
	// number that only grows), set by the store's reads: GET /v1/grants
	// pages with it (DELEGATION.md "Uploading, listing, revoking").
	Cursor int64 `json:"-"`
}

// RecordOf is the record of a verified grant uploaded by agentID at now.
func RecordOf(g *Grant, agentID string, now time.Time) (Record, error) {
	scope, err := json.Marshal(&g.Scope)
	if err != nil {
		return Record{}, fmt.Errorf("grants: encode the scope of %s: %w", g.JTI, err)
	}
	return Record{
		JTI: g.JTI, AgentID: agentID, Token: g.Raw, Issuer: g.Issuer, IssuedAt: g.IssuedAt,
		NotBefore: g.NotBefore, ExpiresAt: g.ExpiresAt, NegotiationID: g.Scope.NegotiationID,
		Scope: scope, CreatedAt: now,
	}, nil
}

// Statuses of an uploaded grant as GET /v1/grants shows it.
const (
	StatusActive      = "active"
	StatusRevoked     = "revoked"
	StatusKeyRotated  = "key_rotated"
	StatusExpired     = "expired"
	StatusNotYetValid = "not_yet_valid"
)

// Status is the record's status at now for an agent whose current principal
// key has thumbprint thumb (DELEGATION.md "Uploading, listing, revoking").
func (r *Record) Status(now time.Time, thumb string) string {
	switch {
	case !r.RevokedAt.IsZero():
		return StatusRevoked
	case r.Issuer != thumb:
		return StatusKeyRotated
	case !now.Before(r.ExpiresAt):
		return StatusExpired
	case !r.NotBefore.IsZero() && now.Before(r.NotBefore):
		return StatusNotYetValid
	}
	return StatusActive
}

// Held is what one agent holds: its current principal key's thumbprint ("" if
// it has none) and every grant it uploaded, in upload order.
type Held struct {
	AgentID    string
	Thumbprint string
	Records    []Record
}

// Authority is the grants of the parties of one negotiation, read before the
// room's transaction, and the rule that picks the one each party binds under
// (DELEGATION.md "Which grant applies").
type Authority struct {
	grants  map[string][]*Grant        // candidates by agent id: the current key's, revoked ones included
	revoked map[string]map[string]bool // revoked jtis of those, by agent id
	newest  map[string]Record          // the last general grant uploaded, by agent id
	thumb   map[string]string          // current principal thumbprint, by agent id
}

// NewAuthority builds the authority of the given agents. Records signed by a
// key other than the agent's current one never apply (a key rotation leaves
// the old key's grants behind). Revoked records never apply either, but they
// still supersede older ones (see [Select]). Errors: a stored scope that
// does not parse.
func NewAuthority(held ...Held) (*Authority, error) {
	au := &Authority{grants: map[string][]*Grant{}, revoked: map[string]map[string]bool{},
		newest: map[string]Record{}, thumb: map[string]string{}}
	for _, h := range held {
		au.thumb[h.AgentID] = h.Thumbprint
		au.revoked[h.AgentID] = map[string]bool{}
		for _, r := range h.Records {
			if r.NegotiationID == "" {
				au.newest[h.AgentID] = r
			}
			if h.Thumbprint == "" || r.Issuer != h.Thumbprint {
				continue
			}
			if !r.RevokedAt.IsZero() {
				au.revoked[h.AgentID][r.JTI] = true
			}
			g := &Grant{JTI: r.JTI, Issuer: r.Issuer, Subject: h.AgentID, IssuedAt: r.IssuedAt,
				NotBefore: r.NotBefore, ExpiresAt: r.ExpiresAt, Raw: r.Token}
			if err := json.Unmarshal(r.Scope, &g.Scope); err != nil {
				return nil, fmt.Errorf("grants: stored grant %s: %w", r.JTI, err)
			}
			au.grants[h.AgentID] = append(au.grants[h.AgentID], g)
		}
	}
	return au, nil
}

// Applying is the authority an agent binds under in one negotiation: the
// grant whose limits are checked and the grant whose budget is charged.
type Applying struct {
	Grant     *Grant // nil: none applies (Why says why, if known)
	BudgetJTI string // the grant whose budget counts; "" none
	BudgetIss string // its issuer (a jti is unique per issuer)
	Why       error  // a *TokenError or ErrRevoked; nil when the agent never had a grant
}

// Pick is the authority of agent in negotiation negID at now (DELEGATION.md
// "Which grant applies"): a grant naming the negotiation (an approved
// escalation) takes precedence over the newest general one; when it sets no
// budget of its own, the general grant's budget still applies and is
// charged, so an escalation cannot be used to step around a budget.
func (au *Authority) Pick(agent, negID string, now time.Time) Applying {
	revoked := func(jti string) bool { return au.revoked[agent][jti] }
	g := Select(au.grants[agent], negID, now, revoked)
	if g == nil {
		return Applying{Why: au.WhyNone(agent, now)}
	}
	ap := Applying{Grant: g}
	if g.Scope.BudgetCents != nil {
		ap.BudgetJTI, ap.BudgetIss = g.JTI, g.Issuer
		return ap
	}
	if g.Scope.NegotiationID != "" {
		if general := Select(au.grants[agent], "", now, revoked); general != nil && general.Scope.BudgetCents != nil {
			merged := *g
			merged.Scope.BudgetCents = general.Scope.BudgetCents
			ap.Grant, ap.BudgetJTI, ap.BudgetIss = &merged, general.JTI, general.Issuer
		}
	}
	return ap
}

// WhyNone explains, from the newest general grant the agent uploaded, why
// none applies at now: ErrRevoked, or a *TokenError wrong_issuer, expired or
// not_yet_valid; nil when the agent never had one (the check then says
// "none").
func (au *Authority) WhyNone(agent string, now time.Time) error {
	r, ok := au.newest[agent]
	switch {
	case !ok:
		return nil
	case !r.RevokedAt.IsZero():
		return ErrRevoked
	case r.Issuer != au.thumb[agent]:
		return &TokenError{Code: CodeWrongIssuer, Message: "the grant was signed by a principal key that has since been replaced"}
	case !now.Before(r.ExpiresAt):
		return &TokenError{Code: CodeExpired, Message: "the grant expired at " + wire.Time(r.ExpiresAt)}
	case !r.NotBefore.IsZero() && now.Before(r.NotBefore):
		return &TokenError{Code: CodeNotYetValid, Message: "the grant is not valid before " + wire.Time(r.NotBefore)}
	}
	return nil
}

// Covers reports whether the budget left (limit less spent) covers cents;
// true when the applying grant has no budget.
func (ap Applying) Covers(spentCents, cents int64) bool {
	if ap.BudgetJTI == "" || ap.Grant == nil || ap.Grant.Scope.BudgetCents == nil {
		return true
	}
	return spentCents+cents <= *ap.Grant.Scope.BudgetCents
}
