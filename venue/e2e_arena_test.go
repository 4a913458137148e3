package venue_test

import (
	"strings"
	"testing"
	"time"

	"github.com/venuehq/venue/arena"
	"github.com/venuehq/venue/grants"
	"github.com/venuehq/venue/venue"
)

// TestE2EArenaBudget: in the arena a grant's budget is checked against what
// live deals left of it, and an arena deal spends nothing of it: with a
// budget of $100, a bare accept of $3,200 in the arena is a scope_block on
// budget, as it would be live.
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

// houseVenue is a test venue with the house agents running.
func houseVenue(t *testing.T, mut ...func(*venue.Config)) (*e2eVenue, *arena.House) {
	t.Helper()
	v := newE2E(t, append([]func(*venue.Config){func(c *venue.Config) { c.HouseAgents = true }}, mut...)...)
	h := v.srv.House()
	if h == nil {
		t.Fatal("no house agents")
	}
	select {
	case <-h.Ready():
	case <-time.After(e2eWait):
		t.Fatal("house agents not connected")
	}
	return v, h
}

// TestE2EHouseBouncer: a brand practises against the house bouncer at any
// hour: the request is taken at once, the house plays its strategy (it
// accepts an offer above its opening), the receipt says arena, and nothing
// changes in reputation or settlements; the feed and the listing show the
// negotiation. A live request to the house bouncer is declined at once.
func TestE2EHouseBouncer(t *testing.T) {
	t.Parallel()
	v, h := houseVenue(t)
	feed := v.dial("/v1/arena/ws")
	brand := v.register("Practising Brand", "brand")
	code, prof := v.do("GET", "/v1/agents/"+h.BouncerID()+"/profile", "", nil)
	if code != 200 || prof["house"] != true || prof["role"] != "bouncer" {
		t.Fatalf("house bouncer profile: %d %v", code, prof)
	}
	bl := v.lobby(brand)
	bl.send(map[string]any{"type": "browse_bouncers", "id": "b1", "q": "house"})
	if items := bl.expect("bouncers")["items"].([]any); len(items) != 1 || items[0].(map[string]any)["house"] != true ||
		items[0].(map[string]any)["online"] != true {
		t.Fatalf("browse for the house: %v", items)
	}
	// Live: declined at once.
	bl.send(map[string]any{"type": "submit_offer", "id": "o0", "to": h.BouncerID(), "arena": false, "offer": map[string]any{"title": "Live try"}})
	off := bl.expect("offer_submitted")
	bl.send(map[string]any{"type": "create_negotiation", "id": "c0", "offer_id": off["offer_id"]})
	// The decline is so quick that its push may come before the reply.
	got := nextTwo(t, bl, "negotiation_created", "negotiation_declined")
	if d := got["negotiation_declined"]; !strings.Contains(str(d["reason"]), "arena") {
		t.Fatalf("live request to the house: %v", got)
	}
	// Arena: accepted at once.
	bl.send(map[string]any{"type": "submit_offer", "id": "o1", "to": h.BouncerID(), "arena": true,
		"offer": map[string]any{"title": "Practice", "terms": map[string]any{"amount_usd": 3200}}})
	off = bl.expect("offer_submitted")
	bl.send(map[string]any{"type": "create_negotiation", "id": "c1", "offer_id": off["offer_id"]})
	got = nextTwo(t, bl, "negotiation_created", "negotiation_accepted")
	negID := got["negotiation_created"]["negotiation_id"].(string)
	if acc := got["negotiation_accepted"]; acc["arena"] != true || acc["negotiation_id"] != negID {
		t.Fatalf("accepted: %v", got)
	}
	if e := feed.expect("arena_negotiation_started"); e["negotiation"].(map[string]any)["negotiation_id"] != negID {
		t.Fatalf("feed: %v", e)
	}
	b := v.room(brand, negID, "")
	b.expect("negotiation_started")
	b.send(`{"type":"propose_terms","id":"p1","terms":{"amount_usd":5000}}`)
	b.expect("message_ack")
	// $5,000 is above the house's opening of $4,800: it accepts.
	m := b.expect("negotiation_message")
	if m["frame_type"] != "accept" {
		t.Fatalf("house move: %v", m)
	}
	end := b.expect("negotiation_ended")
	if end["status"] != "deal" {
		t.Fatalf("ended: %v", end)
	}
	for _, typ := range []string{"arena_negotiation_updated", "arena_negotiation_ended"} { // the accept and the ending are one step
		e := feed.expect(typ)
		if typ == "arena_negotiation_ended" && e["negotiation"].(map[string]any)["deal_amount_usd"] != "5000.00" {
			t.Fatalf("feed ended: %v", e)
		}
	}
	code, list := v.do("GET", "/v1/arena/negotiations?status=ended", "", nil)
	if code != 200 || len(list["items"].([]any)) != 1 {
		t.Fatalf("listing: %d %v", code, list)
	}
	item := list["items"].([]any)[0].(map[string]any)
	if item["negotiation_id"] != negID || item["status"] != "deal" || item["brand"].(map[string]any)["name"] != "Practising Brand" ||
		item["bouncer"].(map[string]any)["name"] != arena.HouseBouncerName || item["started_at"] == nil || item["last_activity_at"] == nil {
		t.Fatalf("listing item: %v", item)
	}
	// No consequences in the arena.
	code, rep := v.do("GET", "/v1/agents/"+brand.id+"/reputation", "", nil)
	if code != 200 || rep["reputation"] != 0.0 || len(rep["events"].([]any)) != 0 {
		t.Fatalf("reputation after an arena deal: %d %v", code, rep)
	}
	code, sts := v.do("GET", "/v1/settlements", brand.key, nil)
	if code != 200 || len(sts["items"].([]any)) != 0 {
		t.Fatalf("settlements after an arena deal: %d %v", code, sts)
	}
}

