// Package bench is the load generator behind `venue bench`: it drives many
// concurrent negotiations through a venue and, in the same run, the same
// load through a bare WebSocket relay (the physical limit of the machine),
// and reports both side by side.
package bench

import (
	"fmt"
	"sort"
	"sync"
	"time"
)

// samples collects durations from many goroutines.
type samples struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *samples) add(d time.Duration) {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
}

// Dist is a latency distribution in milliseconds.
type Dist struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50_ms"`
	P95 float64 `json:"p95_ms"`
	P99 float64 `json:"p99_ms"`
	Max float64 `json:"max_ms"`
}

func (s *samples) dist() Dist {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.d) == 0 {
		return Dist{}
	}
	d := append([]time.Duration(nil), s.d...)
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	q := func(p float64) float64 {
		i := int(p * float64(len(d)-1))
		return float64(d[i]) / float64(time.Millisecond)
	}
	return Dist{N: len(d), P50: q(0.50), P95: q(0.95), P99: q(0.99), Max: float64(d[len(d)-1]) / float64(time.Millisecond)}
}

func (d Dist) String() string {
	if d.N == 0 {
		return "no samples"
	}
	return fmt.Sprintf("p50 %.2f ms  p95 %.2f ms  p99 %.2f ms  max %.1f ms  (n=%d)", d.P50, d.P95, d.P99, d.Max, d.N)
}
