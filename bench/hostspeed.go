package bench

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"time"

	"github.com/prometheus/procfs"
)

// HostSpeed is how fast the machine itself ran while a bench ran: the time
// of one fixed CPU job (cpuJob) just before the run and just after it,
// with nothing else of the bench running, and the share of CPU time the
// hypervisor took (steal) in between. On a shared VM the same job has
// taken a third longer a few minutes later, and a run's latency figures
// moved with it (BENCHMARKS.md, "Issue 21, thirteenth pass"): runs whose
// jobs took different times do not compare.
type HostSpeed struct {
	// JobMsStart and JobMsEnd are the fixed job's time in ms, the fastest
	// of three tries, before and after the run.
	JobMsStart float64 `json:"cpu_job_ms_start"`
	JobMsEnd   float64 `json:"cpu_job_ms_end"`
	// StealFraction is steal time over all CPU time of the machine
	// between the two (/proc/stat); -1 where unknown.
	StealFraction float64 `json:"steal_fraction"`
}

// hostClock is a reading of the machine taken by startHost.
type hostClock struct {
	jobMs float64
	cpu   procfs.CPUStat
	ok    bool // cpu was read
}

// startHost times the fixed job and reads the machine's CPU counters.
func startHost() hostClock {
	h := hostClock{jobMs: cpuJobMs()}
	h.cpu, h.ok = cpuTotal()
	return h
}

// end times the fixed job again and returns the run's HostSpeed.
func (h hostClock) end() *HostSpeed {
	hs := &HostSpeed{JobMsStart: h.jobMs, StealFraction: -1}
	if now, ok := cpuTotal(); ok && h.ok {
		hs.StealFraction = stealFraction(h.cpu, now)
	}
	hs.JobMsEnd = cpuJobMs()
	return hs
}

// cpuTotal is the machine's CPU counters over all CPUs (/proc/stat), and
// whether they could be read.
func cpuTotal() (procfs.CPUStat, bool) {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return procfs.CPUStat{}, false
	}
	s, err := fs.Stat()
	if err != nil {
		return procfs.CPUStat{}, false
	}
	return s.CPUTotal, true
}

// stealFraction is the steal time between two readings of the machine's
// CPU counters over all the time they count (user, nice, system, idle,
// iowait, irq, softirq, steal); -1 if none passed.
func stealFraction(a, b procfs.CPUStat) float64 {
	sum := func(c procfs.CPUStat) float64 {
		return c.User + c.Nice + c.System + c.Idle + c.Iowait + c.IRQ + c.SoftIRQ + c.Steal
	}
	total := sum(b) - sum(a)
	if total <= 0 {
		return -1
	}
	return (b.Steal - a.Steal) / total
}

// cpuJobMs is the fastest of three runs of cpuJob, in ms.
func cpuJobMs() float64 {
	best := time.Duration(1<<63 - 1)
	var median int64
	for range 3 {
		t0 := time.Now()
		median = cpuJob()
		best = min(best, time.Since(t0))
	}
	runtime.KeepAlive(median)
	return float64(best) / float64(time.Millisecond)
}

// cpuJob is a fixed piece of single-threaded work, the same on every
// machine and run: sort 2^19 pseudo-random integers from a fixed seed
// (tens of ms; memory and branches, as a server's work is). It returns
// their median.
func cpuJob() int64 {
	r := rand.New(rand.NewPCG(21, 13))
	xs := make([]int64, 1<<19)
	for i := range xs {
		xs[i] = r.Int64()
	}
	slices.Sort(xs)
	return xs[len(xs)/2]
}

func (h *HostSpeed) String() string {
	if h == nil {
		return "host speed n/a"
	}
	s := fmt.Sprintf("host: a fixed CPU job took %.1f ms before the run, %.1f ms after (%+.0f %%)",
		h.JobMsStart, h.JobMsEnd, (h.JobMsEnd/h.JobMsStart-1)*100)
	if h.StealFraction >= 0 {
		s += fmt.Sprintf("; CPU steal over the run %.1f %%", h.StealFraction*100)
	}
	return s
}
