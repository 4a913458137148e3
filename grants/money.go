package grants

import (
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"strconv"
	"strings"
)

// MaxAmountCents is the largest amount_usd (DELEGATION.md "The checks"): 10,000,000 dollars.
const MaxAmountCents int64 = 10_000_000 * 100

// MaxBudgetCents is the largest budget_usd a grant may give: 1,000,000,000
// dollars. A budget spans many deals, so it may exceed [MaxAmountCents].
const MaxBudgetCents int64 = 1_000_000_000 * 100

// ErrBadAmount is returned (wrapped, with the reason) for a dollar amount
// that is not a JSON number, is negative, has more than two decimals or is
// over its bound. Callers map it to invalid_argument (PROTOCOL.md "Limits and close codes").
var ErrBadAmount = errors.New("bad amount")

// jsonNumber is the JSON number grammar (RFC 8259 §6).
var jsonNumber = regexp.MustCompile(`^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE]([+-]?[0-9]+))?$`)

// maxNumberLen bounds the text of a number we are willing to evaluate.
const maxNumberLen = 40

// parseDecimal reads raw as a JSON number literal (not a string) and returns
// its exact value. Exponents beyond ±30 are refused, so no input can make it
// allocate more than a few words.
func parseDecimal(raw []byte) (*big.Rat, error) {
	s := strings.TrimSpace(string(raw))
	if len(s) > maxNumberLen {
		return nil, errors.New("number is too long")
	}
	m := jsonNumber.FindStringSubmatch(s)
	if m == nil {
		return nil, fmt.Errorf("%s is not a JSON number", quoteShort(s))
	}
	if m[1] != "" {
		e, err := strconv.Atoi(m[1])
		if err != nil || e > 30 || e < -30 {
			return nil, fmt.Errorf("exponent of %s is out of range", s)
		}
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return nil, fmt.Errorf("%s is not a number", s)
	}
	return r, nil
}

// parseUSD reads a dollar amount into cents, bounded by [0, maxCents].
func parseUSD(raw []byte, maxCents int64) (int64, error) {
	r, err := parseDecimal(raw)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrBadAmount, err)
	}
	if r.Sign() < 0 {
		return 0, fmt.Errorf("%w: %s is negative", ErrBadAmount, r.FloatString(2))
	}
	cents := new(big.Rat).Mul(r, big.NewRat(100, 1))
	if !cents.IsInt() {
		return 0, fmt.Errorf("%w: %s has more than 2 decimals", ErrBadAmount, strings.TrimSpace(string(raw)))
	}
	n := cents.Num()
	if !n.IsInt64() || n.Int64() > maxCents {
		return 0, fmt.Errorf("%w: %s is over the maximum %s", ErrBadAmount, strings.TrimSpace(string(raw)), FormatUSD(maxCents))
	}
	return n.Int64(), nil
}

// ParseUSD reads a dollar amount as it appears in JSON (amount_usd in terms
// and in a grant, DELEGATION.md "The checks") and returns it in cents. raw must be a JSON
// number literal (a quoted string is refused) from 0 to 10,000,000 with at
// most two decimals; 3200, 3200.0, 3.2e3 and 3200.00 are all 320000 cents.
// Every failure wraps [ErrBadAmount]; nothing is rounded.
func ParseUSD(raw []byte) (int64, error) { return parseUSD(raw, MaxAmountCents) }

// ParseBudgetUSD is ParseUSD for budget_usd, whose bound is [MaxBudgetCents]
// (a budget spans many deals): what a grant's scope reads.
func ParseBudgetUSD(raw []byte) (int64, error) { return parseUSD(raw, MaxBudgetCents) }

// FormatUSD renders cents as dollars with exactly two decimals: 350000 is
// "3500.00", -5 is "-0.05". It is the form of Failure.Limit and Failure.Got.
func FormatUSD(cents int64) string {
	sign := ""
	u := uint64(cents)
	if cents < 0 {
		sign, u = "-", uint64(-cents) // two's complement: fine for MinInt64 too
	}
	return fmt.Sprintf("%s%d.%02d", sign, u/100, u%100)
}

// FormatDollars renders cents as a person reads dollars: a dollar sign,
// thousands grouped, two decimals: 320000 is "$3,200.00", -5 is "-$0.05".
// The one form of an amount in text the venue writes for people (the
// house agents' messages, venue connect, the pages' server side).
func FormatDollars(cents int64) string {
	s := FormatUSD(cents)
	sign := ""
	if s[0] == '-' {
		sign, s = "-", s[1:]
	}
	whole, frac, _ := strings.Cut(s, ".")
	var b strings.Builder
	for i := range len(whole) {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteByte(whole[i])
	}
	return sign + "$" + b.String() + "." + frac
}

// usdJSON renders non-negative cents as the shortest JSON number of dollars:
// 350000 is 3500, 350050 is 3500.5, 350055 is 3500.55.
func usdJSON(cents int64) []byte {
	s := FormatUSD(cents)
	s = strings.TrimRight(s, "0")
	s = strings.TrimSuffix(s, ".")
	return []byte(s)
}

// parseInt reads raw as a JSON number that is an integer in [lo, hi]
// (2 and 2.0 are both 2).
func parseInt(raw []byte, lo, hi int64) (int64, error) {
	r, err := parseDecimal(raw)
	if err != nil {
		return 0, err
	}
	if !r.IsInt() {
		return 0, fmt.Errorf("%s is not an integer", strings.TrimSpace(string(raw)))
	}
	n := r.Num()
	if !n.IsInt64() || n.Int64() < lo || n.Int64() > hi {
		return 0, fmt.Errorf("%s is out of range %d-%d", strings.TrimSpace(string(raw)), lo, hi)
	}
	return n.Int64(), nil
}

// quoteShort quotes s for an error message, cut to 40 bytes.
func quoteShort(s string) string {
	if len(s) > 40 {
		s = s[:40] + "..."
	}
	return strconv.Quote(s)
}
