package grants

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"
)

// The scope_block checks of the terms beyond the amount (DELEGATION.md "The
// checks"), run after the others in this order.
const (
	CheckFlight          = "flight"
	CheckUsageRightsDays = "usage_rights_days"
	CheckExclusivityDays = "exclusivity_days"
	CheckRequiredTerms   = "required_terms"
)

// Limits of the grant keys bounding terms (as the terms they bound).
const (
	maxUsageRightsDays = 3650
	maxExclusivityDays = 365
	dateLayout         = "2006-01-02"
)

// TermKeys are the term keys a grant's required_terms may name.
var TermKeys = []string{"category", "sends", "flight", "usage_rights_days", "exclusivity"}

// FlightLimit is the grant's `flight`: the terms' flight must be present
// and lie within [NotBefore, NotAfter] (dates YYYY-MM-DD; "" unbounded).
type FlightLimit struct {
	NotBefore string
	NotAfter  string
}

// DaysLimit is a {"min"?, "max"?} range of whole days; nil ends are open.
type DaysLimit struct {
	Min *int
	Max *int
}

// TermsRead is what the checks need of the terms beyond amount, category
// and sends: nil or "" when the terms leave the key out.
type TermsRead struct {
	FlightStart, FlightEnd string // YYYY-MM-DD
	UsageRightsDays        *int
	ExclusivityDays        *int
	Present                []string // which of TermKeys the terms carry
}

func validDate(s string) bool {
	_, err := time.Parse(dateLayout, s)
	return err == nil && len(s) == len(dateLayout)
}

// validateTermLimits checks the ranges of the keys bounding terms.
func (s *Scope) validateTermLimits() error {
	if f := s.Flight; f != nil {
		for _, d := range []string{f.NotBefore, f.NotAfter} {
			if d != "" && !validDate(d) {
				return fmt.Errorf("flight date %s is not YYYY-MM-DD", quoteShort(d))
			}
		}
		if f.NotBefore != "" && f.NotAfter != "" && f.NotAfter < f.NotBefore {
			return fmt.Errorf("flight.not_after %s is before flight.not_before %s", f.NotAfter, f.NotBefore)
		}
	}
	if err := validateDays("usage_rights_days", s.UsageRightsDays, maxUsageRightsDays); err != nil {
		return err
	}
	if err := validateDays("exclusivity_days", s.ExclusivityDays, maxExclusivityDays); err != nil {
		return err
	}
	for _, k := range s.RequiredTerms {
		if !slices.Contains(TermKeys, k) {
			return fmt.Errorf("required_terms entry %s is not one of %v", quoteShort(k), TermKeys)
		}
	}
	return nil
}

func validateDays(name string, d *DaysLimit, hi int) error {
	if d == nil {
		return nil
	}
	for _, v := range []*int{d.Min, d.Max} {
		if v != nil && (*v < 0 || *v > hi) {
			return fmt.Errorf("%s %d is out of range 0-%d", name, *v, hi)
		}
	}
	if d.Min != nil && d.Max != nil && *d.Min > *d.Max {
		return fmt.Errorf("%s.min %d is above %s.max %d", name, *d.Min, name, *d.Max)
	}
	return nil
}

func setFlight(v json.RawMessage) (*FlightLimit, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(v, &m); err != nil || m == nil {
		return nil, errors.New(`want an object {"not_before","not_after"}`)
	}
	f := &FlightLimit{}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if isNull(m[k]) {
			continue
		}
		var d string
		if err := json.Unmarshal(m[k], &d); err != nil || !validDate(d) {
			return nil, fmt.Errorf("%s: want a date YYYY-MM-DD", k)
		}
		switch k {
		case "not_before":
			f.NotBefore = d
		case "not_after":
			f.NotAfter = d
		default:
			return nil, fmt.Errorf("unknown key %s", quoteShort(k))
		}
	}
	return f, nil
}

func setDays(v json.RawMessage, hi int64) (*DaysLimit, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(v, &m); err != nil || m == nil {
		return nil, errors.New(`want an object {"min","max"}`)
	}
	d := &DaysLimit{}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if isNull(m[k]) {
			continue
		}
		n, err := parseInt(m[k], 0, hi)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		i := int(n)
		switch k {
		case "min":
			d.Min = &i
		case "max":
			d.Max = &i
		default:
			return nil, fmt.Errorf("unknown key %s", quoteShort(k))
		}
	}
	return d, nil
}

