package venue_test

import (
	"net/http"
	"testing"
	"time"
)

// eventsUntil reads a's event log after `after` until an event of type typ
// is there (events are written off the sender's path, just after its
// answer), failing after 10 s. It returns that event and the events before it.
func (v *e2eVenue) eventsUntil(a e2eAgent, after *string, typ string) (map[string]any, []map[string]any) {
	v.t.Helper()
	var seen []map[string]any
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		path := "/v1/events"
		if *after != "" {
			path += "?after=" + *after
		}
		code, m := v.do("GET", path, a.key, nil)
		if code != http.StatusOK {
			v.t.Fatalf("GET %s: %d %v", path, code, m)
		}
		for _, e := range m["events"].([]any) {
			ev := e.(map[string]any)
			*after = ev["id"].(string)
			if ev["type"] != ev["data"].(map[string]any)["type"] {
				v.t.Fatalf("event type %v, frame %v", ev["type"], ev["data"])
			}
			if ev["type"] == typ {
				return ev, seen
			}
			seen = append(seen, ev)
		}
		time.Sleep(5 * time.Millisecond) // polling a condition, not a clock
	}
	v.t.Fatalf("no %s event for %s within 10s (saw %v)", typ, a.id, seen)
	return nil, nil
}

// TestE2ESocketlessAgent: a bouncer that never opens a socket (REST twins
// and the event log only) is asked, accepts, negotiates and strikes a deal
// with a brand on sockets (PROTOCOL.md "Without a socket").
func TestE2ESocketlessAgent(t *testing.T) {
	t.Parallel()
	v := newE2E(t)
	brand, bouncer := v.register("Socket Brand", "brand"), v.register("REST Bouncer", "bouncer")
	bl := v.lobby(brand)
	bl.send(map[string]any{"type": "submit_offer", "id": "o1", "to": bouncer.id,
		"offer": map[string]any{"title": "Spring launch", "brief": "Two sends"}})
	off := bl.expect("offer_submitted")
	bl.send(map[string]any{"type": "create_negotiation", "id": "c1", "offer_id": off["offer_id"]})
	negID := bl.expect("negotiation_created")["negotiation_id"].(string)

	after := ""
	req, _ := v.eventsUntil(bouncer, &after, "negotiation_requested")
	if req["negotiation_id"] != negID || req["data"].(map[string]any)["negotiation_id"] != negID {
		t.Fatalf("requested event: %v", req)
	}
	// A refused lobby frame is an answer: 200 with the error frame.
	code, m := v.do("POST", "/v1/agents/me/lobby", bouncer.key, `{"type":"accept_negotiation","id":"x","negotiation_id":"neg_nope"}`)
	if code != http.StatusOK || m["type"] != "error" || m["re"] != "x" {
		t.Fatalf("accepting an unknown negotiation: %d %v", code, m)
	}
	// Early frames to a pending negotiation: 409 as the socket's upgrade.
	if code, m := v.do("POST", "/v1/negotiations/"+negID+"/frames", bouncer.key, `{"type":"message","content":"hi"}`); code != http.StatusConflict {
		t.Fatalf("frame to a pending negotiation: %d %v", code, m)
	}
	code, m = v.do("POST", "/v1/agents/me/lobby", bouncer.key, map[string]any{"type": "accept_negotiation", "id": "a1", "negotiation_id": negID})
	if code != http.StatusOK || m["type"] != "negotiation_accepted" || m["re"] != "a1" {
		t.Fatalf("accept: %d %v", code, m)
	}
	bl.expect("negotiation_accepted")
	b := v.room(brand, negID, "")
	b.expect("negotiation_started")
	v.eventsUntil(bouncer, &after, "negotiation_started")
	// The brand's log has its accepted request ahead of the room's start,
	// as its sockets had them.
	bafter := ""
	if _, before := v.eventsUntil(brand, &bafter, "negotiation_started"); len(before) != 1 || before[0]["type"] != "negotiation_accepted" {
		t.Fatalf("the brand's events before negotiation_started: %v", before)
	}

	b.send(`{"type":"message","id":"b1","content":"Two sends for $3,000?"}`)
	b.expect("message_ack")
	msg, _ := v.eventsUntil(bouncer, &after, "negotiation_message")
	if d := msg["data"].(map[string]any); d["content"] != "Two sends for $3,000?" || d["hash"] == nil || d["from"] != brand.id {
		t.Fatalf("the brand's message as an event: %v", msg)
	}

	// Not a party, unknown negotiation, thinking.
	other := v.register("Someone", "brand")
	if code, _ := v.do("POST", "/v1/negotiations/"+negID+"/frames", other.key, `{"type":"message","content":"hi"}`); code != http.StatusForbidden {
		t.Fatalf("a stranger's frame: %d", code)
	}
	if code, _ := v.do("POST", "/v1/negotiations/neg_nope/frames", bouncer.key, `{"type":"message","content":"hi"}`); code != http.StatusNotFound {
		t.Fatalf("unknown negotiation: %d", code)
	}
	if code, _ := v.do("POST", "/v1/negotiations/"+negID+"/frames", bouncer.key, `{"type":"thinking"}`); code != http.StatusNoContent {
		t.Fatalf("thinking: %d", code)
	}
	b.expect("agent_thinking")
	// A refused frame: 200 with the error.
	code, m = v.do("POST", "/v1/negotiations/"+negID+"/frames", bouncer.key, `{"type":"accept","id":"acc0"}`)
	if code != http.StatusOK || m["type"] != "error" || m["re"] != "acc0" {
		t.Fatalf("accepting nothing: %d %v", code, m)
	}

	propose := `{"type":"propose_terms","id":"p1","content":"Two sends, $3,200.","terms":{"amount_usd":3200,"sends":2}}`
	code, ack := v.do("POST", "/v1/negotiations/"+negID+"/frames", bouncer.key, propose)
	if code != http.StatusOK || ack["type"] != "message_ack" || ack["re"] != "p1" || ack["offer_hash"] == nil {
		t.Fatalf("proposal: %d %v", code, ack)
	}
	// The same id again: the same ack, nothing new (idempotent resend).
	if code, again := v.do("POST", "/v1/negotiations/"+negID+"/frames", bouncer.key, propose); code != http.StatusOK || again["seq"] != ack["seq"] {
		t.Fatalf("resend: %d %v, want the ack of seq %v", code, again, ack["seq"])
	}
	if m := b.expect("negotiation_message"); m["frame_type"] != "propose_terms" || m["offer_hash"] != ack["offer_hash"] {
		t.Fatalf("the brand got %v", m)
	}
	b.send(`{"type":"accept","id":"acc"}`)
	b.expect("message_ack")
	b.expect("negotiation_ended")
	end, before := v.eventsUntil(bouncer, &after, "negotiation_ended")
	d := end["data"].(map[string]any)
	if d["status"] != "deal" || d["receipt"] == nil || d["hash"] == nil || end["negotiation_id"] != negID {
		t.Fatalf("ended event: %v", end)
	}
	if len(before) != 1 || before[0]["data"].(map[string]any)["frame_type"] != "accept" {
		t.Fatalf("events between the proposal and the end: %v, want the brand's accept alone (the own proposal had its ack)", before)
	}
	// Paging: nothing after the last; an id not the agent's is 404.
	if code, m := v.do("GET", "/v1/events?after="+end["id"].(string), bouncer.key, nil); code != http.StatusOK || len(m["events"].([]any)) != 0 {
		t.Fatalf("after the last: %d %v", code, m)
	}
	if code, _ := v.do("GET", "/v1/events?after="+end["id"].(string), brand.key, nil); code != http.StatusNotFound {
		t.Fatalf("another agent's event id: %d", code)
	}
	if code, _ := v.do("GET", "/v1/events?limit=0", brand.key, nil); code != http.StatusUnprocessableEntity {
		t.Fatalf("limit=0: %d", code)
	}
	code, m = v.do("GET", "/v1/events?limit=2", brand.key, nil)
	if code != http.StatusOK || len(m["events"].([]any)) != 2 {
		t.Fatalf("the brand's first two events: %d %v", code, m)
	}
}
