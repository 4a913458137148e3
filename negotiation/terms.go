package negotiation

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/gowebpki/jcs"

	"github.com/venuehq/venue/grants"
	"github.com/venuehq/venue/wire"
)

// Limits on `terms` (DELEGATION.md "The checks").
const (
	MaxTermsBytes   = 4096 // terms as JSON, bytes
	MaxTermsDepth   = 4    // nesting of terms, the terms object being 1
	MaxCategoryLen  = 64
	MaxSends        = 1000
	offerHashPrefix = "sha256:"

	MaxFlightDays          = 366  // flight.end - flight.start, days
	MaxUsageRightsDays     = 3650 // usage_rights_days
	MaxExclusivityDays     = 365  // exclusivity.days
	MaxExclusivityCategory = 20   // exclusivity.categories entries
	dateLayout             = "2006-01-02"
)

// Flight is terms.flight: when the sends run, dates YYYY-MM-DD, Start <= End.
type Flight struct {
	Start string
	End   string
}

// Exclusivity is terms.exclusivity: the creator runs no sponsor of these
// categories for Days days.
type Exclusivity struct {
	Categories []string
	Days       int
}

// Terms are the fields of a `terms` object the venue reads; every other key
// is opaque and only kept in Raw (stored, relayed, hashed, never checked).
type Terms struct {
	Raw         json.RawMessage `json:"-"`
	AmountCents int64           `json:"-"` // amount_usd in integer cents
	Category    string          `json:"-"` // "" when absent
	Sends       int             `json:"-"` // 0 when absent
	// Flight, UsageRightsDays and Exclusivity are nil when absent.
	Flight          *Flight      `json:"-"`
	UsageRightsDays *int         `json:"-"`
	Exclusivity     *Exclusivity `json:"-"`
}

// Has reports whether the terms carry key, one of the keys a grant's
// required_terms may name: category, sends, flight, usage_rights_days,
// exclusivity (DELEGATION.md "What the venue reads in `terms`").
func (t Terms) Has(key string) bool {
	switch key {
	case "category":
		return t.Category != ""
	case "sends":
		return t.Sends != 0
	case "flight":
		return t.Flight != nil
	case "usage_rights_days":
		return t.UsageRightsDays != nil
	case "exclusivity":
		return t.Exclusivity != nil
	}
	return false
}

// ParseTerms validates a `terms` value of a binding frame: an object of at most
// 4 KB nesting at most 4 deep, with `amount_usd` required (a number, at most 2
// decimals, 0 to 10,000,000), and if present `category` (string, at most 64
// chars), `sends` (integer 1-1000), `flight` ({"start","end"} dates
// YYYY-MM-DD, start <= end, at most 366 days apart), `usage_rights_days`
// (integer 0-3650) and `exclusivity` ({"categories": 1-20 strings of 1-64
// chars, "days": 1-365}) (DELEGATION.md "What the venue reads in `terms`").
// Errors are CodeInvalidArgument naming the key.
func ParseTerms(raw json.RawMessage) (Terms, *wire.Error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return Terms{}, wire.Errorf(wire.CodeInvalidArgument, "terms must be an object")
	}
	if len(raw) > MaxTermsBytes {
		return Terms{}, wire.Errorf(wire.CodeInvalidArgument, "terms are %d bytes, at most %d", len(raw), MaxTermsBytes)
	}
	if d := depth(raw); d > MaxTermsDepth {
		return Terms{}, wire.Errorf(wire.CodeInvalidArgument, "terms nest %d deep, at most %d", d, MaxTermsDepth)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return Terms{}, wire.Errorf(wire.CodeInvalidArgument, "terms must be an object")
	}
	t := Terms{Raw: append(json.RawMessage(nil), raw...)}
	a, ok := m["amount_usd"]
	if !ok {
		return Terms{}, wire.Errorf(wire.CodeInvalidArgument, "terms.amount_usd is required")
	}
	cents, err := ParseAmount(a)
	if err != nil {
		return Terms{}, err
	}
	t.AmountCents = cents
	if c, ok := m["category"]; ok {
		var s string
		if !isJSONString(c) || json.Unmarshal(c, &s) != nil {
			return Terms{}, wire.Errorf(wire.CodeInvalidArgument, "terms.category must be a string")
		}
		if len([]rune(s)) > MaxCategoryLen {
			return Terms{}, wire.Errorf(wire.CodeInvalidArgument, "terms.category is longer than %d characters", MaxCategoryLen)
		}
		t.Category = s
	}
	if s, ok := m["sends"]; ok {
		i, werr := termsInt(s, "sends", 1, MaxSends)
		if werr != nil {
			return Terms{}, werr
		}
		t.Sends = i
	}
	if werr := t.readDeliveryTerms(m); werr != nil {
		return Terms{}, werr
	}
	return t, nil
}

