package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"

	"github.com/prometheus/procfs"

	"github.com/venuehq/venue/internal/rtmetrics"
)

// Server is how the bench reads what a server process used: the CPU time
// the kernel accounted to it (user + system, /proc/PID/stat) and, when it
// serves them, its runtime/metrics (rtmetrics.Path on MetricsURL).
type Server struct {
	// PID of the server process; 0 when it is not a child of this machine
	// (then no CPU figure).
	PID int
	// MetricsURL serves rtmetrics.Path ("" for none).
	MetricsURL string
}

// reading is one sample of a server and of the load generator itself.
type reading struct {
	cpu, genCPU float64 // seconds
	rt          *rtmetrics.Snapshot
	writer      *writerCounters // the store's group-commit writer, if it has one
	load        float64         // 1-minute load average
}

// writerCounters are the store_writer member of the admin /readyz (a
// Postgres store's group-commit writer, cumulative; store/postgres
// WriterStats).
type writerCounters struct {
	Batches       int64   `json:"batches"`
	Steps         int64   `json:"steps"`
	Alone         int64   `json:"alone"`
	SizeBuckets   []int   `json:"size_buckets"`
	SizeCounts    []int64 `json:"size_counts"`
	QueueSeconds  float64 `json:"queue_seconds"`
	Taken         int64   `json:"taken"`
	LockSeconds   float64 `json:"lock_seconds"`
	StepSeconds   float64 `json:"step_seconds"`
	CommitSeconds float64 `json:"commit_seconds"`
	// Absent from a venue older than the commit-time histogram.
	CommitBucketsMs []int   `json:"commit_ms_buckets"`
	CommitCounts    []int64 `json:"commit_counts"`
}

// storeWriter reads store_writer from base/readyz (nil if absent).
func storeWriter(ctx context.Context, base string) *writerCounters {
	var body struct {
		Writer *writerCounters `json:"store_writer"`
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/readyz", nil)
	if err != nil {
		return nil
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	if json.NewDecoder(resp.Body).Decode(&body) != nil {
		return nil
	}
	return body.Writer
}

// WriterUsage is what a Postgres store's group-commit writer did during a
// phase: batches committed, their size (mean, and the upper bound of the
// size bucket holding the median and the 99th percentile batch), steps
// run alone, the mean time a step queued before a batch took it, and the
// mean time per batch of locking its rows (connection, BEGIN, SELECT ...
// FOR UPDATE), running its steps and writing + COMMIT; and the tail of
// writing + COMMIT: the upper bounds (ms) of the buckets holding the
// median, the 99th percentile and the slowest batch, and how many
// batches took over SlowCommitMs. A frame is delivered only after its
// batch commits, so these set a floor under the phase's delivery tail.
type WriterUsage struct {
	Batches          int64   `json:"batches"`
	StepsPerBatch    float64 `json:"steps_per_batch"`
	BatchSizeP50     int     `json:"batch_size_p50"`
	BatchSizeP99     int     `json:"batch_size_p99"`
	Alone            int64   `json:"alone"`
	QueueMsPerStep   float64 `json:"queue_ms_per_step"`
	LockMsPerBatch   float64 `json:"lock_ms_per_batch"`
	StepMsPerBatch   float64 `json:"step_ms_per_batch"`
	CommitMsPerBatch float64 `json:"commit_ms_per_batch"`
	CommitMsP50      int     `json:"commit_ms_p50,omitempty"`
	CommitMsP99      int     `json:"commit_ms_p99,omitempty"`
	CommitMsMax      int     `json:"commit_ms_max,omitempty"`
	SlowCommits      int64   `json:"commits_over_20ms"`
}

// SlowCommitMs is the commit time (writes + COMMIT of one batch, ms) past
// which WriterUsage counts a commit as slow: a phase at 2,500 frames/s
// met a 50 ms p99 when at most a handful of its commits took longer
// (BENCHMARKS.md, the thirteenth pass: "Where the Postgres tail at 2,500/s comes from here").
const SlowCommitMs = 20

// bucketQuantiles returns the upper bounds of the buckets holding the
// median and the 99th percentile of a histogram's counts between two
// cumulative readings a and b (bounds[i] is bucket i's upper bound); 0, 0
// when nothing was counted.
func bucketQuantiles(bounds []int, a, b []int64) (p50, p99 int) {
	var n, seen int64
	for i := range b {
		n += b[i] - a[i]
	}
	if n == 0 {
		return 0, 0
	}
	for i := range b {
		seen += b[i] - a[i]
		if p50 == 0 && float64(seen) >= 0.5*float64(n) {
			p50 = bounds[i]
		}
		if p99 == 0 && float64(seen) >= 0.99*float64(n) {
			p99 = bounds[i]
		}
	}
	return p50, p99
}

func writerUsage(a, b *writerCounters) *WriterUsage {
	if a == nil || b == nil || len(a.SizeCounts) != len(b.SizeCounts) || len(b.SizeBuckets) != len(b.SizeCounts) {
		return nil
	}
	u := &WriterUsage{Batches: b.Batches - a.Batches, Alone: b.Alone - a.Alone}
	if u.Batches > 0 {
		n := float64(u.Batches)
		u.StepsPerBatch = float64(b.Steps-a.Steps) / n
		u.LockMsPerBatch = (b.LockSeconds - a.LockSeconds) * 1e3 / n
		u.StepMsPerBatch = (b.StepSeconds - a.StepSeconds) * 1e3 / n
		u.CommitMsPerBatch = (b.CommitSeconds - a.CommitSeconds) * 1e3 / n
		u.BatchSizeP50, u.BatchSizeP99 = bucketQuantiles(b.SizeBuckets, a.SizeCounts, b.SizeCounts)
		if len(b.CommitBucketsMs) == len(b.CommitCounts) && len(a.CommitCounts) == len(b.CommitCounts) && len(b.CommitCounts) > 0 {
			u.CommitMsP50, u.CommitMsP99 = bucketQuantiles(b.CommitBucketsMs, a.CommitCounts, b.CommitCounts)
			for i := range b.CommitCounts {
				n := b.CommitCounts[i] - a.CommitCounts[i]
				if n > 0 {
					u.CommitMsMax = b.CommitBucketsMs[i]
				}
				if i > 0 && b.CommitBucketsMs[i-1] >= SlowCommitMs { // bucket i holds commits over its lower bound
					u.SlowCommits += n
				}
			}
		}
	}
	if taken := b.Taken - a.Taken; taken > 0 {
		u.QueueMsPerStep = (b.QueueSeconds - a.QueueSeconds) * 1e3 / float64(taken)
	}
	return u
}

func (s *Server) read(ctx context.Context) reading {
	var r reading
	if s != nil && s.PID > 0 {
		r.cpu = procCPU(s.PID)
	}
	r.genCPU = procCPU(os.Getpid())
	if s != nil && s.MetricsURL != "" {
		if snap, err := rtmetrics.Fetch(ctx, s.MetricsURL); err == nil {
			r.rt = &snap
		}
		r.writer = storeWriter(ctx, s.MetricsURL)
	}
	r.load = loadAverage()
	return r
}

// procCPU is the user + system CPU seconds of process pid, -1 if unknown.
func procCPU(pid int) float64 {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return -1
	}
	st, err := p.Stat()
	if err != nil {
		return -1
	}
	return st.CPUTime()
}

// loadAverage is the machine's 1-minute load average, -1 if unknown.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return -1
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	return v
}

