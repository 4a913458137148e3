package grants

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
)

// ErrBadScope is returned (wrapped, with the reason) for a `grant` claim
// that does not follow DELEGATION.md "The checks".
var ErrBadScope = errors.New("grants: bad scope")

// Limits on the strings of a scope.
const (
	maxCategoryLen = 64   // as terms.category (DELEGATION.md "The checks")
	maxIDLen       = 128  // agent and negotiation ids
	maxListLen     = 1000 // categories, counterparties
	maxSendsLimit  = 1000 // as terms.sends
	roleBrand      = "brand"
	roleBouncer    = "bouncer"
	nullLiteral    = "null"
)

// Scope is the `grant` claim of a grant token (DELEGATION.md "The checks"), e.g.
//
//	{"role":"brand","amount_usd":{"max":3500},"categories":["primary_slot"],
//	 "max_sends":2,"budget_usd":10000,"counterparties":null,
//	 "arena_only":false,"negotiation_id":null}
//
// A key that is absent or null does not restrict: such fields are nil, "" or
// false here. A present but empty list (categories:[]) allows nothing.
// Unknown keys are refused, so a principal never believes a limit holds that
// the venue does not enforce. Money is in cents.
type Scope struct {
	Role           string       // "brand", "bouncer" or "" (absent); informative
	Amount         *AmountLimit // amount_usd; nil: any amount
	Categories     []string     // nil: any category
	MaxSends       *int         // max_sends, 0-1000; nil: any
	BudgetCents    *int64       // budget_usd in cents; nil: no budget
	Counterparties []string     // agent ids; nil: anyone
	ArenaOnly      bool         // arena_only
	NegotiationID  string       // "": not tied to one negotiation
	// The keys bounding terms beyond the amount (grants/terms.go); nil: no limit.
	Flight          *FlightLimit
	UsageRightsDays *DaysLimit
	ExclusivityDays *DaysLimit
	RequiredTerms   []string
}

// AmountLimit is amount_usd: Max a ceiling (binds a brand), Min a floor
// (binds a bouncer), either or both, in cents, each 0 to [MaxAmountCents].
type AmountLimit struct {
	MinCents *int64
	MaxCents *int64
}

// Validate checks the ranges of s: amounts 0 to MaxAmountCents with
// min <= max, budget 0 to MaxBudgetCents, max_sends 0-1000, categories 1-64
// characters, ids non-empty, role brand or bouncer. Errors wrap ErrBadScope.
func (s *Scope) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrBadScope, fmt.Sprintf(format, a...))
	}
	if s.Role != "" && s.Role != roleBrand && s.Role != roleBouncer {
		return bad("role %s, want brand or bouncer", quoteShort(s.Role))
	}
	if a := s.Amount; a != nil {
		for _, v := range []*int64{a.MinCents, a.MaxCents} {
			if v != nil && (*v < 0 || *v > MaxAmountCents) {
				return bad("amount_usd %s is out of range 0-%s", FormatUSD(*v), FormatUSD(MaxAmountCents))
			}
		}
		if a.MinCents != nil && a.MaxCents != nil && *a.MinCents > *a.MaxCents {
			return bad("amount_usd.min %s is above amount_usd.max %s", FormatUSD(*a.MinCents), FormatUSD(*a.MaxCents))
		}
	}
	if s.BudgetCents != nil && (*s.BudgetCents < 0 || *s.BudgetCents > MaxBudgetCents) {
		return bad("budget_usd %s is out of range 0-%s", FormatUSD(*s.BudgetCents), FormatUSD(MaxBudgetCents))
	}
	if s.MaxSends != nil && (*s.MaxSends < 0 || *s.MaxSends > maxSendsLimit) {
		return bad("max_sends %d is out of range 0-%d", *s.MaxSends, maxSendsLimit)
	}
	if err := checkList("categories", s.Categories, maxCategoryLen); err != nil {
		return bad("%v", err)
	}
	if err := checkList("counterparties", s.Counterparties, maxIDLen); err != nil {
		return bad("%v", err)
	}
	if len(s.NegotiationID) > maxIDLen {
		return bad("negotiation_id is longer than %d bytes", maxIDLen)
	}
	if err := s.validateTermLimits(); err != nil {
		return bad("%v", err)
	}
	return nil
}

func checkList(name string, l []string, maxLen int) error {
	if len(l) > maxListLen {
		return fmt.Errorf("%s has %d entries, at most %d", name, len(l), maxListLen)
	}
	for _, v := range l {
		if v == "" || len(v) > maxLen {
			return fmt.Errorf("%s entry %s must be 1-%d bytes", name, quoteShort(v), maxLen)
		}
	}
	return nil
}

