package bench

import (
	"strings"
	"testing"

	"github.com/prometheus/procfs"
)

// TestStealFraction: steal over all the time the counters moved, -1 when
// none did.
func TestStealFraction(t *testing.T) {
	a := procfs.CPUStat{User: 100, System: 50, Idle: 800, Steal: 10}
	b := procfs.CPUStat{User: 150, System: 70, Idle: 900, Iowait: 10, SoftIRQ: 5, Steal: 25}
	// moved: 50 + 20 + 100 + 10 + 5 + 15 = 200, of it 15 steal
	if got := stealFraction(a, b); got != 0.075 {
		t.Fatalf("steal fraction %v, want 0.075", got)
	}
	if got := stealFraction(a, a); got != -1 {
		t.Fatalf("steal fraction with no time passed %v, want -1", got)
	}
}

// TestHostSpeed: the fixed job is timed before and after, and the report
// line says how much slower the machine ran it at the end.
func TestHostSpeed(t *testing.T) {
	if a, b := cpuJob(), cpuJob(); a != b {
		t.Fatalf("the fixed job differs between runs: median %d, then %d", a, b)
	}
	h := startHost().end()
	if h.JobMsStart <= 0 || h.JobMsEnd <= 0 {
		t.Fatalf("job times %+v", h)
	}
	got := (&HostSpeed{JobMsStart: 40, JobMsEnd: 50, StealFraction: 0.021}).String()
	want := "host: a fixed CPU job took 40.0 ms before the run, 50.0 ms after (+25 %); CPU steal over the run 2.1 %"
	if got != want {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	if s := (&HostSpeed{JobMsStart: 40, JobMsEnd: 40, StealFraction: -1}).String(); strings.Contains(s, "steal") {
		t.Fatalf("unknown steal reported: %q", s)
	}
}