// termKeysWire is the JSON of the keys bounding terms (MarshalJSON).
type termKeysWire struct {
	Flight          *flightWire `json:"flight,omitempty"`
	UsageRightsDays *daysWire   `json:"usage_rights_days,omitempty"`
	ExclusivityDays *daysWire   `json:"exclusivity_days,omitempty"`
	RequiredTerms   *[]string   `json:"required_terms,omitempty"`
}

type flightWire struct {
	NotBefore string `json:"not_before,omitempty"`
	NotAfter  string `json:"not_after,omitempty"`
}

type daysWire struct {
	Min *int `json:"min,omitempty"`
	Max *int `json:"max,omitempty"`
}

func (s *Scope) termKeysWire() termKeysWire {
	var w termKeysWire
	if s.Flight != nil {
		w.Flight = &flightWire{NotBefore: s.Flight.NotBefore, NotAfter: s.Flight.NotAfter}
	}
	if s.UsageRightsDays != nil {
		w.UsageRightsDays = &daysWire{Min: s.UsageRightsDays.Min, Max: s.UsageRightsDays.Max}
	}
	if s.ExclusivityDays != nil {
		w.ExclusivityDays = &daysWire{Min: s.ExclusivityDays.Min, Max: s.ExclusivityDays.Max}
	}
	if s.RequiredTerms != nil {
		w.RequiredTerms = &s.RequiredTerms
	}
	return w
}

// checkTerms runs the checks of the terms beyond the amount, in the order
// flight, usage_rights_days, exclusivity_days, required_terms.
func checkTerms(in CheckInput, s *Scope, add func(check, limit, got, format string, a ...any)) {
	t := in.TermsRead
	if f := s.Flight; f != nil {
		limit := dateRange(f.NotBefore, f.NotAfter)
		got := t.FlightStart + " to " + t.FlightEnd
		switch {
		case t.FlightStart == "":
			add(CheckFlight, limit, "none", "terms carry no flight; the grant allows %s", limit)
		case f.NotBefore != "" && t.FlightStart < f.NotBefore, f.NotAfter != "" && t.FlightEnd > f.NotAfter:
			add(CheckFlight, limit, got, "flight %s is not within the grant's %s", got, limit)
		}
	}
	checkDays(CheckUsageRightsDays, s.UsageRightsDays, t.UsageRightsDays, add)
	checkDays(CheckExclusivityDays, s.ExclusivityDays, t.ExclusivityDays, add)
	var missing, present []string
	for _, k := range s.RequiredTerms {
		if slices.Contains(t.Present, k) {
			present = append(present, k)
		} else {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		got := "none"
		if len(present) > 0 {
			got = list(present)
		}
		add(CheckRequiredTerms, list(s.RequiredTerms), got, "terms lack %s, which the grant requires", list(missing))
	}
}

// checkDays checks a day count against a DaysLimit; an absent count is 0
// (got "none").
func checkDays(check string, d *DaysLimit, v *int, add func(check, limit, got, format string, a ...any)) {
	if d == nil || (d.Min == nil && d.Max == nil) {
		return
	}
	n, got := 0, "none"
	if v != nil {
		n, got = *v, strconv.Itoa(*v)
	}
	limit := daysRange(d)
	if (d.Min != nil && n < *d.Min) || (d.Max != nil && n > *d.Max) {
		add(check, limit, got, "%s %s is not within the grant's %s", check, got, limit)
	}
}

func dateRange(lo, hi string) string {
	switch {
	case lo != "" && hi != "":
		return lo + " to " + hi
	case hi != "":
		return "<= " + hi
	case lo != "":
		return ">= " + lo
	}
	return "any"
}

func daysRange(d *DaysLimit) string {
	switch {
	case d.Min != nil && d.Max != nil:
		return strconv.Itoa(*d.Min) + " to " + strconv.Itoa(*d.Max)
	case d.Max != nil:
		return "<= " + strconv.Itoa(*d.Max)
	}
	return ">= " + strconv.Itoa(*d.Min)
}
