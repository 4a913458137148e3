package bench

import (
	"testing"
	"time"
)

// Delivery by second: each frame counts in the second it was sent in after
// the phase's start (one sent before it in second 0); a second with no
// frame is left out.
func TestBySecond(t *testing.T) {
	start := time.Unix(1000, 0)
	var s samples
	at := func(d time.Duration) int64 { return start.Add(d).UnixNano() }
	s.addSent(at(-time.Millisecond), 7*time.Millisecond)
	s.addSent(at(100*time.Millisecond), 1*time.Millisecond)
	s.addSent(at(900*time.Millisecond), 3*time.Millisecond)
	s.addSent(at(1200*time.Millisecond), 2*time.Millisecond)
	s.addSent(at(3900*time.Millisecond), 40*time.Millisecond)
	got := s.bySecond(start)
	want := []struct {
		sec, n   int
		p50, max float64
	}{{0, 3, 3, 7}, {1, 1, 2, 2}, {3, 1, 40, 40}}
	if len(got) != len(want) {
		t.Fatalf("got %d seconds %+v, want %d", len(got), got, len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Second != w.sec || g.N != w.n || g.P50 != w.p50 || g.Max != w.max {
			t.Errorf("second %d: got %+v, want second %d n %d p50 %v max %v", i, g, w.sec, w.n, w.p50, w.max)
		}
	}
	// The whole phase's distribution is unchanged by it.
	if d := s.dist(); d.N != 5 || d.Max != 40 {
		t.Errorf("dist %+v: want n 5, max 40", d)
	}
	s.reset()
	if got := s.bySecond(start); got != nil {
		t.Errorf("after reset: %+v, want none", got)
	}
}
