package memory

import (
	"context"
	"encoding/json"
	"reflect"
	"runtime"
	"runtime/metrics"
	"strconv"
	"testing"
	"time"

	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/store"
)

// The compact form gives back every field as stored. At comes back in its
// own location, without the monotonic reading (the Postgres store drops it
// too), for every location a clock may carry.
func TestTranscriptRoundTrip(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		paris = time.FixedZone("CET", 3600)
	}
	plus := time.FixedZone("UTC+5:30", 5*3600+1800)
	base := time.Date(2026, 11, 30, 8, 0, 0, 123456789, time.UTC)
	ats := []time.Time{
		base,
		time.Now(), // Local, with a monotonic reading
		time.Now().UTC(),
		base.In(time.Local),
		base.In(paris),
		base.In(plus),
		base.In(paris).Add(time.Hour), // paris again: one locs slot
		{},                            // the zero time
		time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC),
		time.Date(1969, 12, 31, 23, 59, 59, 999999999, plus), // before 1970: negative Unix seconds
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
	}
	var want []negotiation.Entry
	for i, at := range ats {
		e := negotiation.Entry{Seq: int64(i) + 1, Frame: json.RawMessage(`{"type":"negotiation_message","seq":` + strconv.Itoa(i+1) + `}`),
			Hash: "sha256:ab", At: at, Type: negotiation.TypeNegotiationMessage, From: "agt_1"}
		switch i {
		case 1:
			e.Frame, e.Hash, e.Type, e.From = nil, "", "", "" // all empty, Frame nil
		case 2:
			e.Frame, e.From = json.RawMessage{}, "" // Frame empty, not nil
		}
		want = append(want, e)
	}
	var tr transcript
	if got := tr.since(0); got != nil {
		t.Fatalf("empty transcript: %#v, want nil", got)
	}
	// The first entries alone, then the rest: appends after a read.
	tr.append(want[:3])
	tr.append(want[3:])
	if len(tr.locs) != 2 {
		t.Fatalf("%d other locations kept, want 2 (Paris, UTC+5:30)", len(tr.locs))
	}
	for since := int64(0); since <= int64(len(want)); since++ {
		got := tr.since(since)
		if got == nil {
			t.Fatalf("since %d: nil, want a non-nil slice", since)
		}
		for j := range want[since:] {
			w := want[since+int64(j)]
			w.At = w.At.Round(0) // drops the monotonic reading only
			if !reflect.DeepEqual(got[j], w) || got[j].At != w.At || got[j].At.Location() != w.At.Location() {
				t.Fatalf("since %d, seq %d:\n got %#v\nwant %#v", since, w.Seq, got[j], w)
			}
			if (got[j].Frame == nil) != (w.Frame == nil) {
				t.Fatalf("seq %d: Frame nil %v, want %v", w.Seq, got[j].Frame == nil, w.Frame == nil)
			}
		}
	}
}

// Entries fill chunks of growing size without ever moving a byte; an
// entry larger than a chunk gets one of its own.
func TestTranscriptChunks(t *testing.T) {
	var tr transcript
	var want []negotiation.Entry
	var first *byte
	for i := range 600 {
		n := 300 + i%7*40
		if i == 400 {
			n = 3 * maxChunk // its own chunk
		}
		frame := make([]byte, n)
		for j := range frame {
			frame[j] = byte('a' + (i+j)%26)
		}
		e := negotiation.Entry{Seq: int64(i) + 1, Frame: frame, Hash: "sha256:" + strconv.Itoa(i), At: time.Unix(int64(i), 0).UTC(),
			Type: negotiation.TypeNegotiationMessage, From: "agt_" + strconv.Itoa(i%2)}
		want = append(want, e)
		tr.append(want[i : i+1])
		if first == nil {
			first = &tr.chunks[0][0]
		}
	}
	if &tr.chunks[0][0] != first {
		t.Fatal("the first chunk moved")
	}
	if len(tr.chunks) < 5 {
		t.Fatalf("%d chunks for 600 entries, want them spread over more", len(tr.chunks))
	}
	for k, c := range tr.chunks {
		if cap(c) > maxChunk && k != int(tr.recs[400].chunk) {
			t.Fatalf("chunk %d has capacity %d, more than %d", k, cap(c), maxChunk)
		}
	}
	if big := tr.recs[400]; big.off != 0 || tr.recs[401].chunk != big.chunk+1 || cap(tr.chunks[big.chunk]) != size(&want[400]) {
		t.Fatalf("the large entry is not alone in its chunk: %+v, next %+v", big, tr.recs[401])
	}
	if got := tr.since(0); !reflect.DeepEqual(got, want) {
		t.Fatal("entries differ after a round trip through the chunks")
	}
	if got := tr.since(599); len(got) != 1 || !reflect.DeepEqual(got[0], want[599]) {
		t.Fatalf("since 599: %+v", got)
	}
}