// Usage is what the server and the load generator used during one phase.
// CPU figures are from the kernel's accounting of each process (user +
// system), so other work on the machine does not inflate them the way it
// inflates latency; per-frame figures divide by the frames delivered to
// the other party in the phase.
type Usage struct {
	// CPUSeconds is the server's user + system CPU time over the phase.
	CPUSeconds float64 `json:"cpu_seconds"`
	// CPUMsPer1000 is CPUSeconds per 1,000 delivered frames, in ms.
	CPUMsPer1000 float64 `json:"cpu_ms_per_1000_frames"`
	// GeneratorCPUSeconds is the load generator's (this process's) CPU
	// time over the phase: what it took from the same cores.
	GeneratorCPUSeconds float64 `json:"generator_cpu_seconds"`
	// From runtime/metrics of the server (absent without them):
	// AllocsPerFrame and AllocBytesPerFrame are heap allocations per
	// delivered frame; GCCycles the collections completed in the phase,
	// GCCPUSeconds the CPU they took; SchedLatency the time goroutines
	// waited runnable before they ran (p50, p99, max, in ms, bucketed by
	// the runtime); GCPauseMaxMs the longest stop-the-world pause of a GC.
	AllocsPerFrame     float64 `json:"allocs_per_frame,omitempty"`
	AllocBytesPerFrame float64 `json:"alloc_bytes_per_frame,omitempty"`
	GCCycles           float64 `json:"gc_cycles"`
	GCCPUSeconds       float64 `json:"gc_cpu_seconds"`
	SchedLatencyP50Ms  float64 `json:"sched_latency_p50_ms"`
	SchedLatencyP99Ms  float64 `json:"sched_latency_p99_ms"`
	SchedLatencyMaxMs  float64 `json:"sched_latency_max_ms"`
	GCPauseMaxMs       float64 `json:"gc_pause_max_ms"`
	// GCAssistCPUSeconds is the part of GCCPUSeconds the allocating
	// goroutines did themselves (mark assists: work taken on the frame's
	// own path). HeapLiveBytes and ScanStackBytes are the live heap and
	// the goroutine stacks the last GC before the phase ended marked and
	// scanned: what sets how long a cycle's mark phase runs.
	GCAssistCPUSeconds float64 `json:"gc_assist_cpu_seconds"`
	HeapLiveBytes      float64 `json:"heap_live_bytes,omitempty"`
	ScanStackBytes     float64 `json:"scan_stack_bytes,omitempty"`
	// LoadStart and LoadEnd are the machine's 1-minute load average when
	// the phase began and ended.
	LoadStart float64 `json:"load_average_start"`
	LoadEnd   float64 `json:"load_average_end"`
	// Writer is the store's group-commit writer (Postgres only).
	Writer *WriterUsage `json:"store_writer,omitempty"`
}

