package promreg

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func counter() prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: "x_total", Help: "x"})
}

// TestRegister: two registries count apart; a second collector on one
// registry joins the first; nil registers nothing; a clash panics.
func TestRegister(t *testing.T) {
	r1, r2 := prometheus.NewRegistry(), prometheus.NewRegistry()
	a, b := Register(r1, counter()), Register(r2, counter())
	a.Inc()
	if testutil.ToFloat64(b) != 0 {
		t.Error("two registries share a counter")
	}
	a2 := Register(r1, counter())
	a2.Inc()
	if testutil.ToFloat64(a) != 2 {
		t.Errorf("second collector on one registry counts apart: %v", testutil.ToFloat64(a))
	}
	Register[prometheus.Counter](nil, counter()).Inc()
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(error).Error(), "x_total") {
			t.Errorf("clash: %v", r)
		}
	}()
	Register(r1, prometheus.NewGauge(prometheus.GaugeOpts{Name: "x_total", Help: "other"}))
}

func TestNewRegistryHasRuntime(t *testing.T) {
	mfs, err := NewRegistry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var goRoutines, process bool
	for _, mf := range mfs {
		goRoutines = goRoutines || mf.GetName() == "go_goroutines"
		process = process || strings.HasPrefix(mf.GetName(), "process_")
	}
	if !goRoutines || !process {
		t.Errorf("go collector %v, process collector %v", goRoutines, process)
	}
}