// readDeliveryTerms reads flight, usage_rights_days and exclusivity.
func (t *Terms) readDeliveryTerms(m map[string]json.RawMessage) *wire.Error {
	if v, ok := m["flight"]; ok {
		f, werr := parseFlight(v)
		if werr != nil {
			return werr
		}
		t.Flight = f
	}
	if v, ok := m["usage_rights_days"]; ok {
		i, werr := termsInt(v, "usage_rights_days", 0, MaxUsageRightsDays)
		if werr != nil {
			return werr
		}
		t.UsageRightsDays = &i
	}
	if v, ok := m["exclusivity"]; ok {
		e, werr := parseExclusivity(v)
		if werr != nil {
			return werr
		}
		t.Exclusivity = e
	}
	return nil
}

// termsInt reads terms.<key> as an integer from lo to hi.
func termsInt(raw json.RawMessage, key string, lo, hi int) (int, *wire.Error) {
	var n json.Number
	if !isJSONNumber(raw) || json.Unmarshal(raw, &n) != nil {
		return 0, wire.Errorf(wire.CodeInvalidArgument, "terms.%s must be an integer", key)
	}
	bad := wire.Errorf(wire.CodeInvalidArgument, "terms.%s must be an integer from %d to %d", key, lo, hi)
	i, err := n.Int64()
	if err != nil || i < int64(lo) || i > int64(hi) {
		return 0, bad
	}
	return int(i), nil
}

// ParseDate reads a calendar date YYYY-MM-DD (as terms and grants write
// them); false when s is not one.
func ParseDate(s string) (time.Time, bool) {
	d, err := time.Parse(dateLayout, s)
	return d, err == nil && len(s) == len(dateLayout)
}

func parseFlight(raw json.RawMessage) (*Flight, *wire.Error) {
	bad := wire.Errorf(wire.CodeInvalidArgument, `terms.flight must be {"start":"YYYY-MM-DD","end":"YYYY-MM-DD"}, start <= end, at most %d days apart`, MaxFlightDays)
	var w struct {
		Start *string `json:"start"`
		End   *string `json:"end"`
	}
	if !strictObject(raw, "start", "end") || json.Unmarshal(raw, &w) != nil || w.Start == nil || w.End == nil {
		return nil, bad
	}
	start, ok1 := ParseDate(*w.Start)
	end, ok2 := ParseDate(*w.End)
	if !ok1 || !ok2 || end.Before(start) || end.Sub(start) > MaxFlightDays*24*time.Hour {
		return nil, bad
	}
	return &Flight{Start: *w.Start, End: *w.End}, nil
}

func parseExclusivity(raw json.RawMessage) (*Exclusivity, *wire.Error) {
	bad := wire.Errorf(wire.CodeInvalidArgument, `terms.exclusivity must be {"categories":[1-%d strings of 1-%d characters],"days":1-%d}`,
		MaxExclusivityCategory, MaxCategoryLen, MaxExclusivityDays)
	var w struct {
		Categories []json.RawMessage `json:"categories"`
		Days       json.RawMessage   `json:"days"`
	}
	if !strictObject(raw, "categories", "days") || json.Unmarshal(raw, &w) != nil ||
		len(w.Categories) < 1 || len(w.Categories) > MaxExclusivityCategory || w.Days == nil {
		return nil, bad
	}
	e := &Exclusivity{Categories: make([]string, 0, len(w.Categories))}
	for _, c := range w.Categories {
		var s string
		if !isJSONString(c) || json.Unmarshal(c, &s) != nil || s == "" || len([]rune(s)) > MaxCategoryLen {
			return nil, bad
		}
		e.Categories = append(e.Categories, s)
	}
	days, werr := termsInt(w.Days, "exclusivity.days", 1, MaxExclusivityDays)
	if werr != nil {
		return nil, werr
	}
	e.Days = days
	return e, nil
}

// strictObject reports whether raw is a JSON object whose keys are all
// among allowed.
func strictObject(raw json.RawMessage, allowed ...string) bool {
	var m map[string]json.RawMessage
	if len(bytes.TrimSpace(raw)) == 0 || bytes.TrimSpace(raw)[0] != '{' || json.Unmarshal(raw, &m) != nil {
		return false
	}
	for k := range m {
		if !slices.Contains(allowed, k) {
			return false
		}
	}
	return true
}

