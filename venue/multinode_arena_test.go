package venue_test

import (
	"testing"
	"time"

	"github.com/venuehq/venue/arena"
	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/store/postgres"
	"github.com/venuehq/venue/venue"
)

// TestMultiNodeArenaFeedAndPresence: on Postgres and Redis, the arena feed
// socket on one node pushes what any node commits; presence is seen from
// the other node (online while a lobby socket is open there, not after it
// closed); a live deal committed on one node has its settlement readable on
// the other.
func TestMultiNodeArenaFeedAndPresence(t *testing.T) {
	t.Parallel()
	c := newMNCluster(t, mnStart)
	a, b := c.node("A"), c.node("B")
	feed := b.dial("feed@B", "/v1/arena/ws")
	brand := a.register(c, "Brand Co", negotiation.RoleBrand)
	bouncer := b.register(c, "Newsletter", negotiation.RoleBouncer)
	bl, kl := a.lobby(brand), b.lobby(bouncer)

	// Presence: the bouncer's socket is on B, the brand browses on A.
	bl.send(map[string]any{"type": "browse_bouncers", "id": "b1", "online": true})
	items := bl.expect("bouncers")["items"].([]any)
	if len(items) != 1 || items[0].(map[string]any)["agent_id"] != bouncer.id || items[0].(map[string]any)["online"] != true ||
		items[0].(map[string]any)["last_seen_at"] == nil {
		t.Fatalf("online bouncers seen from A: %v", items)
	}

	// An arena negotiation: brand and its lobby on A, bouncer on B.
	bl.send(map[string]any{"type": "submit_offer", "id": "o1", "to": bouncer.id, "arena": true, "offer": map[string]any{"title": "Practice"}})
	off := bl.expect("offer_submitted")
	bl.send(map[string]any{"type": "create_negotiation", "id": "c1", "offer_id": off["offer_id"]})
	negID := bl.expect("negotiation_created")["negotiation_id"].(string)
	kl.expect("negotiation_requested")
	kl.send(map[string]any{"type": "accept_negotiation", "id": "a1", "negotiation_id": negID})
	kl.expect("negotiation_accepted")
	bl.expect("negotiation_accepted")
	if e := feed.expect("arena_negotiation_started"); e["negotiation"].(map[string]any)["negotiation_id"] != negID {
		t.Fatalf("feed on B: %v", e)
	}
	br, _ := a.room("brand@A", brand, negID, "")
	br.send(map[string]any{"type": "propose_terms", "id": "p1", "terms": map[string]any{"amount_usd": 1234.5}})
	br.expect("message_ack")
	e := feed.expect("arena_negotiation_updated")
	if n := e["negotiation"].(map[string]any); n["standing_amount_usd"] != "1234.50" || n["last_seq"] != 1.0 || n["turn"] != bouncer.id {
		t.Fatalf("update committed on A, pushed on B: %v", e)
	}
	br.send(map[string]any{"type": "walk", "id": "w1"})
	br.expect("message_ack")
	if e := feed.expect("arena_negotiation_ended"); e["negotiation"].(map[string]any)["status"] != "walked" {
		t.Fatalf("feed ended: %v", e)
	}

	// A live deal on A; its settlement read on B.
	bl.send(map[string]any{"type": "submit_offer", "id": "o2", "to": bouncer.id, "offer": map[string]any{"title": "Live"}})
	off = bl.expect("offer_submitted")
	bl.send(map[string]any{"type": "create_negotiation", "id": "c2", "offer_id": off["offer_id"]})
	live := bl.expect("negotiation_created")["negotiation_id"].(string)
	kl.expect("negotiation_requested")
	kl.send(map[string]any{"type": "accept_negotiation", "id": "a2", "negotiation_id": live})
	kl.expect("negotiation_accepted")
	bl.expect("negotiation_accepted")
	br2, _ := a.room("brand@A 2", brand, live, "")
	kr2, _ := b.room("bouncer@B 2", bouncer, live, "")
	br2.send(map[string]any{"type": "propose_terms", "id": "p1", "terms": map[string]any{"amount_usd": 0.01}})
	br2.expect("message_ack")
	kr2.expect("negotiation_message")
	kr2.send(map[string]any{"type": "accept", "id": "x1"})
	kr2.expect("message_ack")
	var sts struct {
		Items []map[string]any `json:"items"`
	}
	if code := b.do("GET", "/v1/settlements", bouncer.key, nil, &sts); code != 200 || len(sts.Items) != 1 ||
		sts.Items[0]["negotiation_id"] != live || sts.Items[0]["amount_minor"] != "10000" {
		t.Fatalf("settlements on B: %d %v", code, sts)
	}
	feed.quiet() // a live negotiation never reaches the arena feed

	// The bouncer's lobby on B closes: from A it is no longer online.
	kl.ws.Close()
	deadline := time.Now().Add(mnWait)
	for {
		bl.send(map[string]any{"type": "browse_bouncers", "id": "b2", "online": true})
		if items := bl.expect("bouncers")["items"].([]any); len(items) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the bouncer is still online after its only lobby socket closed")
		}
		time.Sleep(10 * time.Millisecond) // the close reaches B's handler asynchronously
	}
	bl.send(map[string]any{"type": "browse_bouncers", "id": "b3"})
	if items := bl.expect("bouncers")["items"].([]any); len(items) != 1 || items[0].(map[string]any)["online"] != false {
		t.Fatalf("all bouncers: %v", items)
	}
}

