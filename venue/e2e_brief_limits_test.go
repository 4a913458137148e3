package venue_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/venuehq/venue/venue"
)

// replyTo reads s's frames until the reply to request id, passing over the
// pushes a brief makes on the way (brief_received, quotes_ready,
// brief_closed), and returns it.
func replyTo(t *testing.T, s *sock, id string) map[string]any {
	t.Helper()
	for {
		m := s.next()
		if m["re"] == id {
			return m
		}
		switch m["type"] {
		case "brief_received", "quotes_ready", "brief_closed":
		default:
			t.Fatalf("waiting for the reply to %s, got %v", id, m)
		}
	}
}

// TestE2EBriefLimits: PROTOCOL.md "Limits and close codes": a brand has at
// most 5 briefs collecting at once and submits at most 20 in any hour
// (rate_limited past either, nothing stored), and a quote can be awarded
// only within an hour after its brief's collect_until (invalid_state after).
func TestE2EBriefLimits(t *testing.T) {
	t.Parallel()
	// The socket's frame rate (10 a second) is not what this test is about.
	v := newE2E(t, func(c *venue.Config) { c.Limits.FramesPerSecond, c.Limits.FrameBurst = 1000, 1000 })
	brand := v.register("Acme", "brand")
	kA := v.register("Letters A", "bouncer")
	kB := v.register("Letters B", "bouncer")
	bl, la := v.lobby(brand), v.lobby(kA)
	n := 0
	submit := func() map[string]any {
		t.Helper()
		n++
		id := fmt.Sprintf("b%d", n)
		bl.send(map[string]any{"type": "submit_brief", "id": id, "to": []string{kA.id, kB.id},
			"offer": map[string]any{"title": "x"}, "collect_seconds": 10})
		return replyTo(t, bl, id)
	}
	refused := func(m map[string]any, says string) {
		t.Helper()
		if m["type"] != "error" || m["code"] != "rate_limited" || !strings.Contains(fmt.Sprint(m["message"]), says) {
			t.Fatalf("want rate_limited saying %q, got %v", says, m)
		}
	}

	// The first brief gets a quote from A, to award late at the end.
	first := submit()
	if first["type"] != "brief_submitted" {
		t.Fatalf("first brief: %v", first)
	}
	var offerA string
	for _, o := range first["offers"].([]any) {
		if m := o.(map[string]any); m["to"] == kA.id {
			offerA = str(m["offer_id"])
		}
	}
	la.send(map[string]any{"type": "submit_quote", "id": "q1", "offer_id": offerA, "terms": map[string]any{"amount_usd": 1000}})
	q := replyTo(t, la, "q1")
	if q["type"] != "quote_submitted" {
		t.Fatalf("quote: %v", q)
	}

	for range 4 {
		if m := submit(); m["type"] != "brief_submitted" {
			t.Fatalf("brief %d: %v", n, m)
		}
	}
	refused(submit(), "collecting quotes") // a sixth while five collect
	// Three more rounds of five as each round's window closes: 20 in the hour.
	for range 3 {
		v.clock.Advance(11 * time.Second)
		for range 5 {
			if m := submit(); m["type"] != "brief_submitted" {
				t.Fatalf("brief %d: %v", n, m)
			}
		}
	}
	v.clock.Advance(11 * time.Second)
	refused(submit(), "in the last hour") // the 21st within the hour

	// An hour after the first brief's collect_until, its quote is past award.
	v.clock.Advance(time.Hour)
	bl.send(map[string]any{"type": "award_quote", "id": "late", "quote_id": q["quote_id"]})
	if m := replyTo(t, bl, "late"); m["type"] != "error" || m["code"] != "invalid_state" {
		t.Fatalf("a late award: %v", m)
	}
	// The hour has passed for the brand's briefs too: a new one is taken.
	if m := submit(); m["type"] != "brief_submitted" {
		t.Fatalf("a brief an hour later: %v", m)
	}
}
