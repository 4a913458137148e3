package negotiation

import (
	"encoding/json"
	"strings"
	"testing"
)

// The terms beyond the amount: valid ones are read, every bad one is
// invalid_argument naming its key.
func TestParseDeliveryTerms(t *testing.T) {
	t.Parallel()
	good := `{"amount_usd":100,"flight":{"start":"2026-06-01","end":"2026-06-30"},"usage_rights_days":90,` +
		`"exclusivity":{"categories":["fintech","crypto"],"days":30},"other":{"x":1}}`
	tm, werr := ParseTerms(json.RawMessage(good))
	if werr != nil {
		t.Fatal(werr)
	}
	if tm.Flight == nil || tm.Flight.Start != "2026-06-01" || tm.Flight.End != "2026-06-30" ||
		tm.UsageRightsDays == nil || *tm.UsageRightsDays != 90 || tm.Exclusivity == nil || tm.Exclusivity.Days != 30 ||
		len(tm.Exclusivity.Categories) != 2 || !tm.Has("flight") || !tm.Has("exclusivity") || tm.Has("sends") {
		t.Fatalf("read %+v", tm)
	}
	if tm, _ := ParseTerms(json.RawMessage(`{"amount_usd":1,"usage_rights_days":0,"flight":{"start":"2026-01-01","end":"2026-01-01"}}`)); tm.UsageRightsDays == nil || *tm.UsageRightsDays != 0 || tm.Flight == nil {
		t.Fatalf("zero usage rights and a one-day flight: %+v", tm)
	}
	cats21 := `["` + strings.Repeat(`a","`, 20) + `a"]`
	bad := map[string]string{
		`"flight":{"start":"2026-06-30","end":"2026-06-01"}`:                        "flight",
		`"flight":{"start":"2025-01-01","end":"2026-01-03"}`:                        "flight", // 367 days
		`"flight":{"start":"2026-6-1","end":"2026-06-30"}`:                          "flight",
		`"flight":{"start":"2026-06-01"}`:                                           "flight",
		`"flight":{"start":"2026-06-01","end":"2026-06-02","x":1}`:                  "flight",
		`"flight":"2026-06-01"`:                                                     "flight",
		`"flight":null`:                                                             "flight",
		`"usage_rights_days":3651`:                                                  "usage_rights_days",
		`"usage_rights_days":-1`:                                                    "usage_rights_days",
		`"usage_rights_days":1.5`:                                                   "usage_rights_days",
		`"usage_rights_days":"30"`:                                                  "usage_rights_days",
		`"exclusivity":{"categories":[],"days":30}`:                                 "exclusivity",
		`"exclusivity":{"categories":["a"],"days":0}`:                               "exclusivity",
		`"exclusivity":{"categories":["a"],"days":366}`:                             "exclusivity",
		`"exclusivity":{"categories":[""],"days":3}`:                                "exclusivity",
		`"exclusivity":{"categories":[1],"days":3}`:                                 "exclusivity",
		`"exclusivity":{"categories":` + cats21 + `,"days":3}`:                      "exclusivity",
		`"exclusivity":{"categories":["` + strings.Repeat("x", 65) + `"],"days":3}`: "exclusivity",
		`"exclusivity":{"categories":["a"]}`:                                        "exclusivity",
	}
	for frag, key := range bad {
		_, werr := ParseTerms(json.RawMessage(`{"amount_usd":1,` + frag + `}`))
		if werr == nil || werr.Code != "invalid_argument" || !strings.Contains(werr.Message, "terms."+key) {
			t.Errorf("%s: %v, want invalid_argument naming terms.%s", frag, werr, key)
		}
	}
}

// The new keys are part of the offer hash like every key.
func TestDeliveryTermsHashed(t *testing.T) {
	t.Parallel()
	a, _ := OfferHash(json.RawMessage(`{"amount_usd":1,"usage_rights_days":30}`))
	b, _ := OfferHash(json.RawMessage(`{"amount_usd":1,"usage_rights_days":31}`))
	if a == b {
		t.Fatal("usage_rights_days is not in the offer hash")
	}
}

func FuzzParseTerms(f *testing.F) {
	f.Add([]byte(`{"amount_usd":1,"flight":{"start":"2026-06-01","end":"2026-06-30"},"exclusivity":{"categories":["a"],"days":3}}`))
	f.Add([]byte(`{"amount_usd":1,"usage_rights_days":90}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		tm, werr := ParseTerms(b)
		if werr != nil {
			return
		}
		if tm.Flight != nil && tm.Flight.End < tm.Flight.Start {
			t.Fatalf("flight ends before it starts: %+v", tm.Flight)
		}
		if tm.UsageRightsDays != nil && (*tm.UsageRightsDays < 0 || *tm.UsageRightsDays > MaxUsageRightsDays) {
			t.Fatal("usage_rights_days out of range")
		}
		if e := tm.Exclusivity; e != nil && (e.Days < 1 || e.Days > MaxExclusivityDays || len(e.Categories) == 0) {
			t.Fatalf("exclusivity out of range: %+v", e)
		}
	})
}
