package venue_test

import "testing"

// TestE2EStrictLogQuery: the receipt log's routes take only the query
// parameters PROTOCOL.md "The receipt log" gives them, each once (the
// checkpoint none): another, or one given twice, is 422 invalid_argument
// naming it.
func TestE2EStrictLogQuery(t *testing.T) {
	t.Parallel()
	v := newE2E(t)
	checkStrictQuery(t, v, []strictQueryRoute{
		{"/v1/log/checkpoint", "", "", ""},
		{"/v1/log/proof/inclusion", "", "negotiation_id=neg_nope&tree_size=1", "negotiation_id=neg_nope"},
		{"/v1/log/proof/consistency", "", "first=0&second=0", "first=0"},
		{"/v1/log/entries", "", "start=0&end=0", "end=0"},
	})
}