// TestMultiNodeHouseAgents: two nodes on one Postgres and Redis run the
// same two house agents (one registration, one grant a month); a brand on
// either node practises against the house bouncer, whose two lobby
// sockets race to accept: one node plays, and the deal is made once.
func TestMultiNodeHouseAgents(t *testing.T) {
	t.Parallel()
	c := newMNCluster(t, mnStart)
	house := func(cfg *venue.Config) { cfg.HouseAgents = true }
	a, b := c.nodeWith("A", house), c.nodeWith("B", house)
	ha, hb := a.srv.House(), b.srv.House()
	for _, h := range []*arena.House{ha, hb} {
		select {
		case <-h.Ready():
		case <-time.After(mnWait):
			t.Fatal("house agents not connected")
		}
	}
	if ha.BouncerID() != hb.BouncerID() || ha.BrandID() != hb.BrandID() {
		t.Fatalf("the nodes run different house agents: %s/%s and %s/%s", ha.BouncerID(), ha.BrandID(), hb.BouncerID(), hb.BrandID())
	}
	st, err := postgres.New(t.Context(), c.dbURL, postgres.WithSchema(c.schema))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, id := range []string{ha.BouncerID(), ha.BrandID()} {
		if recs, err := st.Grants(t.Context(), id); err != nil || len(recs) != 1 {
			t.Fatalf("grants of house agent %s after two nodes started: %d %v", id, len(recs), err)
		}
	}
	brand := a.register(c, "Brand Co", negotiation.RoleBrand)
	bl := a.lobby(brand)
	bl.send(map[string]any{"type": "browse_bouncers", "id": "b1", "q": "house"})
	if items := bl.expect("bouncers")["items"].([]any); len(items) != 1 || items[0].(map[string]any)["house"] != true {
		t.Fatalf("one house bouncer: %v", items)
	}
	for i, tag := range []string{"1", "2"} {
		bl.send(map[string]any{"type": "submit_offer", "id": "o" + tag, "to": ha.BouncerID(), "arena": true,
			"offer": map[string]any{"title": "Practice " + tag, "terms": map[string]any{"amount_usd": 100}}})
		off := bl.expect("offer_submitted")
		bl.send(map[string]any{"type": "create_negotiation", "id": "c" + tag, "offer_id": off["offer_id"]})
		negID := nextTwo(t, bl, "negotiation_created", "negotiation_accepted")["negotiation_created"]["negotiation_id"].(string)
		node := []*mnNode{a, b}[i]
		r, _ := node.room("brand", brand, negID, "&since=0")
		r.send(map[string]any{"type": "propose_terms", "id": "p", "terms": map[string]any{"amount_usd": 200}})
		r.expect("message_ack")
		if m := r.expect("negotiation_message"); m["frame_type"] != "accept" {
			t.Fatalf("house move: %v", m)
		}
		if e := r.expect("negotiation_ended"); e["status"] != "deal" || e["seq"] != 3.0 {
			t.Fatalf("ended: %v", e)
		}
		r.quiet()
	}
}
