package venue_test

import (
	"testing"

	"github.com/venuehq/venue/grants"
)

// TestE2EArenaBudget: in the arena a grant's budget is checked against what
// live deals left of it, and an arena deal spends nothing of it. The brand
// of the issue: budget $100, a bare accept of $3,200 in the arena is a
// scope_block on budget, as it would be live.
func TestE2EArenaBudget(t *testing.T) {
	t.Parallel()
	v := newE2E(t)
	brand := v.registerBare("B", "brand")
	v.grant(brand, grants.Scope{BudgetCents: cents(10000)}) // $100
	bouncer := v.register("K", "bouncer")
	negID, _, _ := v.match(brand, bouncer, true)
	b, k := v.room(brand, negID, ""), v.room(bouncer, negID, "")
	b.expect("negotiation_started")
	k.expect("negotiation_started")
	b.send(`{"type":"message","content":"hello"}`)
	b.expect("message_ack")
	k.expect("negotiation_message")
	k.send(`{"type":"propose_terms","terms":{"amount_usd":3200}}`)
	k.expect("message_ack")
	b.expect("negotiation_message")
	b.send(`{"type":"accept"}`)
	sb := b.expect("scope_block")
	if c := sb["checks"].([]any)[0].(map[string]any); c["check"] != "budget" || c["got"] != "3200.00" {
		t.Fatalf("arena accept over the budget: %v", sb)
	}
	// Within what is left: an arena deal, and the budget is not charged.
	b.send(`{"type":"counter_terms","terms":{"amount_usd":80}}`)
	b.expect("message_ack")
	k.expect("negotiation_message")
	k.send(`{"type":"accept"}`)
	k.expect("message_ack")
	if e := k.expect("negotiation_ended"); e["status"] != "deal" {
		t.Fatalf("ended %v", e)
	}
	code, m := v.do("GET", "/v1/grants", brand.key, nil)
	if code != 200 || m["items"].([]any)[0].(map[string]any)["spent_usd"] != "0.00" {
		t.Fatalf("grants after an arena deal: %d %v", code, m)
	}
}
