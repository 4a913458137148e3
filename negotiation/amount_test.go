package negotiation

import (
	"encoding/json"
	"testing"

	"github.com/venuehq/venue/grants"
)

// TestAmountParsersAgree: the terms' parser (ParseAmount) and the grants'
// (grants.ParseUSD) give one answer on the edge cases, the one PROTOCOL.md
// "The envelope of a party's frame" gives: a JSON number from 0 to
// 10,000,000 with at most 2 decimals, in integer cents.
func TestAmountParsersAgree(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in    string
		cents int64
		ok    bool
	}{
		{`0`, 0, true},
		{`0.01`, 1, true},
		{`10000000`, grants.MaxAmountCents, true},
		{`10000000.01`, 0, false},
		{`1e3`, 100000, true},
		{`-0`, 0, true},
		{`3.005`, 0, false},
	} {
		t.Run(tc.in, func(t *testing.T) {
			t.Parallel()
			got, werr := ParseAmount(json.RawMessage(tc.in))
			gotUSD, err := grants.ParseUSD([]byte(tc.in))
			if (werr == nil) != tc.ok || (err == nil) != tc.ok {
				t.Fatalf("ParseAmount: %v, ParseUSD: %v; want accepted %v", werr, err, tc.ok)
			}
			if got != tc.cents || gotUSD != tc.cents {
				t.Fatalf("ParseAmount %d, ParseUSD %d cents; want %d", got, gotUSD, tc.cents)
			}
		})
	}
	if grants.MaxAmountCents != 10_000_000*100 {
		t.Fatalf("MaxAmountCents %d", grants.MaxAmountCents)
	}
}
