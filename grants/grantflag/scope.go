package grantflag

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/venuehq/venue/grants"
)

// Scope is the flags that build a [grants.Scope] (DELEGATION.md "The `grant` claim"),
// shared by `venue grant` and `venue decide ... approve`. Each flag given
// restricts; a flag left out leaves its key absent, which does not.
type Scope struct {
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

// flagNames are the flags Scope registers.
var flagNames = []string{"role", "max-amount", "min-amount", "category", "max-sends", "budget", "counterparty", "arena-only",
	"flight-not-before", "flight-not-after", "min-usage-rights-days", "max-usage-rights-days", "min-exclusivity-days", "max-exclusivity-days", "require"}

// Register adds the scope flags to f.
func (s *Scope) Register(f *pflag.FlagSet) {
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
func (s *Scope) termLimits(set func(string) bool, sc *grants.Scope) {
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

// AnySet reports the first scope flag given in f, or "".
func (s *Scope) AnySet(f *pflag.FlagSet) string {
	for _, n := range flagNames {
		if f.Changed(n) {
			return n
		}
	}
	return ""
}

// Build turns the flags given in f into a scope; flags not given stay
// absent. Amounts are dollars with at most two decimals, read exactly
// (grants.ParseUSD; the budget grants.ParseBudgetUSD); the scope must
// pass grants.Scope.Validate. Errors name the flag.
func (s *Scope) Build(f *pflag.FlagSet) (grants.Scope, error) {
	set := f.Changed
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
