package connect

import (
	"encoding/json"
	"testing"
)

func TestDescribeTermsDelivery(t *testing.T) {
	t.Parallel()
	got := describeTerms(json.RawMessage(`{"amount_usd":3200,"sends":2,"flight":{"start":"2026-06-01","end":"2026-06-30"},"usage_rights_days":90,"exclusivity":{"categories":["fintech"],"days":30},"note":"x"}`))
	want := `$3,200.00 · 2 sends · flight 2026-06-01 to 2026-06-30 · usage rights 90 days · exclusive of fintech for 30 days · note="x"`
	if got != want {
		t.Fatalf("%s\nwant %s", got, want)
	}
}
