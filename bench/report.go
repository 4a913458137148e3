package bench

import (
	"fmt"
	"io"
	"runtime"
)

// Report prints a venue run beside the relay run (nil: none) with ratios.
func Report(w io.Writer, backend string, v Result, r *Result) {
	fmt.Fprintf(w, "machine: %s/%s, %d CPUs, %s\n", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
	fmt.Fprintf(w, "venue backend: %s; %d negotiations, %d sockets\n\n", backend, v.Negotiations, v.Sockets)
	fmt.Fprintf(w, "%-8s %10s %10s %10s %10s %10s %10s\n", "", "target/s", "frames/s", "p50 ms", "p95 ms", "p99 ms", "delivered")
	row := func(name string, p Phase) {
		fmt.Fprintf(w, "%-8s %10.0f %10.0f %10.2f %10.2f %10.2f %6d/%d\n", name, p.RateTarget, p.FramesPerSecond, p.Delivery.P50, p.Delivery.P95, p.Delivery.P99, p.Delivered, p.Sent)
	}
	all := func(res Result) []Phase { return append([]Phase{res.Phase}, res.Sweep...) }
	vp := all(v)
	var rp []Phase
	if r != nil {
		rp = all(*r)
	}
	for i, p := range vp {
		row("venue", p)
		if i < len(rp) {
			row("relay", rp[i])
			if rp[i].Delivery.P50 > 0 && rp[i].Delivery.P99 > 0 {
				fmt.Fprintf(w, "%-8s %10s %10.2f %10.2f %10s %10.2f\n", "ratio", "", ratio(p.FramesPerSecond, rp[i].FramesPerSecond),
					ratio(p.Delivery.P50, rp[i].Delivery.P50), "", ratio(p.Delivery.P99, rp[i].Delivery.P99))
			}
		}
	}
	fmt.Fprintln(w)
	bySecond := func(name string, p Phase) {
		if len(p.BySecond) == 0 {
			return
		}
		fmt.Fprintf(w, "%s at %.0f/s, p99 ms by second sent:", name, p.RateTarget)
		for _, sd := range p.BySecond {
			fmt.Fprintf(w, " %.1f", sd.P99)
		}
		fmt.Fprintln(w)
	}
	for i, p := range vp {
		bySecond("venue", p)
		if i < len(rp) {
			bySecond("relay", rp[i])
		}
	}
	fmt.Fprintln(w)
	for i, p := range vp {
		if p.Server == nil {
			continue
		}
		fmt.Fprintf(w, "server at %.0f/s: venue %s\n", p.RateTarget, p.Server)
		if i < len(rp) && rp[i].Server != nil {
			fmt.Fprintf(w, "%*s relay %s\n", len(fmt.Sprintf("server at %.0f/s:", p.RateTarget)), "", rp[i].Server)
			if c := Compare(v, r); i < len(c) && c[i].CPUPerFrame > 0 {
				fmt.Fprintf(w, "%*s CPU per frame, venue/relay: %.2f\n", len(fmt.Sprintf("server at %.0f/s:", p.RateTarget)), "", c[i].CPUPerFrame)
			}
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "highest rate with p99 < 50 ms: venue %.0f", sustained(vp))
	if r != nil {
		fmt.Fprintf(w, ", relay %.0f", sustained(rp))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "heap per idle socket: venue %.1f KiB", v.HeapPerSocket/1024)
	if r != nil {
		fmt.Fprintf(w, ", relay %.1f KiB (ratio %.2f)", r.HeapPerSocket/1024, ratio(v.HeapPerSocket, r.HeapPerSocket))
	}
	fmt.Fprintln(w)
	if v.KeptPerFrame > 0 {
		fmt.Fprintf(w, "kept per frame (live heap after a collection, over the latency phases): venue %.0f B, %.0f B of it scanned by every GC cycle\n", v.KeptPerFrame, v.KeptScanPerFrame)
	}
	if v.ExpiryLateness.N > 0 {
		fmt.Fprintf(w, "proposal-expiry lateness (%s): %s\n", v.ExpiryPhase, v.ExpiryLateness)
		if v.ExpiryServer != nil {
			fmt.Fprintf(w, "server in the expiry phase: %s\n", v.ExpiryServer)
		}
	}
	fmt.Fprintf(w, "dropped connections: venue %d", v.Dropped)
	if r != nil {
		fmt.Fprintf(w, ", relay %d", r.Dropped)
	}
	fmt.Fprintf(w, "; error frames: %d\n", v.Errors)
}

// Ratio is the venue over the relay in one phase (0 where either is
// missing): delivered frames per second, delivery p50 and p99, and the
// server's CPU time per delivered frame.
type Ratio struct {
	RateTarget      float64 `json:"rate_target"`
	FramesPerSecond float64 `json:"frames_per_second"`
	P50             float64 `json:"p50"`
	P99             float64 `json:"p99"`
	CPUPerFrame     float64 `json:"cpu_per_frame"`
}

// Compare is the venue/relay ratios of each phase the two runs share
// (nil without a relay run).
func Compare(v Result, r *Result) []Ratio {
	if r == nil {
		return nil
	}
	vp, rp := append([]Phase{v.Phase}, v.Sweep...), append([]Phase{r.Phase}, r.Sweep...)
	var out []Ratio
	for i := 0; i < len(vp) && i < len(rp); i++ {
		c := Ratio{RateTarget: vp[i].RateTarget, FramesPerSecond: ratio(vp[i].FramesPerSecond, rp[i].FramesPerSecond),
			P50: ratio(vp[i].Delivery.P50, rp[i].Delivery.P50), P99: ratio(vp[i].Delivery.P99, rp[i].Delivery.P99)}
		if vs, rs := vp[i].Server, rp[i].Server; vs != nil && rs != nil && vs.CPUSeconds > 0 && rs.CPUSeconds > 0 {
			c.CPUPerFrame = ratio(vs.CPUMsPer1000, rs.CPUMsPer1000)
		}
		out = append(out, c)
	}
	return out
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// sustained is the highest target rate whose delivery p99 stayed under 50 ms
// and whose delivered rate kept up (at least 90% of the target).
func sustained(ps []Phase) float64 {
	best := 0.0
	for _, p := range ps {
		if p.Delivery.N > 0 && p.Delivery.P99 < 50 && p.FramesPerSecond >= 0.9*p.RateTarget && p.RateTarget > best {
			best = p.RateTarget
		}
	}
	return best
}