// A caller's Entries share nothing it or the store may write later: the
// entries Update took are copied, and appending to a returned Frame copies.
func TestTranscriptNoAliasing(t *testing.T) {
	var tr transcript
	in := []negotiation.Entry{{Seq: 1, Frame: []byte(`{"a":1}`), Hash: "h1", Type: "t"}, {Seq: 2, Frame: []byte(`{"b":2}`), Hash: "h2", Type: "t"}}
	tr.append(in)
	in[0].Frame[2] = 'X' // the step's buffer, reused
	got := tr.since(0)
	if string(got[0].Frame) != `{"a":1}` {
		t.Fatalf("stored frame changed with the caller's buffer: %s", got[0].Frame)
	}
	_ = append(got[0].Frame, `garbage`...)
	tr.append([]negotiation.Entry{{Seq: 3, Frame: []byte(`{"c":3}`), Hash: "h3", Type: "t"}})
	again := tr.since(0)
	if string(again[1].Frame) != `{"b":2}` || again[1].Hash != "h2" || string(again[2].Frame) != `{"c":3}` {
		t.Fatalf("a caller's append wrote into the arena: %q %q %q", again[1].Frame, again[1].Hash, again[2].Frame)
	}
	if string(got[1].Frame) != `{"b":2}` {
		t.Fatalf("an earlier read changed with a later append: %s", got[1].Frame)
	}
}

// The stored transcripts leave the collector next to nothing to scan and
// few objects: the []negotiation.Entry form left 131 scannable bytes and 2
// objects per entry (BenchmarkTranscriptRetained); the thresholds leave
// room for the runtime's own noise.
func TestTranscriptNoscan(t *testing.T) {
	const rooms, perRoom = 20, 500
	s := New()
	ctx := context.Background()
	for i := range rooms {
		id := "neg_" + string(rune('a'+i))
		if err := s.CreateOffer(ctx, store.Offer{ID: "off_" + id}); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateNegotiation(ctx, negotiation.State{ID: id, OfferID: "off_" + id}); err != nil {
			t.Fatal(err)
		}
	}
	frame := `{"at":"2026-11-30T08:00:01.000Z","content":"We can do two sends in the first week of March, with a story mention on each; would that work for you?","frame_type":"message","from":"agt_01JDX7AAAA","seq":1,"turn":"agt_01JDX7BBBB","turn_deadline_at":"2026-11-30T08:01:01.000Z","type":"negotiation_message"}`
	step := func(_ store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
		st.LastSeq++
		e := negotiation.Entry{Seq: st.LastSeq, Frame: []byte(frame), Hash: "sha256:" + string(make([]byte, 64)),
			At: time.Now(), Type: negotiation.TypeNegotiationMessage, From: "agt_01JDX7AAAA"}
		return negotiation.Outcome{Entries: []negotiation.Entry{e}}, nil
	}
	measure := func() (scan, objs uint64) {
		runtime.GC()
		ms := []metrics.Sample{{Name: "/gc/scan/heap:bytes"}, {Name: "/gc/heap/objects:objects"}}
		metrics.Read(ms)
		return ms[0].Value.Uint64(), ms[1].Value.Uint64()
	}
	scan0, objs0 := measure()
	for range perRoom {
		for i := range rooms {
			if _, _, err := s.Update(ctx, "neg_"+string(rune('a'+i)), step); err != nil {
				t.Fatal(err)
			}
		}
	}
	scan1, objs1 := measure()
	runtime.KeepAlive(s)
	n := float64(rooms * perRoom)
	scanPer, objsPer := (float64(scan1)-float64(scan0))/n, (float64(objs1)-float64(objs0))/n
	t.Logf("%d entries: %.2f scannable bytes and %.3f objects per entry", rooms*perRoom, scanPer, objsPer)
	if scanPer > 16 {
		t.Errorf("%.1f scannable heap bytes per stored entry, want at most 16", scanPer)
	}
	if objsPer > 0.25 {
		t.Errorf("%.2f live heap objects per stored entry, want at most 0.25", objsPer)
	}
	if got := s.negotiations["neg_a"].transcript.recs; len(got) != perRoom {
		t.Fatalf("%d entries stored in neg_a, want %d", len(got), perRoom)
	}
}
