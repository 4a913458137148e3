package grants

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Check names (DELEGATION.md "The checks"), in the order [Check] reports them.
const (
	CheckGrant        = "grant"
	CheckAmount       = "amount_usd"
	CheckCategory     = "category"
	CheckSends        = "sends"
	CheckCounterparty = "counterparty"
	CheckArenaOnly    = "arena_only"
	CheckBudget       = "budget"
	CheckOfferHash    = "offer_hash"
)

// ErrRevoked is the CheckInput.GrantErr for a grant its principal revoked
// (DELETE /v1/grants/<jti>); the grant check reports it as "revoked".
var ErrRevoked = errors.New("grants: grant revoked")

// Failure is one failed check of a scope_block (DELEGATION.md "The checks"). Limit is the
// grant's limit as text ("3500.00", "[primary_slot]") and Got what the frame
// carried ("4000.00", "none" when absent). A Failure goes to the sender
// alone: Limit reveals the principal's limits and must never reach the
// counterparty or observers.
type Failure struct {
	Check   string `json:"check"`
	Limit   string `json:"limit"`
	Got     string `json:"got"`
	Message string `json:"message"`
}

// CheckInput is a binding frame (propose_terms, counter_terms, accept) seen
// from its sender's grant. Amounts are cents.
type CheckInput struct {
	Grant             *Grant    // the grant Select chose for the sender; nil: none
	GrantErr          error     // why no grant is usable: a *TokenError, ErrRevoked, ...; nil otherwise
	FrameType         string    // "propose_terms", "counter_terms" or "accept"
	AmountCents       int64     // terms.amount_usd (for accept: of the standing proposal)
	HasAmount         bool      // whether terms carry amount_usd
	Category          string    // terms.category; "" absent
	Sends             int       // terms.sends; 0 absent
	Counterparty      string    // the other party's agent id
	Arena             bool      // an arena negotiation (PROTOCOL.md "Endings, reputation, arena")
	BudgetUsedCents   int64     // live deals already concluded under this grant, not this one
	OfferHashMismatch bool      // accept only: its terms/offer_hash/proposal_id do not match the standing proposal
	ExpectedOfferHash string    // accept only: the standing proposal's offer_hash
	GotOfferHash      string    // accept only: what the accept carried
	Now               time.Time // to judge the grant's exp and nbf
	TermsRead                   // flight, usage_rights_days, exclusivity and which keys the terms carry
}

// Check runs every check of DELEGATION.md "The checks" on in and returns every failure, in
// the order grant, amount_usd, category, sends, counterparty, arena_only,
// budget, offer_hash, flight, usage_rights_days, exclusivity_days,
// required_terms; nil means the frame may land. The grant-bound checks
// (amount_usd to budget) run only when a grant is in force: with no usable
// grant only the grant check (and offer_hash) can fail. A limit the grant
// sets on a field the terms leave out fails (Got "none"): authority is never
// assumed. budget counts proposals too, since they would bind if accepted,
// and runs in the arena as well: there BudgetUsedCents is what live deals
// spent (arena deals spend nothing), so a refusal seen in practice is the one
// seen live (PROTOCOL.md "Endings, reputation, arena"); offer_hash runs for
// accept only.
func Check(in CheckInput) []Failure {
	var out []Failure
	add := func(check, limit, got, format string, a ...any) {
		out = append(out, Failure{Check: check, Limit: limit, Got: got, Message: fmt.Sprintf(format, a...)})
	}
	if f := grantFailure(in); f != nil {
		out = append(out, *f)
	} else {
		checkScope(in, &in.Grant.Scope, add)
	}
	if in.FrameType == "accept" && in.OfferHashMismatch {
		add(CheckOfferHash, in.ExpectedOfferHash, in.GotOfferHash,
			"the accept does not match the standing proposal (offer_hash %s)", in.ExpectedOfferHash)
	}
	if len(out) == 0 || out[0].Check != CheckGrant {
		checkTerms(in, &in.Grant.Scope, add)
	}
	return out
}