// scopeWire is the JSON form written by MarshalJSON, keys in the order DELEGATION.md "The `grant` claim" lists them.
type scopeWire struct {
	Role           string          `json:"role,omitempty"`
	Amount         *amountWire     `json:"amount_usd,omitempty"`
	Categories     *[]string       `json:"categories,omitempty"`
	MaxSends       *int            `json:"max_sends,omitempty"`
	Budget         json.RawMessage `json:"budget_usd,omitempty"`
	Counterparties *[]string       `json:"counterparties,omitempty"`
	ArenaOnly      bool            `json:"arena_only,omitempty"`
	NegotiationID  string          `json:"negotiation_id,omitempty"`
	termKeysWire
}

type amountWire struct {
	Min json.RawMessage `json:"min,omitempty"`
	Max json.RawMessage `json:"max,omitempty"`
}

// MarshalJSON writes s with only the keys that restrict; dollars are the
// shortest JSON number (3500, 3500.5).
func (s Scope) MarshalJSON() ([]byte, error) {
	w := scopeWire{Role: s.Role, MaxSends: s.MaxSends, ArenaOnly: s.ArenaOnly, NegotiationID: s.NegotiationID, termKeysWire: s.termKeysWire()}
	if s.Amount != nil {
		w.Amount = &amountWire{}
		if s.Amount.MinCents != nil {
			w.Amount.Min = usdJSON(*s.Amount.MinCents)
		}
		if s.Amount.MaxCents != nil {
			w.Amount.Max = usdJSON(*s.Amount.MaxCents)
		}
	}
	if s.Categories != nil {
		w.Categories = &s.Categories
	}
	if s.BudgetCents != nil {
		w.Budget = usdJSON(*s.BudgetCents)
	}
	if s.Counterparties != nil {
		w.Counterparties = &s.Counterparties
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads a `grant` claim strictly (keys matched exactly, unknown
// keys refused, money by [ParseUSD] rules) and validates it. Errors wrap
// ErrBadScope.
func (s *Scope) UnmarshalJSON(raw []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return fmt.Errorf("%w: grant is not a JSON object", ErrBadScope)
	}
	var out Scope
	for _, k := range slices.Sorted(maps.Keys(m)) { // sorted: stable error messages
		v := m[k]
		if isNull(v) {
			continue
		}
		if err := out.setKey(k, v); err != nil {
			return fmt.Errorf("%w: %s: %v", ErrBadScope, k, err)
		}
	}
	if err := out.Validate(); err != nil {
		return err
	}
	*s = out
	return nil
}

func (s *Scope) setKey(k string, v json.RawMessage) error {
	switch k {
	case "role":
		return json.Unmarshal(v, &s.Role)
	case "amount_usd":
		return s.setAmount(v)
	case "categories":
		return unmarshalList(v, &s.Categories)
	case "max_sends":
		n, err := parseInt(v, 0, maxSendsLimit)
		if err != nil {
			return err
		}
		i := int(n)
		s.MaxSends = &i
	case "budget_usd":
		c, err := ParseBudgetUSD(v)
		if err != nil {
			return err
		}
		s.BudgetCents = &c
	case "counterparties":
		return unmarshalList(v, &s.Counterparties)
	case "arena_only":
		return json.Unmarshal(v, &s.ArenaOnly)
	case "negotiation_id":
		if err := json.Unmarshal(v, &s.NegotiationID); err != nil {
			return err
		}
		if s.NegotiationID == "" {
			return errors.New("is empty; use null for none")
		}
	default:
		return s.setTermKey(k, v)
	}
	return nil
}

// setTermKey reads the keys bounding terms beyond the amount.
func (s *Scope) setTermKey(k string, v json.RawMessage) (err error) {
	switch k {
	case "flight":
		s.Flight, err = setFlight(v)
	case "usage_rights_days":
		s.UsageRightsDays, err = setDays(v, maxUsageRightsDays)
	case "exclusivity_days":
		s.ExclusivityDays, err = setDays(v, maxExclusivityDays)
	case "required_terms":
		err = unmarshalList(v, &s.RequiredTerms)
	default:
		err = errors.New("unknown key")
	}
	return err
}

func (s *Scope) setAmount(v json.RawMessage) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(v, &m); err != nil || m == nil {
		return errors.New("want an object {\"min\",\"max\"}")
	}
	a := &AmountLimit{}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		raw := m[k]
		if isNull(raw) {
			continue
		}
		c, err := ParseUSD(raw)
		if err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
		switch k {
		case "min":
			a.MinCents = &c
		case "max":
			a.MaxCents = &c
		default:
			return fmt.Errorf("unknown key %s", quoteShort(k))
		}
	}
	s.Amount = a
	return nil
}

// unmarshalList reads a JSON array of strings; [] gives an empty, non-nil slice.
func unmarshalList(v json.RawMessage, dst *[]string) error {
	var l []string
	if err := json.Unmarshal(v, &l); err != nil {
		return errors.New("want an array of strings")
	}
	if l == nil {
		l = []string{}
	}
	if slices.Contains(l, "") {
		return errors.New("contains an empty string")
	}
	*dst = l
	return nil
}

func isNull(v json.RawMessage) bool {
	return bytes.Equal(bytes.TrimSpace(v), []byte(nullLiteral))
}
