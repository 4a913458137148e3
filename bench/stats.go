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
	// sent is, for samples taken with addSent, each one's send time (unix
	// ns), parallel to d.
	sent []int64
}

func (s *samples) add(d time.Duration) {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
}

// addSent adds a frame's delivery latency d with its send time (unix ns).
func (s *samples) addSent(sentNs int64, d time.Duration) {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.sent = append(s.sent, sentNs)
	s.mu.Unlock()
}

// reset drops every sample.
func (s *samples) reset() {
	s.mu.Lock()
	s.d, s.sent = s.d[:0], s.sent[:0]
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
	return distOf(append([]time.Duration(nil), s.d...))
}

// SecondDist is the latency distribution of the frames sent in one second
// of a phase: Second 0 is the phase's first.
type SecondDist struct {
	Second int `json:"second"`
	Dist
}

// bySecond is the distribution of the samples taken with addSent, by the
// whole second of their send time after start (frames sent before start
// count in second 0); nil with none.
func (s *samples) bySecond(start time.Time) []SecondDist {
	s.mu.Lock()
	var buckets [][]time.Duration
	for i, ns := range s.sent {
		sec := max(0, int((ns-start.UnixNano())/int64(time.Second)))
		for len(buckets) <= sec {
			buckets = append(buckets, nil)
		}
		buckets[sec] = append(buckets[sec], s.d[i])
	}
	s.mu.Unlock()
	var out []SecondDist
	for sec, d := range buckets {
		if len(d) > 0 {
			out = append(out, SecondDist{Second: sec, Dist: distOf(d)})
		}
	}
	return out
}

// distOf is the distribution of d, which it sorts.
func distOf(d []time.Duration) Dist {
	if len(d) == 0 {
		return Dist{}
	}
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
