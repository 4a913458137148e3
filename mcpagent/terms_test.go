package mcpagent

import (
	"encoding/json"
	"testing"
)

// The propose and counter tools carry the terms beyond the amount as the
// venue spells them, and leave out what was not given.
func TestDeliveryTermsIn(t *testing.T) {
	t.Parallel()
	ninety, thirty := 90, 30
	d := deliveryTermsIn{FlightStart: "2026-06-01", FlightEnd: "2026-06-30", UsageRightsDays: &ninety,
		ExclusivityCategories: []string{"fintech"}, ExclusivityDays: &thirty}
	b, _ := json.Marshal(d.terms(100, "", 0))
	if want := `{"amount_usd":1,"flight":{"start":"2026-06-01","end":"2026-06-30"},"usage_rights_days":90,"exclusivity":{"categories":["fintech"],"days":30}}`; string(b) != want {
		t.Fatalf("%s, want %s", b, want)
	}
	if b, _ := json.Marshal(deliveryTermsIn{}.terms(100, "x", 2)); string(b) != `{"amount_usd":1,"category":"x","sends":2}` {
		t.Fatalf("nothing given: %s", b)
	}
}
