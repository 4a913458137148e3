package negotiation

import (
	"strconv"
	"testing"
	"time"
)

var benchFrame = []byte(`{"type":"message","id":"c-1","content":"bench:1764489600000000000 lorem ipsum dolor sit amet"}`)

// BenchmarkDecodeFrame: one party frame from bytes to Frame.
func BenchmarkDecodeFrame(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeFrame(benchFrame); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkApplyMessage: the room's step for a message, parties alternating
// (no id, so no idempotency record grows). A fresh room takes over every
// 1,500 frames: a transcript holds MaxTranscriptFrames.
func BenchmarkApplyMessage(b *testing.B) {
	b.ReportAllocs()
	t0, s, f, from := benchRoom(b)
	fresh := func(at time.Time) { s = liveRoom(b, at) }
	i := 0
	for b.Loop() {
		now := t0.Add(time.Duration(i) * time.Millisecond)
		if i > 0 && i%1500 == 0 {
			b.StopTimer()
			fresh(now)
			b.StartTimer()
		}
		if _, err := s.Apply(from[i%2], f, now, nil); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkStepWithID: a message with a client id as a store steps it
// (store/memory Update): clone the state, apply, keep the clone, hand out a
// copy. With ids the room keeps the last AckWindow acks, which a clone
// shares rather than copies (Clone, rememberAck).
func BenchmarkStepWithID(b *testing.B) {
	b.ReportAllocs()
	t0, s, f, from := benchRoom(b)
	fresh := func(at time.Time) { s = liveRoom(b, at) }
	ids := make([]string, 1500)
	for i := range ids {
		ids[i] = "c-" + strconv.Itoa(i)
	}
	i := 0
	var handed State
	for b.Loop() {
		now := t0.Add(time.Duration(i) * time.Millisecond)
		if i > 0 && i%1500 == 0 {
			b.StopTimer()
			fresh(now)
			b.StartTimer()
		}
		work := s.Clone()
		f.ID = ids[i%1500]
		if _, err := work.Apply(from[i%2], f, now, nil); err != nil {
			b.Fatal(err)
		}
		s = work
		handed = s.Clone()
		i++
	}
	if len(handed.Acks) != AckWindow {
		b.Fatalf("%d acks kept", len(handed.Acks))
	}
}

// benchRoom is the rooms' benchmarks' start: a live room at t0, the message
// they send and the parties that alternate sending it.
func benchRoom(b *testing.B) (time.Time, State, Frame, [2]string) {
	t0 := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	f := Frame{Type: TypeMessage, Content: "bench:1764489600000000000 lorem ipsum dolor sit amet", HasContent: true}
	return t0, liveRoom(b, t0), f, [2]string{"brand", "bouncer"}
}

// liveRoom is a negotiation between "brand" and "bouncer" started at at.
func liveRoom(b *testing.B, at time.Time) State {
	s := NewRequest("neg1", "off1", []byte(`{"title":"t"}`), Party{AgentID: "brand"}, Party{AgentID: "bouncer"}, false, at)
	if _, err := s.Start(at); err != nil {
		b.Fatal(err)
	}
	return s
}
