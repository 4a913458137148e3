package venue_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/venuehq/venue/briefs"
	"github.com/venuehq/venue/briefs/briefspg"
	"github.com/venuehq/venue/bus/bustest"
	"github.com/venuehq/venue/bus/redisbus"
	"github.com/venuehq/venue/grants"
	"github.com/venuehq/venue/store/postgres"
	"github.com/venuehq/venue/store/storetest"
	"github.com/venuehq/venue/timers/redistimers"
	"github.com/venuehq/venue/venue"
)

// onFullBackends runs fn on a venue with the embedded default and on one
// with Postgres (a fresh schema: store and briefs) and Redis (bus and
// timers, a fresh prefix), both on the venue's fake clock.
func onFullBackends(t *testing.T, fn func(t *testing.T, v *e2eVenue)) {
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		fn(t, newE2E(t))
	})
	t.Run("postgres+redis", func(t *testing.T) {
		t.Parallel()
		url := storetest.DatabaseURL(t)
		st, err := postgres.New(t.Context(), url, postgres.WithSchema(storetest.Schema(t, url)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(st.Close)
		if _, err := st.Migrate(t.Context()); err != nil {
			t.Fatal(err)
		}
		redisURL := bustest.RedisURL(t)
		prefix := bustest.KeyPrefix(t, redisURL)
		fn(t, newE2E(t, func(c *venue.Config) {
			b, err := redisbus.New(t.Context(), redisURL, redisbus.Options{Prefix: prefix})
			if err != nil {
				t.Fatal(err)
			}
			tm, err := redistimers.New(t.Context(), redisURL, redistimers.Options{Prefix: prefix, Clock: c.Clock, Poll: 10 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = tm.Close(); _ = b.Close() })
			c.Store, c.Briefs, c.Bus, c.Timers = st, briefspg.New(st.Pool()), b, tm
		}))
	})
}

// frames reads n frames of c and returns them by type (pushes and replies
// may interleave in any order).
func frames(c *e2eConn, n int) map[string]map[string]any {
	out := map[string]map[string]any{}
	for range n {
		m := c.next()
		out[str(m["type"])] = m
	}
	return out
}

// sealedMarker is a category only the quote carries: wherever it shows, the
// quote's terms showed.
const sealedMarker = "sealedmarker-7f3a"

// rawGet returns the body of a GET.
func (v *e2eVenue) rawGet(path, key string) (int, string) {
	v.t.Helper()
	req, _ := http.NewRequest("GET", v.url+path, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := apiClient(v.t).Do(req)
	if err != nil {
		v.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestE2ESealedBrief is PROTOCOL.md "Sealed briefs" end to end on both
// backends: a brief to three bouncers; one quotes within its grant (and
// replaces its quote), one is refused by its grant with a scope_block, one
// declines; the brand sees nothing of any quote before collect_until (no
// frame, no REST read, no event, no arena listing, feed or page), nor can
// it award; at collect_until (the fake clock moved, the wake fired)
// quotes_ready brings the one standing quote; the award opens a live
// negotiation with the quote standing as the bouncer's propose_terms (ttl
// 300), every bouncer learns the brief closed, a second award is refused,
// and the brand's accept makes the deal.
func TestE2ESealedBrief(t *testing.T) {
	t.Parallel()
	onFullBackends(t, func(t *testing.T, v *e2eVenue) {
		brand := v.register("Acme", "brand")
		kA := v.register("Letters A", "bouncer")
		kB := v.registerBare("Letters B", "bouncer")
		v.grant(kB, grants.Scope{Amount: &grants.AmountLimit{MaxCents: cents(10000)}})
		kC := v.register("Letters C", "bouncer")
		bl, la, lb, lc := v.lobby(brand), v.lobby(kA), v.lobby(kB), v.lobby(kC)
		feed := v.dial("/v1/arena/ws")

		// Bad briefs change nothing.
		for _, bad := range []map[string]any{
			{"type": "submit_brief", "id": "b0", "to": []string{kA.id}, "offer": map[string]any{"title": "x"}, "collect_seconds": 60},
			{"type": "submit_brief", "id": "b0", "to": []string{kA.id, kA.id}, "offer": map[string]any{"title": "x"}, "collect_seconds": 60},
			{"type": "submit_brief", "id": "b0", "to": []string{kA.id, kB.id}, "offer": map[string]any{"title": "x"}, "collect_seconds": 5},
			{"type": "submit_brief", "id": "b0", "to": []string{kA.id, kB.id}, "offer": map[string]any{"title": ""}, "collect_seconds": 60},
			{"type": "submit_brief", "id": "b0", "to": []string{kA.id, brand.id}, "offer": map[string]any{"title": "x"}, "collect_seconds": 60},
		} {
			bl.send(bad)
			if e := bl.expect("error"); e["code"] != "invalid_argument" {
				t.Fatalf("%v: %v", bad, e)
			}
		}
		la.send(map[string]any{"type": "submit_brief", "id": "b0", "to": []string{kB.id, kC.id}, "offer": map[string]any{"title": "x"}, "collect_seconds": 60})
		if e := la.expect("error"); e["code"] != "forbidden" {
			t.Fatalf("a bouncer's brief: %v", e)
		}

		bl.send(map[string]any{"type": "submit_brief", "id": "b1", "to": []string{kA.id, kB.id, kC.id}, "arena": true, "collect_seconds": 60,
			"offer": map[string]any{"title": "Spring launch", "brief": "Two sends in the primary slot"}})
		sub := bl.expect("brief_submitted")
		briefID := str(sub["brief_id"])
		if sub["re"] != "b1" || sub["collect_until"] != "2026-11-30T08:01:00.000Z" {
			t.Fatalf("brief_submitted: %v", sub)
		}
		offerOf := map[string]string{}
		for _, o := range sub["offers"].([]any) {
			m := o.(map[string]any)
			offerOf[str(m["to"])] = str(m["offer_id"])
		}
		for k, l := range map[string]*e2eConn{kA.id: la, kB.id: lb, kC.id: lc} {
			r := l.expect("brief_received")
			if r["brief_id"] != briefID || r["offer_id"] != offerOf[k] || r["arena"] != true || r["brand"].(map[string]any)["agent_id"] != brand.id {
				t.Fatalf("brief_received of %s: %v", k, r)
			}
		}

		// A quotes, then replaces its quote; B's quote is over its grant;
		// C declines and can then not quote.
		la.send(map[string]any{"type": "submit_quote", "id": "q1", "offer_id": offerOf[kA.id], "terms": map[string]any{"amount_usd": 900}})
		first := la.expect("quote_submitted")
		la.send(map[string]any{"type": "submit_quote", "id": "q2", "offer_id": offerOf[kA.id], "content": "two sends, flight in June",
			"terms": map[string]any{"amount_usd": 800, "category": sealedMarker, "sends": 2}})
		qa := la.expect("quote_submitted")
		if qa["re"] != "q2" || qa["quote_id"] == first["quote_id"] || !strings.HasPrefix(str(qa["offer_hash"]), "sha256:") {
			t.Fatalf("quote_submitted: %v (first %v)", qa, first)
		}
		la.send(map[string]any{"type": "submit_quote", "id": "qx", "offer_id": offerOf[kB.id], "terms": map[string]any{"amount_usd": 1}})
		if e := la.expect("error"); e["code"] != "not_found" {
			t.Fatalf("a quote on another's offer: %v", e)
		}
		lb.send(map[string]any{"type": "submit_quote", "id": "q3", "offer_id": offerOf[kB.id], "terms": map[string]any{"amount_usd": 500}})
		sb := lb.expect("scope_block")
		if names, _ := checkNames(sb); sb["frame_type"] != "submit_quote" || sb["re"] != "q3" || strings.Join(names, ",") != "amount_usd" {
			t.Fatalf("scope_block: %v", sb)
		}
		lc.send(map[string]any{"type": "decline_brief", "id": "d1", "offer_id": offerOf[kC.id], "reason": "booked"})
		if d := lc.expect("brief_declined"); d["offer_id"] != offerOf[kC.id] || d["re"] != "d1" {
			t.Fatalf("brief_declined: %v", d)
		}
		lc.send(map[string]any{"type": "submit_quote", "id": "q4", "offer_id": offerOf[kC.id], "terms": map[string]any{"amount_usd": 10}})
		if e := lc.expect("error"); e["code"] != "invalid_state" {
			t.Fatalf("a quote after a decline: %v", e)
		}

		// Sealed: the brand can neither see nor award a quote yet.
		bl.send(map[string]any{"type": "award_quote", "id": "w0", "quote_id": qa["quote_id"]})
		if e := bl.expect("error"); e["code"] != "invalid_state" || strings.Contains(str(e), sealedMarker) {
			t.Fatalf("an award before collect_until: %v", e)
		}
		code, body := v.rawGet("/v1/briefs/"+briefID, brand.key)
		if code != http.StatusOK || strings.Contains(body, sealedMarker) || strings.Contains(body, "quotes") || strings.Contains(body, "declined") ||
			!strings.Contains(body, `"status":"collecting"`) {
			t.Fatalf("GET brief while sealed: %d %s", code, body)
		}
		if code, _ := v.rawGet("/v1/briefs/"+briefID, kA.key); code != http.StatusNotFound {
			t.Fatalf("GET brief as a bouncer: %d", code)
		}
		for _, path := range []string{"/v1/events", "/v1/offers", "/v1/negotiations?role=mine"} {
			if code, body := v.rawGet(path, brand.key); code != http.StatusOK || strings.Contains(body, sealedMarker) {
				t.Fatalf("GET %s while sealed: %d %s", path, code, body)
			}
		}
		for _, path := range []string{"/v1/arena/negotiations", "/arena", "/"} {
			if code, body := v.rawGet(path, ""); code != http.StatusOK || strings.Contains(body, sealedMarker) {
				t.Fatalf("GET %s while sealed: %d", path, code)
			}
		}
		// A reconnecting bouncer is sent the brief again; one that declined is not.
		la2, lc2 := v.lobby(kA), v.lobby(kC)
		if r := la2.expect("brief_received"); r["offer_id"] != offerOf[kA.id] {
			t.Fatalf("replayed brief_received: %v", r)
		}
		lc2.send(map[string]any{"type": "get_profile", "id": "p", "agent_id": kC.id})
		lc2.expect("profile")
		bl.send(map[string]any{"type": "get_profile", "id": "p", "agent_id": brand.id})
		bl.expect("profile")
		bl.quiet()
		feed.quiet()
		lb.quiet() // nor does another bouncer learn of A's quote
		lc.quiet()

		// collect_until: quotes_ready, once, with A's standing quote.
		v.clock.Advance(60 * time.Second)
		ready := bl.expect("quotes_ready")
		quotes := ready["quotes"].([]any)
		if ready["brief_id"] != briefID || len(quotes) != 1 {
			t.Fatalf("quotes_ready: %v", ready)
		}
		q := quotes[0].(map[string]any)
		if q["quote_id"] != qa["quote_id"] || q["from"] != kA.id || q["offer_hash"] != qa["offer_hash"] ||
			q["terms"].(map[string]any)["category"] != sealedMarker || q["content"] != "two sends, flight in June" {
			t.Fatalf("the quote: %v", q)
		}
		la.send(map[string]any{"type": "submit_quote", "id": "q5", "offer_id": offerOf[kA.id], "terms": map[string]any{"amount_usd": 700}})
		if e := la.expect("error"); e["code"] != "invalid_state" {
			t.Fatalf("a quote after collect_until: %v", e)
		}
		code, view := v.do("GET", "/v1/briefs/"+briefID, brand.key, nil)
		if code != http.StatusOK || view["status"] != "ready" || len(view["quotes"].([]any)) != 1 {
			t.Fatalf("GET brief after collect_until: %d %v", code, view)
		}
		for _, o := range view["offers"].([]any) {
			m := o.(map[string]any)
			if m["declined"] != (m["to"] == kC.id) {
				t.Fatalf("offer %v", m)
			}
		}

		// The award: live at once, the quote standing.
		bl.send(map[string]any{"type": "award_quote", "id": "w1", "quote_id": qa["quote_id"]})
		got := frames(bl, 2)
		created, accepted := got["negotiation_created"], got["negotiation_accepted"]
		negID := str(created["negotiation_id"])
		if created["status"] != "live" || created["re"] != "w1" || created["expires_at"] != nil || accepted["negotiation_id"] != negID {
			t.Fatalf("award: %v", got)
		}
		ka := frames(la, 2)
		if ka["negotiation_accepted"]["negotiation_id"] != negID || ka["brief_closed"]["awarded"] != true || ka["brief_closed"]["negotiation_id"] != negID {
			t.Fatalf("the awarded bouncer: %v", ka)
		}
		for _, l := range []*e2eConn{lb, lc} {
			if c := l.expect("brief_closed"); c["awarded"] != false || c["brief_id"] != briefID || c["negotiation_id"] != nil {
				t.Fatalf("brief_closed: %v", c)
			}
		}
		// The pushes are the agents' events too (PROTOCOL.md "Without a socket").
		var after string
		v.eventsUntil(kA, &after, "brief_received")
		v.eventsUntil(kA, &after, "brief_closed")
		// The award's negotiation_accepted is kept with the step that took
		// the room live, ahead of negotiation_started, for both parties.
		for _, a := range []e2eAgent{kA, brand} {
			after = ""
			if _, seen := v.eventsUntil(a, &after, "negotiation_started"); len(seen) == 0 || seen[len(seen)-1]["type"] != "negotiation_accepted" {
				t.Fatalf("%s's events before negotiation_started: %v", a.id, seen)
			}
		}
		after = ""
		v.eventsUntil(brand, &after, "quotes_ready")
		bl.send(map[string]any{"type": "award_quote", "id": "w2", "quote_id": qa["quote_id"]})
		if e := bl.expect("error"); e["code"] != "invalid_state" {
			t.Fatalf("a second award: %v", e)
		}

		b := v.room(brand, negID, "")
		started := b.expect("negotiation_started")
		standing := started["context"].(map[string]any)["standing"].(map[string]any)
		if standing["by"] != kA.id || standing["offer_hash"] != qa["offer_hash"] || standing["expires_at"] != "2026-11-30T08:06:00.000Z" {
			t.Fatalf("standing: %v", standing)
		}
		code, tr := v.do("GET", "/v1/negotiations/"+negID+"/transcript", "", nil)
		entries, _ := tr["entries"].([]any)
		if code != http.StatusOK || len(entries) == 0 {
			t.Fatalf("transcript: %d %v", code, tr)
		}
		firstEntry, _ := json.Marshal(entries[0])
		if !strings.Contains(string(firstEntry), `"frame_type":"propose_terms"`) || !strings.Contains(string(firstEntry), kA.id) {
			t.Fatalf("first entry: %s", firstEntry)
		}
		b.send(map[string]any{"type": "accept", "id": "acc"})
		b.expect("message_ack")
		for {
			m := b.next()
			if m["type"] == "negotiation_ended" {
				if m["status"] != "deal" || m["offer_hash"] != qa["offer_hash"] {
					t.Fatalf("ended: %v", m)
				}
				break
			}
		}
	})
}

// signalQuotes is the in-memory brief store that signals every stored
// quote or decline, so a test knows the house answered before it moves the
// clock.
type signalQuotes struct {
	*briefs.Memory
	answered chan string // offer ids
}

func (s signalQuotes) PutQuote(ctx context.Context, q briefs.Quote, now time.Time) error {
	err := s.Memory.PutQuote(ctx, q, now)
	if err == nil {
		s.answered <- q.OfferID
	}
	return err
}

func (s signalQuotes) Decline(ctx context.Context, offerID, reason string, now time.Time) error {
	err := s.Memory.Decline(ctx, offerID, reason, now)
	if err == nil {
		s.answered <- offerID
	}
	return err
}

// TestE2EHouseQuotesArenaBrief: the house bouncer quotes its opening (150%
// of the offer's amount, the offer's other terms kept) on an arena brief
// and declines a live one; awarded, it plays the negotiation its quote
// opened.
func TestE2EHouseQuotesArenaBrief(t *testing.T) {
	t.Parallel()
	sq := signalQuotes{Memory: briefs.NewMemory(), answered: make(chan string, 16)}
	v := newE2E(t, func(c *venue.Config) { c.HouseAgents = true; c.Briefs = sq })
	h := v.srv.House()
	select {
	case <-h.Ready():
	case <-time.After(e2eWait):
		t.Fatal("house agents not connected")
	}
	brand := v.register("Practising Brand", "brand")
	other := v.register("Quiet Letters", "bouncer")
	bl := v.lobby(brand)
	wait := func() string {
		t.Helper()
		select {
		case id := <-sq.answered:
			return id
		case <-time.After(e2eWait):
			t.Fatal("the house did not answer the brief")
		}
		return ""
	}
	offer := map[string]any{"title": "Practice", "terms": map[string]any{"amount_usd": 3000, "category": "primary_slot", "sends": 2}}

	bl.send(map[string]any{"type": "submit_brief", "id": "live", "to": []string{h.BouncerID(), other.id}, "collect_seconds": 30, "offer": offer})
	live := bl.expect("brief_submitted")
	bl.send(map[string]any{"type": "submit_brief", "id": "arena", "to": []string{h.BouncerID(), other.id}, "arena": true, "collect_seconds": 30, "offer": offer})
	ab := bl.expect("brief_submitted")
	houseOffer := func(sub map[string]any) string {
		for _, o := range sub["offers"].([]any) {
			if m := o.(map[string]any); m["to"] == h.BouncerID() {
				return str(m["offer_id"])
			}
		}
		return ""
	}
	answered := map[string]bool{wait(): true, wait(): true}
	if !answered[houseOffer(live)] || !answered[houseOffer(ab)] {
		t.Fatalf("answered %v, want both house offers", answered)
	}

	v.clock.Advance(30 * time.Second)
	readies := map[string]map[string]any{}
	for range 2 {
		r := bl.expect("quotes_ready")
		readies[str(r["brief_id"])] = r
	}
	if qs := readies[str(live["brief_id"])]["quotes"].([]any); len(qs) != 0 {
		t.Fatalf("the house quoted on a live brief: %v", qs)
	}
	code, view := v.do("GET", "/v1/briefs/"+str(live["brief_id"]), brand.key, nil)
	if code != 200 || view["offers"].([]any)[0].(map[string]any)["declined"] != true {
		t.Fatalf("the live brief: %d %v", code, view)
	}
	qs := readies[str(ab["brief_id"])]["quotes"].([]any)
	if len(qs) != 1 {
		t.Fatalf("arena quotes: %v", qs)
	}
	q := qs[0].(map[string]any)
	terms := q["terms"].(map[string]any)
	if q["from"] != h.BouncerID() || terms["amount_usd"] != 4500.0 || terms["category"] != "primary_slot" || terms["sends"] != 2.0 {
		t.Fatalf("the house's quote: %v", q)
	}

	bl.send(map[string]any{"type": "award_quote", "id": "w", "quote_id": q["quote_id"]})
	negID := str(nextTwo(t, bl, "negotiation_created", "negotiation_accepted")["negotiation_created"]["negotiation_id"])
	b := v.room(brand, negID, "")
	b.expect("negotiation_started")
	b.send(`{"type":"counter_terms","id":"c1","terms":{"amount_usd":3000,"category":"primary_slot","sends":2}}`)
	b.expect("message_ack")
	if m := b.expect("negotiation_message"); m["from"] != h.BouncerID() {
		t.Fatalf("the house's answer: %v", m)
	}
}