// ParseAmount reads a dollar amount (a JSON number, at most 2 decimals, 0 to
// 10,000,000: PROTOCOL.md "The envelope of a party's frame") as integer
// cents without going through floating point, so nothing is silently
// rounded. It is grants.ParseUSD, the venue's one money parser, with the
// wire's error: CodeInvalidArgument.
func ParseAmount(raw json.RawMessage) (int64, *wire.Error) {
	var n json.Number
	if !isJSONNumber(raw) || json.Unmarshal(raw, &n) != nil {
		return 0, wire.Errorf(wire.CodeInvalidArgument, "amount_usd must be a number")
	}
	cents, err := grants.ParseUSD(raw)
	if err != nil {
		return 0, wire.Errorf(wire.CodeInvalidArgument, "amount_usd must be a number from 0 to 10000000 with at most 2 decimals, got %s", strings.ToLower(string(n)))
	}
	return cents, nil
}

// OfferHash is "sha256:" + hex(SHA-256(JCS(terms))), JCS being RFC 8785
// canonicalization (PROTOCOL.md "Transcript, offer hash and chain hash"): the same terms in any key order or number
// spelling hash the same. It fails only on terms that are not JSON.
func OfferHash(terms json.RawMessage) (string, error) {
	c, err := jcs.Transform(terms)
	if err != nil {
		return "", err
	}
	return hashCanonical(c), nil
}

// hashCanonical is the offer hash of terms already in RFC 8785 form.
func hashCanonical(c []byte) string {
	sum := sha256.Sum256(c)
	return hashString(sum[:])
}

// hashString is "sha256:" + hex(sum), built in one allocation.
func hashString(sum []byte) string {
	var out [len(offerHashPrefix) + 2*sha256.Size]byte
	copy(out[:], offerHashPrefix)
	hex.Encode(out[len(offerHashPrefix):], sum)
	return string(out[:])
}

// chainSum is SHA-256(prev || c) as a hash string.
func chainSum(prev string, c []byte) string {
	h := sha256.New()
	_, _ = io.WriteString(h, prev)
	h.Write(c)
	var sum [sha256.Size]byte
	return hashString(h.Sum(sum[:0]))
}

// ChainHash is the transcript hash of a frame (PROTOCOL.md "Transcript, offer hash and chain hash"):
// "sha256:" + hex(SHA-256(prev || JCS(frame))), prev being the previous
// entry's hash string ("" for the first entry).
func ChainHash(prev string, frame json.RawMessage) (string, error) {
	c, err := jcs.Transform(frame)
	if err != nil {
		return "", err
	}
	return chainSum(prev, c), nil
}

// isJSONNumber reports whether raw is a JSON number literal. Decoding into a
// json.Number alone is not enough: encoding/json also fills one from a string
// holding a number ("3200") and leaves it empty for null.
func isJSONNumber(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && (raw[0] == '-' || '0' <= raw[0] && raw[0] <= '9')
}

// isJSONString reports whether raw is a JSON string (not null, which decodes
// into a Go string without error).
func isJSONString(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '"'
}

// escapeU marks a frame chainHashOwn leaves to JCS: a \u escape (a control
// character, or encoding/json's output for frames marshal does not write
// itself) is where the venue's encoding and RFC 8785 could differ.
var escapeU = []byte(`\u`)

// chainHashOwn is ChainHash for a frame the venue built with marshal: its
// keys are ASCII and sorted, its numbers integers or canonical terms, its
// strings escaped as RFC 8785 escapes them unless a \u escape appears; so
// without one the frame is its own canonical form and JCS is skipped. The
// result always equals ChainHash(prev, frame) (the room's tests check it).
func chainHashOwn(prev string, frame json.RawMessage) (string, error) {
	if bytes.Contains(frame, escapeU) {
		return ChainHash(prev, frame)
	}
	return chainSum(prev, frame), nil
}

// depth returns how deeply a JSON value nests (a scalar is 0, {} is 1).
func depth(raw []byte) int {
	d, m := 0, 0
	inStr, esc := false, false
	for _, b := range raw {
		switch {
		case esc:
			esc = false
		case inStr && b == '\\':
			esc = true
		case b == '"':
			inStr = !inStr
		case inStr:
		case b == '{' || b == '[':
			d++
			m = max(m, d)
		case b == '}' || b == ']':
			d--
		}
	}
	return m
}

// ReadTerms is what the venue reads of the proposal's terms (ParseTerms of
// Terms, which were valid when proposed); the proposal's own fields when
// they cannot be read.
func (p *Proposal) ReadTerms() Terms {
	if t, err := ParseTerms(p.Terms); err == nil {
		return t
	}
	return Terms{Raw: p.Terms, AmountCents: p.AmountCents, Category: p.Category, Sends: p.Sends}
}
