package rtmetrics

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
)

var sink [][]byte

func TestFetchAndSub(t *testing.T) {
	srv := httptest.NewServer(Handler())
	defer srv.Close()
	before, err := Fetch(context.Background(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 1000; i++ {
		sink = append(sink, make([]byte, 64))
	}
	// The runtime counts small allocations when a P's cache is flushed, not
	// as they happen; a GC flushes every cache, so the count is exact here.
	runtime.GC()
	after, err := Fetch(context.Background(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	d := after.Sub(before)
	if got := d.Values[AllocObjects]; got < 1000 {
		t.Errorf("allocations between the snapshots = %v, want at least the 1000 made", got)
	}
	for _, name := range []string{SchedLatency, GCPauses, OtherPauses} {
		h, ok := after.Histograms[name]
		if !ok || len(h.Buckets) != len(h.Counts)+1 {
			t.Errorf("histogram %s: present %v, %d buckets for %d counts", name, ok, len(h.Buckets), len(h.Counts))
		}
	}
	if _, ok := after.Histograms["/gc/heap/allocs-by-size:bytes"]; ok {
		t.Error("per-size allocation tables are not served")
	}
}

func TestFetchRefusesNon200(t *testing.T) {
	srv := httptest.NewServer(nil) // 404 for every path
	defer srv.Close()
	if _, err := Fetch(context.Background(), srv.URL); err == nil {
		t.Fatal("Fetch of a 404 succeeded")
	}
}

func TestQuantile(t *testing.T) {
	h := Histogram{Buckets: []float64{-math.MaxFloat64, 0, 1, 2, 4, math.MaxFloat64}, Counts: []uint64{0, 50, 40, 9, 1}}
	for _, tc := range []struct{ q, want float64 }{{0.5, 1}, {0.9, 2}, {0.99, 4}, {1, 4}} {
		if got := h.Quantile(tc.q); got != tc.want {
			t.Errorf("Quantile(%v) = %v, want %v", tc.q, got, tc.want)
		}
	}
	if got := h.Max(); got != 4 {
		t.Errorf("Max = %v, want 4 (lower bound of the open top bucket)", got)
	}
	if got := (Histogram{Buckets: []float64{0, 1}, Counts: []uint64{0}}).Quantile(0.99); got != 0 {
		t.Errorf("Quantile of an empty histogram = %v, want 0", got)
	}
	b := Snapshot{Histograms: map[string]Histogram{"h": {Buckets: h.Buckets, Counts: []uint64{0, 50, 0, 0, 0}}}}
	a := Snapshot{Histograms: map[string]Histogram{"h": h}}
	if got := a.Sub(b).Histograms["h"].Quantile(0.5); got != 2 {
		t.Errorf("after Sub, median = %v, want 2 (the 50 earlier samples removed)", got)
	}
}

// TestGCHandler: POST runs a collection to its end (the cycle count moves)
// and answers 204; GET is 405 with Allow.
func TestGCHandler(t *testing.T) {
	srv := httptest.NewServer(GCHandler())
	defer srv.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	resp, err := http.Post(srv.URL, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	runtime.ReadMemStats(&after)
	if resp.StatusCode != http.StatusNoContent || after.NumGC <= before.NumGC {
		t.Fatalf("POST: %d, GC cycles %d -> %d", resp.StatusCode, before.NumGC, after.NumGC)
	}
	resp, err = http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST" {
		t.Fatalf("GET: %d, Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
	}
}
