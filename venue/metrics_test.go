package venue

import (
	"log/slog"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestMetricsPerNode: two nodes in one process count on registries of
// their own (no package globals on the default registry), and each
// registry carries the hub's series and the Go runtime's beside the
// venue's.
func TestMetricsPerNode(t *testing.T) {
	t.Parallel()
	a, err := New(Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	a.metrics.framesIn.WithLabelValues("message").Inc()
	a.metrics.framesIn.WithLabelValues("message").Inc()
	if got := testutil.ToFloat64(b.metrics.framesIn.WithLabelValues("message")); got != 0 {
		t.Fatalf("node b counted node a's frames: %v", got)
	}
	if got := testutil.ToFloat64(a.metrics.framesIn.WithLabelValues("message")); got != 2 {
		t.Fatalf("node a counted %v frames, want 2", got)
	}
	mfs, err := a.cfg.Metrics.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
	}
	for _, want := range []string{"venue_frames_in_total", "venue_outcome_unknown_total", "venue_store_update_seconds", "go_goroutines", "process_cpu_seconds_total"} {
		if !names[want] {
			t.Errorf("admin registry lacks %s", want)
		}
	}
}