// TestE2EHouseBrandSpar: a bouncer asks the house brand to spar; the house
// brand plays (opens at 60% of the anchor) and walks after too many
// counters when the bouncer will not move.
func TestE2EHouseBrandSpar(t *testing.T) {
	t.Parallel()
	v, h := houseVenue(t)
	k := v.register("Practising Bouncer", "bouncer")
	kl := v.lobby(k)
	code, m := v.do("POST", "/v1/arena/spar", k.key, map[string]any{"amount_usd": 1000})
	if code != 201 || m["brand"] != h.BrandID() {
		t.Fatalf("spar: %d %v", code, m)
	}
	negID := m["negotiation_id"].(string)
	req := kl.expect("negotiation_requested")
	if req["negotiation_id"] != negID || req["arena"] != true {
		t.Fatalf("requested: %v", req)
	}
	kl.send(map[string]any{"type": "accept_negotiation", "id": "a1", "negotiation_id": negID})
	kl.expect("negotiation_accepted")
	r := v.room(k, negID, "&since=0") // the house may have moved already
	r.expect("negotiation_started")
	first := r.expect("negotiation_message")
	if first["frame_type"] != "propose_terms" || first["terms"].(map[string]any)["amount_usd"] != 600.0 {
		t.Fatalf("house brand opening: %v", first)
	}
	// The bouncer stands at $5,000: far above the house brand's limit of
	// $1,200. The brand counters up to its limit, then walks.
	var last map[string]any
	for i := 0; ; i++ {
		if i > 2*arena.MaxCounters+2 {
			t.Fatal("the house brand never walked")
		}
		r.send(`{"type":"counter_terms","terms":{"amount_usd":5000}}`)
		r.expect("message_ack")
		last = r.expect("negotiation_message")
		if last["frame_type"] == "walk" {
			break
		}
		if last["frame_type"] != "counter_terms" || last["terms"].(map[string]any)["amount_usd"].(float64) > 1200 {
			t.Fatalf("house brand move: %v", last)
		}
	}
	if e := r.expect("negotiation_ended"); e["status"] != "walked" || e["by"] != h.BrandID() {
		t.Fatalf("ended: %v", e)
	}
	// A brand may not ask for a spar; with the house off, nobody can.
	brand := v.register("B", "brand")
	if code, m := v.do("POST", "/v1/arena/spar", brand.key, nil); code != 403 {
		t.Fatalf("brand spar: %d %v", code, m)
	}
	off := newE2E(t)
	k2 := off.register("K", "bouncer")
	if code, m := off.do("POST", "/v1/arena/spar", k2.key, nil); code != 503 || m["error"].(map[string]any)["code"] != "unavailable" {
		t.Fatalf("spar with the house off: %d %v", code, m)
	}
}

