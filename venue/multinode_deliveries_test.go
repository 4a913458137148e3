package venue_test

import (
	"testing"
	"time"

	"github.com/venuehq/venue/deliveries"
	"github.com/venuehq/venue/deliveries/deliverypg"
	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/settlement"
	"github.com/venuehq/venue/store/postgres"
	"github.com/venuehq/venue/venue"
)

// TestMultiNodeDeliveryApprovedOnce: two nodes on one Postgres both sweep
// for due deliveries on the shared fake clock; the delivery left
// unanswered past its window is approved by the venue once: the settler
// (shared by the nodes) is told released once and settled once, and each
// party's event log has one approval and one release.
func TestMultiNodeDeliveryApprovedOnce(t *testing.T) {
	t.Parallel()
	c := newMNCluster(t, mnStart)
	told := make(chan settlement.Instruction, 64)
	withDeliveries := func(cfg *venue.Config) {
		cfg.Deliveries, cfg.Settler = deliverypg.New(cfg.Store.(*postgres.Store).Pool()), toldSettler{told}
	}
	a, b := c.nodeWith("A", withDeliveries), c.nodeWith("B", withDeliveries)
	brand := a.register(c, "Brand Co", negotiation.RoleBrand)
	bouncer := b.register(c, "Newsletter", negotiation.RoleBouncer)
	bl, kl := a.lobby(brand), b.lobby(bouncer)
	negID := mnMatch(t, bl, kl, bouncer, "d")
	br, _ := a.room("brand@A", brand, negID, "")
	kr, _ := b.room("bouncer@B", bouncer, negID, "")
	kr.send(map[string]any{"type": "propose_terms", "id": "p1", "terms": map[string]any{"amount_usd": 3200}})
	kr.expect("message_ack")
	br.expect("negotiation_message")
	br.send(map[string]any{"type": "accept", "id": "x1"})
	br.expect("message_ack")
	expectTold(t, told, negID, settlement.StatusPending)

	var d map[string]any
	if code := b.do("POST", "/v1/negotiations/"+negID+"/deliveries", bouncer.key, map[string]any{"url": "https://example.com/p"}, &d); code != 201 {
		t.Fatalf("deliver on B: %d %v", code, d)
	}
	c.clock.Advance(deliveries.DefaultApprovalWindow)
	deadline := time.Now().Add(mnWait)
	for done := false; !done; {
		c.clock.Advance(time.Minute) // both nodes' sweeps are due every minute
		select {
		case in := <-told:
			if in.Status != settlement.StatusReleased || in.NegotiationID != negID {
				t.Fatalf("told %+v", in)
			}
			done = true
		case <-time.After(20 * time.Millisecond):
			if time.Now().After(deadline) {
				t.Fatal("no node approved the due delivery")
			}
		}
	}
	expectTold(t, told, negID, settlement.StatusSettled)
	// More sweeps on both nodes find nothing due.
	for range 5 {
		c.clock.Advance(time.Minute)
		select {
		case in := <-told:
			t.Fatalf("told again: %+v", in)
		case <-time.After(20 * time.Millisecond):
		}
	}
	var st struct {
		Items []map[string]any `json:"items"`
	}
	if code := a.do("GET", "/v1/settlements", brand.key, nil, &st); code != 200 || len(st.Items) != 1 || st.Items[0]["status"] != "settled" ||
		st.Items[0]["delivery"].(map[string]any)["answered_by"] != "venue" {
		t.Fatalf("settlements on A: %d %v", code, st)
	}
	for _, who := range []struct {
		n *mnNode
		a mnAgent
	}{{a, brand}, {b, bouncer}} {
		var evs struct {
			Events []struct {
				Type string         `json:"type"`
				Data map[string]any `json:"data"`
			} `json:"events"`
		}
		who.n.do("GET", "/v1/events", who.a.key, nil, &evs)
		approvals, releases := 0, 0
		for _, e := range evs.Events {
			switch {
			case e.Type == deliveries.TypeDeliveryUpdated && e.Data["delivery"].(map[string]any)["status"] == "approved":
				approvals++
			case e.Type == "settlement_updated" && e.Data["settlement"].(map[string]any)["status"] == "released":
				releases++
			}
		}
		if approvals != 1 || releases != 1 {
			t.Fatalf("events of %s: %d approvals, %d releases, want 1 and 1", who.a.id, approvals, releases)
		}
	}
}
