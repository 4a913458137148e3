package events_test

import (
	"context"
	"fmt"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/venuehq/venue/events"
)

// scannable is the heap the garbage collector scans (objects holding
// pointers), read right after a collection.
func scannable() float64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/scan/heap:bytes"}}
	metrics.Read(s)
	return float64(s[0].Value.Uint64())
}

// TestMemoryKeepsNothingToScan: the events Memory keeps add (almost)
// nothing a GC cycle must scan. 20,000 events of 200 agents, each with a
// 300-byte frame as a venue negotiation's are: the old form (a struct of
// six pointers per event and an index keyed by string) left about 200
// bytes to scan an event; this one leaves under 8 (the per-agent headers).
func TestMemoryKeepsNothingToScan(t *testing.T) {
	const n = 20000
	frame := []byte(`{"type":"negotiation_message","negotiation_id":"neg_0123456789abcdef","seq":1,"from":"agt_0123456789","content":"` +
		strings.Repeat("x", 180) + `","at":"2026-12-03T20:00:00.000Z","hash":"sha256:0123"}`)
	at := time.Date(2026, 12, 3, 20, 0, 0, 0, time.UTC)
	m := events.NewMemory()
	before := scannable()
	for i := range n {
		// The frame is copied, as the venue hands each event a fresh one.
		e := events.NewTyped(fmt.Sprintf("agt_%03d", i%200), "neg_1", "negotiation_message", append([]byte(nil), frame...), at)
		if err := m.Append(context.Background(), e); err != nil {
			t.Fatal(err)
		}
	}
	perEvent := (scannable() - before) / n
	runtime.KeepAlive(m)
	if perEvent > 8 {
		t.Fatalf("%.1f scannable bytes kept per event, want <= 8", perEvent)
	}
	t.Logf("%.2f scannable bytes kept per event", perEvent)
	if got, err := m.After(context.Background(), "agt_007", "", 1); err != nil || len(got) != 1 || string(got[0].Data) != string(frame) || !got[0].CreatedAt.Equal(at) {
		t.Fatalf("read back: %+v %v", got, err)
	}
}
