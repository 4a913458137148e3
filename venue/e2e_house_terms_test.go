package venue_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/venuehq/venue/arena"
	"github.com/venuehq/venue/grants"
	"github.com/venuehq/venue/venue"
)

// TestE2EHouseKeepsTheTerms: a brand whose grant limits the amount, the
// categories and the sends (DELEGATION.md's example grant) practises
// against the house bouncer by proposing and countering; the house's
// counters keep the category and the sends of the terms they answer and
// move only the amount, so the brand accepts one under $3,500 and gets a
// deal.
func TestE2EHouseKeepsTheTerms(t *testing.T) {
	t.Parallel()
	v, h := houseVenue(t)
	brand := v.registerBare("Limited Brand", "brand")
	two := 2
	v.grant(brand, grants.Scope{Amount: &grants.AmountLimit{MaxCents: cents(3500_00)}, Categories: []string{"primary_slot"}, MaxSends: &two})
	bl := v.lobby(brand)
	bl.send(map[string]any{"type": "submit_offer", "id": "o1", "to": h.BouncerID(), "arena": true,
		"offer": map[string]any{"title": "Practice", "terms": map[string]any{"amount_usd": 3000, "category": "primary_slot", "sends": 2}}})
	off := bl.expect("offer_submitted")
	bl.send(map[string]any{"type": "create_negotiation", "id": "c1", "offer_id": off["offer_id"]})
	negID := nextTwo(t, bl, "negotiation_created", "negotiation_accepted")["negotiation_created"]["negotiation_id"].(string)
	b := v.room(brand, negID, "")
	b.expect("negotiation_started")

	// The house's answer to each of the brand's moves: a counter that
	// keeps the terms' other keys.
	houseCounter := func() map[string]any {
		t.Helper()
		m := b.expect("negotiation_message")
		terms, _ := m["terms"].(map[string]any)
		if m["frame_type"] != "counter_terms" || terms["category"] != "primary_slot" || terms["sends"] != 2.0 {
			t.Fatalf("the house's answer: %v", m)
		}
		return m
	}
	b.send(`{"type":"propose_terms","id":"p1","terms":{"amount_usd":2800,"category":"primary_slot","sends":2}}`)
	b.expect("message_ack")
	first := houseCounter() // its opening, $4,500
	if first["terms"].(map[string]any)["amount_usd"] != 4500.0 {
		t.Fatalf("the house's opening: %v", first)
	}
	b.send(`{"type":"counter_terms","id":"p2","terms":{"amount_usd":3000,"category":"primary_slot","sends":2}}`)
	b.expect("message_ack")
	second := houseCounter() // halfway: $3,750
	b.send(`{"type":"counter_terms","id":"p3","terms":{"amount_usd":3100,"category":"primary_slot","sends":2}}`)
	b.expect("message_ack")
	third := houseCounter() // halfway: $3,425
	amount := third["terms"].(map[string]any)["amount_usd"].(float64)
	if amount >= 3500 || amount <= 3100 || second["terms"].(map[string]any)["amount_usd"].(float64) <= amount {
		t.Fatalf("the house's counters: %v then %v", second, third)
	}
	b.send(`{"type":"accept","id":"a1","offer_hash":"` + third["offer_hash"].(string) + `"}`)
	b.expect("message_ack")
	if end := b.expect("negotiation_ended"); end["status"] != "deal" {
		t.Fatalf("ended: %v", end)
	}
}