// TestE2ELiveConsequences: a live deal adds to both reputations with an
// event each and writes a pending settlement instruction in USDC minor
// units that both parties (and nobody else) see; the same deal in the
// arena does neither.
func TestE2ELiveConsequences(t *testing.T) {
	t.Parallel()
	v := newE2E(t)
	brand, bouncer := v.register("B", "brand"), v.register("K", "bouncer")
	stranger := v.register("S", "brand")
	var ids []string
	for _, isArena := range []bool{false, true} {
		negID, _, _ := v.match(brand, bouncer, isArena)
		b, k := v.room(brand, negID, ""), v.room(bouncer, negID, "")
		b.expect("negotiation_started")
		k.expect("negotiation_started")
		b.send(`{"type":"propose_terms","terms":{"amount_usd":3200.07}}`)
		b.expect("message_ack")
		k.expect("negotiation_message")
		k.send(`{"type":"accept"}`)
		k.expect("message_ack")
		k.expect("negotiation_ended")
		ids = append(ids, negID)
	}
	for _, a := range []e2eAgent{brand, bouncer} {
		code, rep := v.do("GET", "/v1/agents/"+a.id+"/reputation", "", nil)
		evs, _ := rep["events"].([]any)
		if code != 200 || rep["reputation"] != 1.0 || len(evs) != 1 {
			t.Fatalf("reputation of %s: %d %v", a.id, code, rep)
		}
		if e := evs[0].(map[string]any); e["delta"] != 1.0 || e["reason"] != "deal" || e["negotiation_id"] != ids[0] || e["at"] == nil {
			t.Fatalf("event %v", e)
		}
		code, sts := v.do("GET", "/v1/settlements", a.key, nil)
		items, _ := sts["items"].([]any)
		if code != 200 || len(items) != 1 {
			t.Fatalf("settlements of %s: %d %v", a.id, code, sts)
		}
		s := items[0].(map[string]any)
		if s["negotiation_id"] != ids[0] || s["payer"] != brand.id || s["payee"] != bouncer.id || s["amount_minor"] != "3200070000" ||
			s["amount"] != "3200.070000" || s["currency"] != "USDC" || s["decimals"] != 6.0 || s["status"] != "pending" ||
			s["receipt_url"] != "/v1/negotiations/"+ids[0]+"/receipt" {
			t.Fatalf("settlement %v", s)
		}
	}
	if code, sts := v.do("GET", "/v1/settlements", stranger.key, nil); code != 200 || len(sts["items"].([]any)) != 0 {
		t.Fatalf("a stranger's settlements: %d %v", code, sts)
	}
	if code, _ := v.do("GET", "/v1/settlements", "", nil); code != 401 {
		t.Fatalf("settlements without a key: %d", code)
	}
	if code, m := v.do("GET", "/v1/agents/agt_nobody/reputation", "", nil); code != 404 || m["error"].(map[string]any)["code"] != "not_found" {
		t.Fatalf("unknown agent: %d %v", code, m)
	}
	// Only the arena negotiation is listed.
	code, list := v.do("GET", "/v1/arena/negotiations", "", nil)
	if items := list["items"].([]any); code != 200 || len(items) != 1 || items[0].(map[string]any)["negotiation_id"] != ids[1] {
		t.Fatalf("listing: %d %v", code, list)
	}
}

// TestE2EArenaListingInput: bad filters are invalid_argument; paging says
// where the next page starts.
func TestE2EArenaListingInput(t *testing.T) {
	t.Parallel()
	v := newE2E(t)
	for _, q := range []string{"status=bogus", "limit=0", "limit=101", "limit=x", "offset=-1"} {
		code, m := v.do("GET", "/v1/arena/negotiations?"+q, "", nil)
		if code != 422 || m["error"].(map[string]any)["code"] != "invalid_argument" {
			t.Errorf("%s: %d %v", q, code, m)
		}
	}
	brand, bouncer := v.register("B", "brand"), v.register("K", "bouncer")
	var ids []string
	for range 3 {
		id, _, _ := v.match(brand, bouncer, true)
		ids = append(ids, id)
	}
	code, m := v.do("GET", "/v1/arena/negotiations?status=live&limit=2", "", nil)
	items := m["items"].([]any)
	if code != 200 || len(items) != 2 || items[0].(map[string]any)["negotiation_id"] != ids[2] || m["next_offset"] != 2.0 {
		t.Fatalf("page 1: %d %v", code, m)
	}
	code, m = v.do("GET", "/v1/arena/negotiations?status=live&limit=2&offset=2", "", nil)
	items = m["items"].([]any)
	if code != 200 || len(items) != 1 || items[0].(map[string]any)["negotiation_id"] != ids[0] || m["next_offset"] != nil {
		t.Fatalf("page 2: %d %v", code, m)
	}
	if code, m := v.do("GET", "/v1/arena/negotiations?status=ended", "", nil); code != 200 || len(m["items"].([]any)) != 0 {
		t.Fatalf("ended: %d %v", code, m)
	}
}

