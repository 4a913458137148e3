package venue_test

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/venuehq/venue/negotiation"
)

// mnEventsUntil reads a's event log on node n after *after until an event
// of type typ is there, failing after 10 s; it returns every event read.
func mnEventsUntil(t *testing.T, n *mnNode, a mnAgent, after *string, typ string) []map[string]any {
	t.Helper()
	var seen []map[string]any
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		path := "/v1/events"
		if *after != "" {
			path += "?after=" + *after
		}
		var page struct {
			Events []map[string]any `json:"events"`
		}
		if code := n.do("GET", path, a.key, nil, &page); code != http.StatusOK {
			t.Fatalf("GET %s on %s: %d", path, n.name, code)
		}
		for _, ev := range page.Events {
			*after = ev["id"].(string)
			seen = append(seen, ev)
			if ev["type"] == typ {
				return seen
			}
		}
		time.Sleep(5 * time.Millisecond) // polling a condition, not a clock
	}
	t.Fatalf("no %s event on %s within 10s (saw %v)", typ, n.name, seen)
	return nil
}

// A socket-less bouncer whose requests go to node B and whose event log is
// read from either node negotiates a deal with a brand on node A's sockets:
// every event is in the log once (written by the committing node alone),
// in order, whichever node reads it (PROTOCOL.md "Without a socket").
func TestMultiNodeSocketlessAgent(t *testing.T) {
	t.Parallel()
	c := newMNCluster(t, mnStart)
	a, b := c.node("A"), c.node("B")
	brand := a.register(c, "Brand Co", negotiation.RoleBrand)
	bouncer := b.register(c, "REST Newsletter", negotiation.RoleBouncer)
	bl := a.lobby(brand)
	bl.send(map[string]any{"type": "submit_offer", "id": "o1", "to": bouncer.id, "offer": map[string]any{"title": "Launch", "brief": "Two sends"}})
	off := bl.expect("offer_submitted")
	bl.send(map[string]any{"type": "create_negotiation", "id": "c1", "offer_id": off["offer_id"]})
	negID := bl.expect("negotiation_created")["negotiation_id"].(string)

	after := ""
	var log []map[string]any
	log = append(log, mnEventsUntil(t, b, bouncer, &after, "negotiation_requested")...)
	var m map[string]any
	if code := b.do("POST", "/v1/agents/me/lobby", bouncer.key, map[string]any{"type": "accept_negotiation", "id": "a1", "negotiation_id": negID}, &m); code != http.StatusOK || m["type"] != "negotiation_accepted" {
		t.Fatalf("accept on B: %d %v", code, m)
	}
	bl.expect("negotiation_accepted")
	br, _ := a.room("brand@A", brand, negID, "")
	log = append(log, mnEventsUntil(t, a, bouncer, &after, "negotiation_started")...)
	br.send(map[string]any{"type": "propose_terms", "id": "p1", "terms": map[string]any{"amount_usd": 3000, "sends": 2}})
	br.expect(negotiation.TypeMessageAck)
	log = append(log, mnEventsUntil(t, b, bouncer, &after, "negotiation_message")...)
	if code := b.do("POST", "/v1/negotiations/"+negID+"/frames", bouncer.key, map[string]any{"type": "accept", "id": "acc"}, &m); code != http.StatusOK || m["type"] != "message_ack" {
		t.Fatalf("accept on B: %d %v", code, m)
	}
	br.expect(negotiation.TypeNegotiationMessage)
	if end := br.expect(negotiation.TypeNegotiationEnded); end["status"] != "deal" {
		t.Fatalf("brand: %v", end)
	}
	log = append(log, mnEventsUntil(t, a, bouncer, &after, "negotiation_ended")...)
	var types []string
	for _, ev := range log {
		types = append(types, ev["type"].(string))
	}
	want := []string{"negotiation_requested", "negotiation_started", "negotiation_message", "negotiation_ended"}
	if len(types) != len(want) {
		t.Fatalf("the bouncer's events %v, want %v (each once)", types, want)
	}
	for i := range want {
		if types[i] != want[i] {
			t.Fatalf("the bouncer's events %v, want %v", types, want)
		}
	}
	// The brand's log has its accepted request (the step's own push, kept
	// with the step by node B) ahead of the room's start, as its sockets
	// had them.
	bafter := ""
	var btypes []string
	for _, ev := range mnEventsUntil(t, a, brand, &bafter, "negotiation_ended") {
		btypes = append(btypes, ev["type"].(string))
	}
	if bwant := []string{"negotiation_accepted", "negotiation_started"}; len(btypes) < 2 || btypes[0] != bwant[0] || btypes[1] != bwant[1] || slices.Index(btypes[1:], bwant[0]) >= 0 {
		t.Fatalf("the brand's events %v, want %v first (the accept once)", btypes, bwant)
	}
	// Nothing more, read from either node.
	for _, n := range []*mnNode{a, b} {
		var page struct {
			Events []map[string]any `json:"events"`
		}
		if code := n.do("GET", "/v1/events?after="+after, bouncer.key, nil, &page); code != http.StatusOK || len(page.Events) != 0 {
			t.Fatalf("after the end on %s: %d %v", n.name, code, page.Events)
		}
	}
}