func grantFailure(in CheckInput) *Failure {
	g := in.Grant
	switch {
	case in.GrantErr != nil:
		var te *TokenError
		switch {
		case errors.As(in.GrantErr, &te):
			return &Failure{CheckGrant, "", te.Code, "the grant is not usable: " + te.Message}
		case errors.Is(in.GrantErr, ErrRevoked):
			return &Failure{CheckGrant, "", "revoked", "the grant was revoked by its principal"}
		}
		return &Failure{CheckGrant, "", "invalid", "the grant is not usable: " + in.GrantErr.Error()}
	case g == nil:
		return &Failure{CheckGrant, "", "none", "no grant: the principal has given this agent no authority to bind"}
	case !g.NotBefore.IsZero() && in.Now.Before(g.NotBefore):
		return &Failure{CheckGrant, stamp(g.NotBefore), CodeNotYetValid, "the grant is not valid before " + stamp(g.NotBefore)}
	case !in.Now.Before(g.ExpiresAt):
		return &Failure{CheckGrant, stamp(g.ExpiresAt), CodeExpired, "the grant expired at " + stamp(g.ExpiresAt)}
	}
	return nil
}

func checkScope(in CheckInput, s *Scope, add func(check, limit, got, format string, a ...any)) {
	if a := s.Amount; a != nil && (a.MinCents != nil || a.MaxCents != nil) {
		switch {
		case !in.HasAmount:
			add(CheckAmount, amountRange(a), "none", "terms carry no amount_usd; the grant allows %s", amountRange(a))
		case a.MaxCents != nil && in.AmountCents > *a.MaxCents:
			add(CheckAmount, FormatUSD(*a.MaxCents), FormatUSD(in.AmountCents),
				"amount_usd %s is above the grant's maximum %s", FormatUSD(in.AmountCents), FormatUSD(*a.MaxCents))
		case a.MinCents != nil && in.AmountCents < *a.MinCents:
			add(CheckAmount, FormatUSD(*a.MinCents), FormatUSD(in.AmountCents),
				"amount_usd %s is below the grant's minimum %s", FormatUSD(in.AmountCents), FormatUSD(*a.MinCents))
		}
	}
	if s.Categories != nil && !slices.Contains(s.Categories, in.Category) {
		add(CheckCategory, list(s.Categories), orNone(in.Category),
			"category %s is not among the grant's categories %s", orNone(in.Category), list(s.Categories))
	}
	if s.MaxSends != nil {
		limit := strconv.Itoa(*s.MaxSends)
		switch {
		case in.Sends == 0:
			add(CheckSends, limit, "none", "terms carry no sends; the grant allows at most %s", limit)
		case in.Sends > *s.MaxSends:
			add(CheckSends, limit, strconv.Itoa(in.Sends), "sends %d is above the grant's maximum %s", in.Sends, limit)
		}
	}
	if s.Counterparties != nil && !slices.Contains(s.Counterparties, in.Counterparty) {
		add(CheckCounterparty, list(s.Counterparties), orNone(in.Counterparty),
			"counterparty %s is not among the grant's counterparties", orNone(in.Counterparty))
	}
	if s.ArenaOnly && !in.Arena {
		add(CheckArenaOnly, "arena", "live", "the grant allows arena negotiations only")
	}
	if s.BudgetCents != nil {
		budget := FormatUSD(*s.BudgetCents)
		switch total := in.BudgetUsedCents + in.AmountCents; {
		case !in.HasAmount:
			add(CheckBudget, budget, "none", "terms carry no amount_usd; the grant has a budget of %s", budget)
		case total > *s.BudgetCents:
			add(CheckBudget, budget, FormatUSD(total),
				"live deals under this grant would total %s (%s already), over the budget %s",
				FormatUSD(total), FormatUSD(in.BudgetUsedCents), budget)
		}
	}
}

// amountRange describes amount_usd for a message: "<= 3500.00",
// ">= 100.00" or "100.00 to 3500.00".
func amountRange(a *AmountLimit) string {
	switch {
	case a.MinCents != nil && a.MaxCents != nil:
		return FormatUSD(*a.MinCents) + " to " + FormatUSD(*a.MaxCents)
	case a.MaxCents != nil:
		return "<= " + FormatUSD(*a.MaxCents)
	}
	return ">= " + FormatUSD(*a.MinCents)
}

func list(l []string) string { return "[" + strings.Join(l, ", ") + "]" }

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