// usage is what happened between a and b for delivered frames.
func usage(a, b reading, delivered int64) *Usage {
	u := &Usage{LoadStart: a.load, LoadEnd: b.load, CPUSeconds: -1}
	if a.cpu >= 0 && b.cpu >= 0 && (a.cpu > 0 || b.cpu > 0) {
		u.CPUSeconds = b.cpu - a.cpu
		if delivered > 0 {
			u.CPUMsPer1000 = u.CPUSeconds * 1000 / float64(delivered) * 1000
		}
	}
	u.GeneratorCPUSeconds = b.genCPU - a.genCPU
	u.Writer = writerUsage(a.writer, b.writer)
	if a.rt != nil && b.rt != nil {
		d := b.rt.Sub(*a.rt)
		if delivered > 0 {
			u.AllocsPerFrame = d.Values[rtmetrics.AllocObjects] / float64(delivered)
			u.AllocBytesPerFrame = d.Values[rtmetrics.AllocBytes] / float64(delivered)
		}
		u.GCCycles = d.Values[rtmetrics.GCCycles]
		u.GCCPUSeconds = d.Values[rtmetrics.GCCPU]
		u.GCAssistCPUSeconds = d.Values[rtmetrics.GCAssistCPU]
		u.HeapLiveBytes = b.rt.Values[rtmetrics.HeapLive]
		u.ScanStackBytes = b.rt.Values[rtmetrics.ScanStack]
		s := d.Histograms[rtmetrics.SchedLatency]
		u.SchedLatencyP50Ms, u.SchedLatencyP99Ms, u.SchedLatencyMaxMs = s.Quantile(0.5)*1e3, s.Quantile(0.99)*1e3, s.Max()*1e3
		u.GCPauseMaxMs = d.Histograms[rtmetrics.GCPauses].Max() * 1e3
	}
	return u
}

func (u *Usage) String() string {
	if u == nil {
		return "no figures"
	}
	cpu := "cpu n/a"
	if u.CPUSeconds >= 0 && u.CPUMsPer1000 > 0 {
		cpu = fmt.Sprintf("cpu %.2f s = %.1f ms per 1,000 frames", u.CPUSeconds, u.CPUMsPer1000)
	} else if u.CPUSeconds >= 0 {
		cpu = fmt.Sprintf("cpu %.2f s", u.CPUSeconds)
	}
	s := fmt.Sprintf("%s (generator %.2f s, load %.1f->%.1f)", cpu, u.GeneratorCPUSeconds, u.LoadStart, u.LoadEnd)
	if u.AllocsPerFrame > 0 {
		s += fmt.Sprintf("; %.0f allocs (%.0f B) per frame; %.0f GCs (%.2f s CPU, %.2f s of it assists, max pause %.2f ms; live heap %.1f MB, stacks %.1f MB); runnable wait p50 %.3f / p99 %.2f / max %.1f ms",
			u.AllocsPerFrame, u.AllocBytesPerFrame, u.GCCycles, u.GCCPUSeconds, u.GCAssistCPUSeconds, u.GCPauseMaxMs,
			u.HeapLiveBytes/1e6, u.ScanStackBytes/1e6, u.SchedLatencyP50Ms, u.SchedLatencyP99Ms, u.SchedLatencyMaxMs)
	}
	if w := u.Writer; w != nil && w.Batches > 0 {
		s += fmt.Sprintf("; store writer: %d batches of %.1f steps (p50 <= %d, p99 <= %d), %d alone, queued %.2f ms a step, per batch lock %.2f / steps %.2f / write+COMMIT %.2f ms",
			w.Batches, w.StepsPerBatch, w.BatchSizeP50, w.BatchSizeP99, w.Alone, w.QueueMsPerStep, w.LockMsPerBatch, w.StepMsPerBatch, w.CommitMsPerBatch)
		if w.CommitMsP99 > 0 {
			s += fmt.Sprintf(" (p50 <= %d, p99 <= %d, slowest <= %d ms, %d over %d ms)", w.CommitMsP50, w.CommitMsP99, w.CommitMsMax, w.SlowCommits, SlowCommitMs)
		}
	}
	return s
}
