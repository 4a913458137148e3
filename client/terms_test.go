package client

import (
	"encoding/json"
	"testing"
)

// The terms beyond the amount go out and come back as the venue spells
// them; left out when unset.
func TestTermsDeliveryKeys(t *testing.T) {
	t.Parallel()
	ninety := 90
	in := Terms{AmountCents: 320050, Category: "primary_slot", Flight: &Flight{Start: "2026-06-01", End: "2026-06-30"},
		UsageRightsDays: &ninety, Exclusivity: &Exclusivity{Categories: []string{"fintech"}, Days: 30}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"amount_usd":3200.5,"category":"primary_slot","flight":{"start":"2026-06-01","end":"2026-06-30"},"usage_rights_days":90,"exclusivity":{"categories":["fintech"],"days":30}}`
	if string(b) != want {
		t.Fatalf("marshal %s, want %s", b, want)
	}
	out, err := ParseTerms(b)
	if err != nil || out.Flight == nil || out.Flight.End != "2026-06-30" || out.UsageRightsDays == nil || *out.UsageRightsDays != 90 ||
		out.Exclusivity == nil || out.Exclusivity.Days != 30 {
		t.Fatalf("read back %+v %v", out, err)
	}
	if b, _ := json.Marshal(Terms{AmountCents: 100}); string(b) != `{"amount_usd":1}` {
		t.Fatalf("unset keys written: %s", b)
	}
}