// TestE2EHouseCaps: the house plays at most arena.DefaultMaxPerBrand
// negotiations with one brand at once; the next request is declined at
// once with a reason that names rate_limited, and another brand is still
// served.
func TestE2EHouseCaps(t *testing.T) {
	t.Parallel()
	v, h := houseVenue(t)
	ask := func(bl *e2eConn, n int) *e2eConn {
		t.Helper()
		id := fmt.Sprint(n)
		bl.send(map[string]any{"type": "submit_offer", "id": "o" + id, "to": h.BouncerID(), "arena": true, "offer": map[string]any{"title": "Practice " + id}})
		off := bl.expect("offer_submitted")
		bl.send(map[string]any{"type": "create_negotiation", "id": "c" + id, "offer_id": off["offer_id"]})
		return bl
	}
	brand := v.register("Spammy Brand", "brand")
	bl := v.lobby(brand)
	for i := range arena.DefaultMaxPerBrand {
		if got := nextTwo(t, ask(bl, i), "negotiation_created", "negotiation_accepted"); got["negotiation_accepted"] == nil {
			t.Fatalf("request %d: %v", i, got)
		}
	}
	got := nextTwo(t, ask(bl, 9), "negotiation_created", "negotiation_declined")
	if r := str(got["negotiation_declined"]["reason"]); !strings.HasPrefix(r, "rate_limited: ") {
		t.Fatalf("one request too many: %v", got)
	}
	other := v.lobby(v.register("Other Brand", "brand"))
	if got := nextTwo(t, ask(other, 1), "negotiation_created", "negotiation_accepted"); got["negotiation_accepted"] == nil {
		t.Fatalf("another brand: %v", got)
	}
}

// TestE2EArenaPurged: an arena negotiation that ended is deleted with its
// transcript once it is older than Config.ArenaRetention (the node's purge
// runs every 10 minutes); a live-mode one of the same age stays.
func TestE2EArenaPurged(t *testing.T) {
	t.Parallel()
	v := newE2E(t, func(c *venue.Config) { c.ArenaRetention = time.Hour })
	brand, bouncer := v.register("Acme", "brand"), v.register("Letters", "bouncer")
	play := func(arena bool) string {
		negID, _, _ := v.match(brand, bouncer, arena)
		b := v.room(brand, negID, "")
		b.expect("negotiation_started")
		b.send(`{"type":"walk"}`)
		b.expect("message_ack")
		b.expect("negotiation_ended")
		return negID
	}
	arenaID, liveID := play(true), play(false)
	if code, _ := v.do("GET", "/v1/negotiations/"+arenaID+"/transcript", "", nil); code != 200 {
		t.Fatalf("the transcript before the purge: %d", code)
	}
	deadline := time.Now().Add(e2eWait)
	for {
		v.clock.Advance(10 * time.Minute) // whenever the loop armed its timer, it fires
		if code, _ := v.do("GET", "/v1/negotiations/"+arenaID, "", nil); code == 404 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the arena negotiation is still stored past the retention")
		}
		time.Sleep(10 * time.Millisecond) // the purge runs on the node's own goroutine
	}
	if code, _ := v.do("GET", "/v1/negotiations/"+arenaID+"/transcript", "", nil); code != 404 {
		t.Fatalf("the purged negotiation's transcript: %d", code)
	}
	if code, _ := v.do("GET", "/v1/negotiations/"+liveID, "", nil); code != 200 {
		t.Fatalf("a live-mode negotiation after the purge: %d", code)
	}
}

// TestE2EHouseInProcess: the house agents reach their node in-process, so
// a brand that holds every socket its address may open still gets the
// house bouncer into its practice room (the house counts against no
// address's cap), while the brand's own next socket is refused.
func TestE2EHouseInProcess(t *testing.T) {
	t.Parallel()
	v, h := houseVenue(t, func(c *venue.Config) { c.Caps.SocketsPerAddress = 2 })
	brand := v.register("Crowded Brand", "brand")
	bl := v.lobby(brand) // the address's first socket
	bl.send(map[string]any{"type": "submit_offer", "id": "o1", "to": h.BouncerID(), "arena": true,
		"offer": map[string]any{"title": "Practice", "terms": map[string]any{"amount_usd": 3000}}})
	off := bl.expect("offer_submitted")
	bl.send(map[string]any{"type": "create_negotiation", "id": "c1", "offer_id": off["offer_id"]})
	negID := nextTwo(t, bl, "negotiation_created", "negotiation_accepted")["negotiation_created"]["negotiation_id"].(string)
	b := v.room(brand, negID, "") // its second: the address is full
	b.expect("negotiation_started")
	v.refused("/v1/negotiations/"+negID+"/ws/observe", nil)
	b.send(`{"type":"propose_terms","id":"p1","terms":{"amount_usd":2800}}`)
	b.expect("message_ack")
	if m := b.expect("negotiation_message"); m["frame_type"] != "counter_terms" || m["from"] != h.BouncerID() {
		t.Fatalf("the house's answer: %v", m)
	}
}
