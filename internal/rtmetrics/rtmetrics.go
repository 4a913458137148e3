// Package rtmetrics serves a Go process's runtime/metrics as JSON and reads
// them back: the admin listener's GET /debug/runtime-metrics and the bench
// relay's serve it, and `venue bench` takes the difference of two snapshots
// around each phase (allocations per frame, GC cycles and CPU, scheduling
// latency, stop-the-world pauses; BENCHMARKS.md "What venue bench reports").
package rtmetrics

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"runtime"
	"runtime/metrics"
	"strings"
)

// Path is where Handler is mounted.
const Path = "/debug/runtime-metrics"

// Names of the metrics the bench reads (runtime/metrics names).
const (
	AllocObjects = "/gc/heap/allocs:objects"    // objects allocated since start, cumulative
	AllocBytes   = "/gc/heap/allocs:bytes"      // bytes allocated since start, cumulative
	GCCycles     = "/gc/cycles/total:gc-cycles" // completed GC cycles, cumulative
	GCCPU        = "/cpu/classes/gc/total:cpu-seconds"
	TotalCPU     = "/cpu/classes/total:cpu-seconds"
	SchedLatency = "/sched/latencies:seconds"          // time goroutines spent runnable before running
	GCPauses     = "/sched/pauses/total/gc:seconds"    // stop-the-world pauses of the GC
	OtherPauses  = "/sched/pauses/total/other:seconds" // other stop-the-world pauses
	GCAssistCPU  = "/cpu/classes/gc/mark/assist:cpu-seconds"
	HeapLive     = "/gc/heap/live:bytes"  // heap marked live by the last GC
	ScanHeap     = "/gc/scan/heap:bytes"  // scannable heap (live after a collection, garbage too otherwise)
	ScanStack    = "/gc/scan/stack:bytes" // goroutine stacks the last GC scanned
)

// histograms are the distributions served (the others are per-size
// allocation tables the bench does not read).
var histograms = map[string]bool{SchedLatency: true, GCPauses: true, OtherPauses: true}

// Snapshot is one reading: every scalar metric (uint64 values as float64)
// and the histograms above, each cumulative since the process started.
type Snapshot struct {
	Values     map[string]float64   `json:"values"`
	Histograms map[string]Histogram `json:"histograms"`
}

// Histogram is a runtime/metrics Float64Histogram: Counts[i] samples fell in
// [Buckets[i], Buckets[i+1]) seconds. The infinite ends are written as
// ±math.MaxFloat64 (JSON has no infinity).
type Histogram struct {
	Buckets []float64 `json:"buckets"`
	Counts  []uint64  `json:"counts"`
}

// Read samples the running process.
func Read() Snapshot {
	descs := metrics.All()
	samples := make([]metrics.Sample, 0, len(descs))
	for _, d := range descs {
		if d.Kind != metrics.KindFloat64Histogram || histograms[d.Name] {
			samples = append(samples, metrics.Sample{Name: d.Name})
		}
	}
	metrics.Read(samples)
	snap := Snapshot{Values: map[string]float64{}, Histograms: map[string]Histogram{}}
	for _, s := range samples {
		switch s.Value.Kind() {
		case metrics.KindUint64:
			snap.Values[s.Name] = float64(s.Value.Uint64())
		case metrics.KindFloat64:
			snap.Values[s.Name] = s.Value.Float64()
		case metrics.KindFloat64Histogram:
			h := s.Value.Float64Histogram()
			b := make([]float64, len(h.Buckets))
			for i, v := range h.Buckets {
				b[i] = max(-math.MaxFloat64, min(math.MaxFloat64, v))
			}
			snap.Histograms[s.Name] = Histogram{Buckets: b, Counts: append([]uint64(nil), h.Counts...)}
		}
	}
	return snap
}

// Handler serves Read as JSON.
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(Read())
	})
}

// Fetch reads a Snapshot from base+Path (base: http://HOST:PORT).
func Fetch(ctx context.Context, base string) (Snapshot, error) {
	var snap Snapshot
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+Path, nil)
	if err != nil {
		return snap, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return snap, fmt.Errorf("rtmetrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return snap, fmt.Errorf("rtmetrics: GET %s: %s", Path, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&snap); err != nil {
		return snap, fmt.Errorf("rtmetrics: decode: %w", err)
	}
	return snap, nil
}

// Sub is what happened between before and s: scalar values and histogram
// counts subtracted (gauges such as heap sizes subtract too; read those
// from s itself).
func (s Snapshot) Sub(before Snapshot) Snapshot {
	d := Snapshot{Values: map[string]float64{}, Histograms: map[string]Histogram{}}
	for k, v := range s.Values {
		d.Values[k] = v - before.Values[k]
	}
	for k, h := range s.Histograms {
		b, ok := before.Histograms[k]
		counts := append([]uint64(nil), h.Counts...)
		if ok && len(b.Counts) == len(counts) {
			for i := range counts {
				counts[i] -= min(counts[i], b.Counts[i])
			}
		}
		d.Histograms[k] = Histogram{Buckets: h.Buckets, Counts: counts}
	}
	return d
}

// Quantile is the upper bound of the bucket holding the q-th sample
// (0 < q <= 1), in the histogram's unit; 0 with no samples.
func (h Histogram) Quantile(q float64) float64 {
	var total uint64
	for _, c := range h.Counts {
		total += c
	}
	if total == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(total)))
	var seen uint64
	for i, c := range h.Counts {
		seen += c
		if seen >= rank && c > 0 {
			return h.upper(i)
		}
	}
	return h.upper(len(h.Counts) - 1)
}

// Max is the upper bound of the highest bucket with a sample; 0 with none.
func (h Histogram) Max() float64 {
	for i := len(h.Counts) - 1; i >= 0; i-- {
		if h.Counts[i] > 0 {
			return h.upper(i)
		}
	}
	return 0
}

// upper is bucket i's upper bound, its lower bound when that is infinite.
func (h Histogram) upper(i int) float64 {
	if i+1 < len(h.Buckets) && h.Buckets[i+1] < math.MaxFloat64 {
		return h.Buckets[i+1]
	}
	return h.Buckets[i]
}

// GCPath is where GCHandler is mounted.
const GCPath = "/debug/gc"

// GCHandler answers POST by running a garbage collection to its end
// (runtime.GC) and 204, so that a heap figure read next (the bench's heap
// per idle socket) counts what is live, not the garbage of what came
// before; other methods get 405. It is for the private admin listener and
// the bench relay only: a collection costs the whole process CPU.
func GCHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "POST runs a garbage collection", http.StatusMethodNotAllowed)
			return
		}
		runtime.GC()
		w.WriteHeader(http.StatusNoContent)
	})
}
