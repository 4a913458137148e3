package venue_test

import (
	"testing"

	"github.com/venuehq/venue/venue"
)

// BenchmarkFrameRoundTrip is the whole path of one talk frame: the brand's
// socket writes a message, the venue decodes it, runs the room step, commits
// it to the (in-memory) store, acks the sender and delivers it to the
// bouncer; the benchmark waits for both the ack and the delivery. A new
// negotiation takes over every 1,500 frames (a transcript holds 2,000:
// negotiation.MaxTranscriptFrames). The test harness checks every frame
// against asyncapi.yaml, so the allocations include that check's.
func BenchmarkFrameRoundTrip(b *testing.B) {
	v := newE2E(b, func(c *venue.Config) { c.Limits.FramesPerSecond, c.Limits.FrameBurst = 1e9, 1e9 })
	var br, kr *e2eConn
	open := func() {
		brand, bouncer := v.register("B", "brand"), v.register("K", "bouncer")
		negID, _, _ := v.match(brand, bouncer, true)
		br, kr = v.room(brand, negID, ""), v.room(bouncer, negID, "")
		br.expect("negotiation_started")
		kr.expect("negotiation_started")
	}
	open()
	msg := []byte(`{"type":"message","content":"bench: lorem ipsum dolor sit amet"}`)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		if n++; n%1500 == 0 {
			b.StopTimer()
			open()
			b.StartTimer()
		}
		br.send(msg)
		br.expect("message_ack")
		kr.expect("negotiation_message")
	}
}
