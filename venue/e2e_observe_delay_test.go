package venue_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/venuehq/venue/venue"
)

// TestE2EObserveDelay: with --observe-delay 30 s, spectators see a live
// binding negotiation 30 s behind on the fake clock (the public view,
// transcript, JSONL, receipt and observer sockets, including one that
// connects late), the parties see it as it is, and the arena is never
// delayed.
func TestE2EObserveDelay(t *testing.T) {
	t.Parallel()
	const delay = 30 * time.Second
	v := newE2E(t, func(c *venue.Config) { c.ObserveDelay = delay })
	brand, _, negID, b, k := v.live(false)
	obs := v.dial("/v1/negotiations/" + negID + "/ws/observe")
	if ctx := obs.expect("negotiation_started")["context"].(map[string]any); num(ctx["last_seq"]) != 0 || ctx["standing"] != nil {
		t.Fatalf("observer's start: %v", ctx)
	}
	t0 := v.clock.Now()
	b.send(`{"type":"propose_terms","terms":{"amount_usd":3000,"sends":2}}`)
	b.expect("message_ack")
	k.expect("negotiation_message")

	view := func(key string) map[string]any {
		t.Helper()
		code, m := v.do("GET", "/v1/negotiations/"+negID, key, nil)
		if code != http.StatusOK {
			t.Fatalf("view: %d %v", code, m)
		}
		return m
	}
	transcript := func(key string) int {
		t.Helper()
		code, m := v.do("GET", "/v1/negotiations/"+negID+"/transcript", key, nil)
		if code != http.StatusOK {
			t.Fatalf("transcript: %d %v", code, m)
		}
		return len(m["entries"].([]any))
	}
	jsonl := func() int {
		t.Helper()
		resp, err := http.Get(v.url + "/v1/negotiations/" + negID + "/transcript.jsonl")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return strings.Count(string(b), "\n")
	}
	// Right after the proposal: the public sees nothing yet, the brand all.
	if m := view(""); num(m["last_seq"]) != 0 || m["standing"] != nil || num(m["delayed_seconds"]) != 30 || m["turn"] != brand.id {
		t.Fatalf("public view at +0s: %v", m)
	}
	if m := view(brand.key); num(m["last_seq"]) != 1 || m["standing"] == nil || m["delayed_seconds"] != nil {
		t.Fatalf("the brand's view: %v", m)
	}
	if n := transcript(""); n != 0 {
		t.Fatalf("public transcript at +0s: %d entries", n)
	}
	if n := transcript(brand.key); n != 1 {
		t.Fatalf("the brand's transcript: %d entries", n)
	}
	if n := jsonl(); n != 0 {
		t.Fatalf("public JSONL at +0s: %d lines", n)
	}

	v.clock.Advance(10 * time.Second)
	k.send(`{"type":"counter_terms","terms":{"amount_usd":3400,"sends":2}}`)
	k.expect("message_ack")
	b.expect("negotiation_message")
	// A spectator arriving now starts from the room of 30 s ago and is
	// replayed what came since, each in its time.
	late := v.dial("/v1/negotiations/" + negID + "/ws/observe")
	if ctx := late.expect("negotiation_started")["context"].(map[string]any); num(ctx["last_seq"]) != 0 || ctx["standing"] != nil {
		t.Fatalf("late observer's start: %v", ctx)
	}

	v.clock.Set(t0.Add(delay)) // the proposal is 30 s old
	for _, s := range []*sock{obs, late} {
		if m := s.expectSeq("negotiation_message", 1); m["frame_type"] != "propose_terms" || !v.clock.Now().Before(t0.Add(delay+10*time.Second)) {
			t.Fatalf("%v at %v", m, v.clock.Now())
		}
	}
	if m := view(""); num(m["last_seq"]) != 1 || m["standing"].(map[string]any)["by"] != brand.id || m["turn"] == brand.id {
		t.Fatalf("public view at +30s: %v", m)
	}
	// The brand takes the counter: a deal the public does not see yet.
	b.send(`{"type":"accept"}`)
	b.expect("message_ack")
	if m := view(""); m["status"] != "live" || m["ended_at"] != nil || m["terms"] != nil {
		t.Fatalf("public view just after the deal: %v", m)
	}
	if code, m := v.do("GET", "/v1/negotiations/"+negID+"/receipt", "", nil); code != http.StatusConflict {
		t.Fatalf("public receipt before the delay: %d %v", code, m)
	}
	if code, m := v.do("GET", "/v1/negotiations/"+negID+"/receipt", brand.key, nil); code != http.StatusOK {
		t.Fatalf("the brand's receipt: %d %v", code, m)
	}
	v.clock.Set(t0.Add(10*time.Second + delay)) // the counter is 30 s old
	for _, s := range []*sock{obs, late} {
		if m := s.expectSeq("negotiation_message", 2); m["frame_type"] != "counter_terms" {
			t.Fatalf("%v", m)
		}
	}
	v.clock.Advance(delay) // everything is 30 s old
	for _, s := range []*sock{obs, late} {
		s.expectSeq("negotiation_message", 3)
		if m := s.expectSeq("negotiation_ended", 4); m["status"] != "deal" {
			t.Fatalf("%v", m)
		}
	}
	if m := view(""); m["status"] != "deal" || m["delayed_seconds"] != nil {
		t.Fatalf("public view after the delay: %v", m)
	}
	if n := jsonl(); n != 4 {
		t.Fatalf("public JSONL after the delay: %d lines", n)
	}

	// The arena: never delayed.
	_, _, arenaID, ab, _ := v.live(true)
	ab.send(`{"type":"propose_terms","terms":{"amount_usd":100}}`)
	ab.expect("message_ack")
	if code, m := v.do("GET", "/v1/negotiations/"+arenaID, "", nil); code != http.StatusOK || num(m["last_seq"]) != 1 || m["delayed_seconds"] != nil {
		t.Fatalf("arena view: %d %v", code, m)
	}
}

// TestE2EWatchers: GET /v1/negotiations/{id}/watchers counts the open
// observer sockets of one negotiation (the embedded default: this node).
func TestE2EWatchers(t *testing.T) {
	t.Parallel()
	v := newE2E(t)
	_, _, negID, _, _ := v.live(true)
	count := func() int {
		t.Helper()
		code, m := v.do("GET", "/v1/negotiations/"+negID+"/watchers", "", nil)
		if code != http.StatusOK {
			t.Fatalf("watchers: %d %v", code, m)
		}
		return int(num(m["watchers"]))
	}
	if n := count(); n != 0 {
		t.Fatalf("%d watchers before any observer", n)
	}
	a := v.dial("/v1/negotiations/" + negID + "/ws/observe")
	a.expect("negotiation_started")
	b := v.dial("/v1/negotiations/" + negID + "/ws/observe")
	b.expect("negotiation_started")
	if n := count(); n != 2 {
		t.Fatalf("%d watchers, want 2", n)
	}
	_ = a.ws.Close()
	deadline := time.Now().Add(20 * time.Second)
	for count() != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("still %d watchers after one left", count())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code, _ := v.do("GET", "/v1/negotiations/neg_nope/watchers", "", nil); code != http.StatusNotFound {
		t.Fatalf("unknown negotiation: %d", code)
	}
}
