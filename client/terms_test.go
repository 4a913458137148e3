package client

import (
	"encoding/json"
	"strings"
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

// A bouncer of browse_bouncers says "online" even when false: an agent
// must tell "offline" from "not said" (PROTOCOL.md "Lobby socket"); a
// profile of its own says nothing of it.
func TestBouncerItemSaysOnline(t *testing.T) {
	b, err := json.Marshal(BouncerItem{Profile: Profile{AgentID: "agt_1"}})
	if err != nil || !strings.Contains(string(b), `"online":false`) {
		t.Fatalf("%s %v", b, err)
	}
	var got BouncerItem
	if err := json.Unmarshal([]byte(`{"agent_id":"agt_1","online":true}`), &got); err != nil || !got.Online {
		t.Fatalf("%+v %v", got, err)
	}
	if b, _ := json.Marshal(Profile{AgentID: "agt_1"}); strings.Contains(string(b), "online") {
		t.Fatalf("a profile says %s", b)
	}
}
