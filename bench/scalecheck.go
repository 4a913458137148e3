package bench

// The end-of-run check of a scale worker (BENCHMARKS.md "Scale out: three
// nodes, and a reconnect storm", its table of what the check counts):
// every party socket's stream against
// the stored transcript (GET /v1/negotiations/{id}/transcript), so that a
// frame the venue lost or acknowledged wrongly is told apart from a socket
// the load generator could not bring back.

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// storedEntry is what the check needs of one stored transcript entry: its
// frame type and, for a negotiation_message of the bench, the id its
// content names ("scale <id> …").
type storedEntry struct {
	typ, id string
}

// fetchTranscript reads negotiation id's stored transcript from the first
// of nodes (tried in turn from start) that answers; entry i is seq i+1.
func fetchTranscript(ctx context.Context, nodes []string, start int, id string) ([]storedEntry, error) {
	var last error
	for k := range nodes {
		base := nodes[(start+k)%len(nodes)]
		var out struct {
			Entries []struct {
				Seq   int64 `json:"seq"`
				Frame struct {
					Type    string `json:"type"`
					Content string `json:"content"`
				} `json:"frame"`
			} `json:"entries"`
		}
		cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		err := call1(cctx, http.MethodGet, base+"/v1/negotiations/"+id+"/transcript", "", nil, &out)
		cancel()
		if err != nil {
			last = err
			continue
		}
		entries := make([]storedEntry, len(out.Entries))
		for i, e := range out.Entries {
			if e.Seq != int64(i+1) {
				return nil, fmt.Errorf("stored transcript of %s: entry %d has seq %d", id, i+1, e.Seq)
			}
			entries[i].typ = e.Frame.Type
			if f := strings.Fields(e.Frame.Content); len(f) > 1 && f[0] == "scale" {
				entries[i].id = f[1]
			}
		}
		return entries, nil
	}
	return nil, last
}

// checkCounts are what the check found, summed over a worker's
// negotiations.
type checkCounts struct {
	// Gaps: stored seqs a party socket that was live at the end never saw;
	// Unresumed: the same on a socket the generator gave up bringing back
	// (a failed resume, counted by the resume check, not a venue loss).
	Gaps, Unresumed int64
	// Lost: a seq acked to its sender that the store does not hold with
	// the sender's id; Phantom: a seq a socket saw that the store does not
	// hold; DoubleCommits: a message id stored at two seqs.
	Lost, Phantom, DoubleCommits int64
	Entries                      int64
	Samples                      []string
	Unchecked                    int // negotiations whose transcript could not be read
}

func (c *checkCounts) sample(format string, args ...any) {
	if len(c.Samples) < 20 {
		c.Samples = append(c.Samples, fmt.Sprintf(format, args...))
	}
}

// check compares n's two sockets and its acks with stored.
func (c *checkCounts) check(n *scaleNeg, stored []storedEntry) {
	last := int64(len(stored))
	where := map[string]int64{}
	for i, e := range stored {
		if e.id == "" {
			continue
		}
		if prev, ok := where[e.id]; ok {
			c.DoubleCommits++
			c.sample("%s: message %s stored at seq %d and %d", n.id, e.id, prev, i+1)
		}
		where[e.id] = int64(i + 1)
	}
	for seq, id := range n.acked {
		if seq > last || stored[seq-1].id != id {
			c.Lost++
			got := "nothing"
			if seq <= last {
				got = fmt.Sprintf("%s %q", stored[seq-1].typ, stored[seq-1].id)
			}
			c.sample("%s: %s acked at seq %d, the store has %s there", n.id, id, seq, got)
		}
	}
	for _, s := range n.sides {
		s.mu.Lock()
		for seq := int64(1); seq <= last; seq++ {
			c.Entries++
			if seq < int64(len(s.seen)) && s.seen[seq] != 0 {
				continue
			}
			if s.dead.Load() {
				c.Unresumed++
				continue
			}
			c.Gaps++
			c.sample("%s side %d (node %d, %d drops, saw up to %d, ended seen %v): seq %d of %d (%s) never reached it",
				n.id, s.who, s.node+1, s.drops, int64(len(s.seen))-1, s.endedSeen, seq, last, stored[seq-1].typ)
		}
		if top := int64(len(s.seen)) - 1; top > last {
			c.Phantom += top - last
			c.sample("%s side %d saw seq %d, the store ends at %d", n.id, s.who, top, last)
		}
		s.mu.Unlock()
	}
}

// caughtUp reports whether every socket of n that is still trying saw
// every seq up to last, and none saw more (a clock may have added an
// entry since the store was read).
func caughtUp(n *scaleNeg, last int64) bool {
	for _, s := range n.sides {
		if !s.dead.Load() && s.contiguous() < last {
			return false
		}
		s.mu.Lock()
		beyond := int64(len(s.seen))-1 > last
		s.mu.Unlock()
		if beyond {
			return false
		}
	}
	return true
}

// verify reads every negotiation's stored transcript (16 at a time), gives
// the sockets up to 15 s to see all of it, reads again those that still
// differ (a clock may have ended one meanwhile) and counts what differs.
func (r *scaleRun) verify(ctx context.Context, negs []*scaleNeg) checkCounts {
	stored := make([][]storedEntry, len(negs))
	read := func(idx []int) {
		_ = parallel(ctx, len(idx), 16, func(k int) error {
			i := idx[k]
			e, err := fetchTranscript(ctx, r.w.Nodes, negs[i].g+2, negs[i].id)
			if err == nil {
				stored[i] = e
			}
			return nil
		})
	}
	all := make([]int, len(negs))
	for i := range all {
		all[i] = i
	}
	read(all)
	behind := func() []int {
		var b []int
		for i, n := range negs {
			if stored[i] == nil || !caughtUp(n, int64(len(stored[i]))) {
				b = append(b, i)
			}
		}
		return b
	}
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline) && len(behind()) > 0; {
		time.Sleep(200 * time.Millisecond)
	}
	if b := behind(); len(b) > 0 {
		read(b)
	}
	var c checkCounts
	for i, n := range negs {
		if stored[i] == nil {
			c.Unchecked++
			c.sample("%s: its stored transcript could not be read", n.id)
			continue
		}
		c.check(n, stored[i])
	}
	return c
}

// ackBounds are the upper bounds (ms) of the ack-latency buckets a worker
// reports; the last bucket is everything above.
var ackBounds = []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 30000}

// ackBucket is the bucket of a latency d.
func ackBucket(d time.Duration) int {
	ms := float64(d) / float64(time.Millisecond)
	for i, b := range ackBounds {
		if ms <= b {
			return i
		}
	}
	return len(ackBounds)
}

// AckLatency is the time from sending a frame to its message_ack, from
// bucket counts (the figures are bucket upper bounds in ms; -1: above the
// last).
type AckLatency struct {
	N      int64   `json:"n"`
	P50    float64 `json:"p50_ms_at_most"`
	P99    float64 `json:"p99_ms_at_most"`
	Counts []int64 `json:"counts,omitempty"`
}

// ackLatency sums bucket counts and reads the quantiles.
func ackLatency(counts []int64) AckLatency {
	var a AckLatency
	for _, c := range counts {
		a.N += c
	}
	q := func(p float64) float64 {
		var seen int64
		for i, c := range counts {
			seen += c
			if float64(seen) >= p*float64(a.N) {
				if i < len(ackBounds) {
					return ackBounds[i]
				}
				return -1
			}
		}
		return 0
	}
	if a.N > 0 {
		a.P50, a.P99 = q(0.5), q(0.99)
	}
	a.Counts = counts
	return a
}
