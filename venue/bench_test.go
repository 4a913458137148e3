package venue_test

import (
	"testing"

	"github.com/venuehq/venue/venue"
)

// BenchmarkFrameRoundTrip is the whole path of one talk frame: the brand's
// socket writes a message, the venue decodes it, runs the room step, commits
// it to the (in-memory) store, acks the sender and delivers it to the
// bouncer; the benchmark waits for both the ack and the delivery.
func BenchmarkFrameRoundTrip(b *testing.B) {
	v := newE2E(b, func(c *venue.Config) { c.Limits.FramesPerSecond, c.Limits.FrameBurst = 1e9, 1e9 })
	brand, bouncer := v.register("B", "brand"), v.register("K", "bouncer")
	negID, _, _ := v.match(brand, bouncer, true)
	br, kr := v.room(brand, negID, ""), v.room(bouncer, negID, "")
	br.expect("negotiation_started")
	kr.expect("negotiation_started")
	msg := []byte(`{"type":"message","content":"bench: lorem ipsum dolor sit amet"}`)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		br.send(msg)
		br.expect("message_ack")
		kr.expect("negotiation_message")
	}
}
