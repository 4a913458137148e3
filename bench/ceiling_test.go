package bench

import "testing"

// TestCeilingRate: the ceiling phase runs at 1.25x the loop, rounded up
// to 500, only when every asked rate is below that.
func TestCeilingRate(t *testing.T) {
	for _, c := range []struct {
		asked []float64
		loop  float64
		want  float64
		ok    bool
	}{
		{[]float64{2500, 5000, 8000}, 9131, 11500, true}, // 11,413.75 rounds up
		{[]float64{2500, 5000, 8000}, 4000, 0, false},    // 8,000 >= 5,000: the asked rates reach past the loop
		{[]float64{2500, 5000, 8000}, 6400, 0, false},    // exactly 1.25x is asked already
		{[]float64{2500}, 6401, 8500, true},
		{[]float64{2500}, 0, 0, false}, // no loop figure
	} {
		got, ok := ceilingRate(c.asked, c.loop)
		if got != c.want || ok != c.ok {
			t.Errorf("ceilingRate(%v, %v) = %v, %v; want %v, %v", c.asked, c.loop, got, ok, c.want, c.ok)
		}
	}
}

// TestBestOf: the best is the highest delivered rate of any phase, over
// the loop's.
func TestBestOf(t *testing.T) {
	v := Result{Phase: Phase{FramesPerSecond: 2499}, Sweep: []Phase{{FramesPerSecond: 7980}, {FramesPerSecond: 9600}, {FramesPerSecond: 9400}}}
	pb := bestOf(v, PGLoop{PerSecond: 8000}, 11500)
	if pb.FramesPerSecond != 9600 || pb.OfLoop != 1.2 || pb.CeilingRate != 11500 {
		t.Fatalf("bestOf = %+v", pb)
	}
	if pb := bestOf(v, PGLoop{}, 0); pb.OfLoop != 0 {
		t.Fatalf("bestOf without a loop figure = %+v", pb)
	}
}