// TestE2EBrowseDropOut: a bouncer not seen for 30 days drops out of
// browse_bouncers (it is not deleted: its profile stays) and is back once
// its lobby socket opens; online says whether one is open now.
func TestE2EBrowseDropOut(t *testing.T) {
	t.Parallel()
	v := newE2E(t)
	brand, quiet, active := v.register("B", "brand"), v.register("Quiet", "bouncer"), v.register("Active", "bouncer")
	v.clock.Advance(31 * 24 * time.Hour)
	al := v.lobby(active)
	bl := v.lobby(brand)
	names := func(online bool) map[string]bool {
		bl.send(map[string]any{"type": "browse_bouncers", "id": "b", "online": online})
		got := map[string]bool{}
		for _, it := range bl.expect("bouncers")["items"].([]any) {
			p := it.(map[string]any)
			got[p["name"].(string)] = p["online"].(bool)
		}
		return got
	}
	if got := names(false); len(got) != 1 || !got["Active"] {
		t.Fatalf("after 31 days: %v", got)
	}
	if code, _ := v.do("GET", "/v1/agents/"+quiet.id+"/profile", "", nil); code != 200 {
		t.Fatalf("the quiet bouncer's profile: %d", code)
	}
	ql := v.lobby(quiet)
	if got := names(true); len(got) != 2 || !got["Quiet"] || !got["Active"] {
		t.Fatalf("both online: %v", got)
	}
	ql.ws.Close()
	al.ws.Close()
	for deadline := time.Now().Add(e2eWait); ; {
		if got := names(true); len(got) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("still online after the sockets closed")
		}
		time.Sleep(150 * time.Millisecond) // the server sees the close asynchronously; under the lobby rate limit
	}
	if got := names(false); len(got) != 2 || got["Quiet"] || got["Active"] {
		t.Fatalf("seen recently, offline: %v", got)
	}
}

// TestE2ESparInput: the spar body is refused when it is not what it takes.
func TestE2ESparInput(t *testing.T) {
	t.Parallel()
	v, _ := houseVenue(t)
	k := v.register("K", "bouncer")
	for _, tc := range []struct {
		body any
		code int
		err  string
	}{
		{map[string]any{"amount": 5}, 422, "invalid_argument"},
		{map[string]any{"amount_usd": -5}, 422, "invalid_argument"},
		{map[string]any{"amount_usd": "5"}, 422, "invalid_argument"},
		{"[1]", 400, "invalid_json"},
	} {
		code, m := v.do("POST", "/v1/arena/spar", k.key, tc.body)
		if code != tc.code || m["error"].(map[string]any)["code"] != tc.err {
			t.Errorf("%v: %d %v", tc.body, code, m)
		}
	}
	if code, m := v.do("POST", "/v1/arena/spar", "", nil); code != 401 {
		t.Errorf("no key: %d %v", code, m)
	}
}

// nextTwo reads the next two frames of s, which must be of types a and b in
// either order (a house agent's answer can overtake the venue's reply to
// the request that caused it), and returns them by type.
func nextTwo(t *testing.T, s *sock, a, b string) map[string]map[string]any {
	t.Helper()
	got := map[string]map[string]any{}
	for range 2 {
		m := s.next()
		got[str(m["type"])] = m
	}
	if got[a] == nil || got[b] == nil {
		t.Fatalf("want %s and %s, got %v", a, b, got)
	}
	return got
}

// TestE2EPresenceRenewed: a node renews the presence of the lobby sockets it
// holds, so an idle bouncer stays online past the first entry's lifetime.
func TestE2EPresenceRenewed(t *testing.T) {
	t.Parallel()
	v := newE2E(t)
	brand, k := v.register("B", "brand"), v.register("K", "bouncer")
	v.lobby(k)
	bl := v.lobby(brand)
	online := func() bool {
		bl.send(map[string]any{"type": "browse_bouncers", "id": "b", "online": true})
		return len(bl.expect("bouncers")["items"].([]any)) == 1
	}
	if !online() {
		t.Fatal("not online after connecting")
	}
	// Past the first entry's lifetime: only a renewal keeps it online. The
	// renewal runs on the node's own goroutine when the clock moves.
	v.clock.Advance(venue.PresenceTTL + time.Second)
	for deadline := time.Now().Add(e2eWait); !online(); {
		if time.Now().After(deadline) {
			t.Fatal("the presence of an open lobby socket was not renewed")
		}
		time.Sleep(150 * time.Millisecond) // under the lobby rate limit
	}
}
