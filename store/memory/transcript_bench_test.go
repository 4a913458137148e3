package memory_test

import (
	"context"
	"fmt"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/store/memory"
)

// t0 is the benchmarks' clock.
var t0 = time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)

// frameTemplate is a negotiation_message as the rules build it (302 bytes).
const frameTemplate = `{"at":"2026-11-30T08:00:01.000Z","content":"We can do two sends in the first week of March, with a story mention on each; would that work for you?","frame_type":"message","from":"agt_01JDX7AAAA","seq":1,"turn":"agt_01JDX7BBBB","turn_deadline_at":"2026-11-30T08:01:01.000Z","type":"negotiation_message"}`

// hashTemplate is a chain hash as the rules write it.
const hashTemplate = "sha256:7b59058c463703a9a650ce0aa63a5c2c8c28c2f4c15e647550929f703481d750"

const brandID = "agt_01JDX7AAAA"

// newRooms creates n negotiations in s and returns their ids.
func newRooms(tb testing.TB, s *memory.Store, n int) []string {
	tb.Helper()
	ctx := context.Background()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("neg_%06d", i)
		o := store.Offer{ID: fmt.Sprintf("off_%06d", i), Brand: brandID, Bouncer: "agt_01JDX7BBBB", CreatedAt: t0}
		if err := s.CreateOffer(ctx, o); err != nil {
			tb.Fatal(err)
		}
		st := negotiation.NewRequest(ids[i], o.ID, nil, negotiation.Party{AgentID: brandID, Name: "Brand"},
			negotiation.Party{AgentID: o.Bouncer, Name: "Bouncer"}, false, t0)
		st.Status = negotiation.StatusLive
		if err := s.CreateNegotiation(ctx, st); err != nil {
			tb.Fatal(err)
		}
	}
	return ids
}

// appendOne is a step that lands one negotiation_message, its Frame and
// Hash freshly allocated as the rules' appendEntry allocates them, so the
// store is the only thing that keeps them.
func appendOne(_ store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
	st.LastSeq++
	at := t0.Add(time.Duration(st.LastSeq) * time.Second)
	st.LastAt = at
	e := negotiation.Entry{Seq: st.LastSeq, Frame: []byte(frameTemplate), Hash: strings.Clone(hashTemplate), At: at,
		Type: negotiation.TypeNegotiationMessage, From: brandID}
	st.HeadHash = e.Hash
	return negotiation.Outcome{Entries: []negotiation.Entry{e}}, nil
}

// fill lands perRoom entries in each of ids, round robin.
func fill(tb testing.TB, s *memory.Store, ids []string, perRoom int) {
	tb.Helper()
	ctx := context.Background()
	for range perRoom {
		for _, id := range ids {
			if _, _, err := s.Update(ctx, id, appendOne); err != nil {
				tb.Fatal(err)
			}
		}
	}
}

// heapStats returns, after a full collection, the scannable heap (what
// the next mark phase must scan), the live heap objects and the live heap
// bytes.
func heapStats() [3]float64 {
	runtime.GC()
	ms := []metrics.Sample{{Name: "/gc/scan/heap:bytes"}, {Name: "/gc/heap/objects:objects"}, {Name: "/gc/heap/live:bytes"}}
	metrics.Read(ms)
	return [3]float64{float64(ms[0].Value.Uint64()), float64(ms[1].Value.Uint64()), float64(ms[2].Value.Uint64())}
}

// retained measures what rooms×perRoom transcript entries keep on the heap,
// per entry: scannable bytes, live heap objects, live heap bytes.
func retained(tb testing.TB, rooms, perRoom int) [3]float64 {
	tb.Helper()
	s := memory.New()
	ids := newRooms(tb, s, rooms)
	before := heapStats()
	fill(tb, s, ids, perRoom)
	after := heapStats()
	runtime.KeepAlive(s)
	var per [3]float64
	for i := range per {
		per[i] = (after[i] - before[i]) / float64(rooms*perRoom)
	}
	return per
}

// BenchmarkTranscriptRetained reports what the stored transcripts of 20
// negotiations of 500 frames each leave for the collector, per entry:
// scannable bytes (scan-B/entry), live heap objects (objs/entry) and live
// heap bytes (live-B/entry).
func BenchmarkTranscriptRetained(b *testing.B) {
	var per [3]float64
	for b.Loop() {
		per = retained(b, 20, 500)
	}
	b.ReportMetric(per[0], "scan-B/entry")
	b.ReportMetric(per[1], "objs/entry")
	b.ReportMetric(per[2], "live-B/entry")
}

// BenchmarkUpdate lands one frame per op, round robin over 50 negotiations
// of up to 1,000 frames each (then a fresh store), so the transcripts grow
// as they do under load. The step allocates 3 objects (Frame, Hash, the
// Entries slice); the rest is the store's.
func BenchmarkUpdate(b *testing.B) {
	const rooms, perRoom = 50, 1000
	ctx := context.Background()
	var s *memory.Store
	var ids []string
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		if i%(rooms*perRoom) == 0 {
			b.StopTimer()
			s = memory.New()
			ids = newRooms(b, s, rooms)
			b.StartTimer()
		}
		if _, _, err := s.Update(ctx, ids[i%rooms], appendOne); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkTranscript reads a 1,000-frame transcript: all of it (a page,
// a receipt) and its last 10 frames (a subscriber's catch-up).
func BenchmarkTranscript(b *testing.B) {
	s := memory.New()
	ids := newRooms(b, s, 1)
	fill(b, s, ids, 1000)
	ctx := context.Background()
	for _, since := range []int64{0, 990} {
		b.Run(fmt.Sprintf("since=%d", since), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				es, err := s.Transcript(ctx, ids[0], since)
				if err != nil || len(es) != 1000-int(since) {
					b.Fatal(len(es), err)
				}
			}
		})
	}
}

// BenchmarkGCRetained times one full collection with the transcripts of
// 100 negotiations of 1,000 frames each on the heap: the mark phase the
// frames' path pays for in assists.
func BenchmarkGCRetained(b *testing.B) {
	s := memory.New()
	fill(b, s, newRooms(b, s, 100), 1000)
	runtime.GC()
	for b.Loop() {
		runtime.GC()
	}
	runtime.KeepAlive(s)
}
