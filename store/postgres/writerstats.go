package postgres

import (
	"sync/atomic"
	"time"
)

// WriterStats is what the group-commit writer has done since the store
// opened, cumulative (take the difference of two readings for a period):
// how many batches committed and how full they were, how long steps
// queued before a batch took them, and how long a batch spent in each of
// its round trips. The admin listener's /readyz shows it as store_writer;
// `venue bench` reads it around each phase (BENCHMARKS.md).
type WriterStats struct {
	// Batches committed, the steps they held, and the steps run in a
	// transaction of their own (row locked elsewhere, a failed store.Tx,
	// or a batch that could not commit).
	Batches int64 `json:"batches"`
	Steps   int64 `json:"steps"`
	Alone   int64 `json:"alone"`
	// SizeCounts[i] is how many batches took at most SizeBuckets[i] steps
	// (and more than SizeBuckets[i-1]).
	SizeBuckets []int   `json:"size_buckets"`
	SizeCounts  []int64 `json:"size_counts"`
	// QueueSeconds is the total time steps waited between Update and the
	// batch taking them (gathering window and waiting for a free slot);
	// Taken is how many steps that covers.
	QueueSeconds float64 `json:"queue_seconds"`
	Taken        int64   `json:"taken"`
	// LockSeconds is the total time of the batches' connection acquiring
	// and BEGIN + SELECT ... FOR UPDATE round trips, StepSeconds of running their steps (decoding the
	// states, the room's rules, grant accounting), CommitSeconds of their
	// writes + COMMIT round trips (the WAL flush is in it).
	LockSeconds   float64 `json:"lock_seconds"`
	StepSeconds   float64 `json:"step_seconds"`
	CommitSeconds float64 `json:"commit_seconds"`
	// CommitCounts[i] is how many batches' writes + COMMIT took at most
	// CommitBucketsMs[i] milliseconds (and more than CommitBucketsMs[i-1]):
	// the commits' tail, which a frame's delivery waits on (a frame is
	// sent only after its commit; ARCHITECTURE.md, the store row).
	CommitBucketsMs []int   `json:"commit_ms_buckets"`
	CommitCounts    []int64 `json:"commit_counts"`
}

// sizeBuckets are the batch-size bounds of WriterStats (DefaultBatchMax
// and larger maxima fall in the last).
var sizeBuckets = []int{1, 2, 4, 8, 16, 32, 64, 128, 1 << 30}

// commitBucketsMs are the bounds, in milliseconds, of WriterStats'
// commit-time histogram (the last holds anything slower than a second).
var commitBucketsMs = []int{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 1 << 30}

// writerStats are the writer's counters.
type writerStats struct {
	queueNs, lockNs, stepNs, cm atomic.Int64
	sizes                       [9]atomic.Int64  // len(sizeBuckets)
	commits                     [11]atomic.Int64 // len(commitBucketsMs)
	aloneN, takenN              atomic.Int64
}

func (w *writerStats) took(queued time.Time, now time.Time) {
	w.takenN.Add(1)
	w.queueNs.Add(int64(now.Sub(queued)))
}

func (w *writerStats) batch(steps int, lock, step, commit time.Duration) {
	for i, b := range sizeBuckets {
		if steps <= b {
			w.sizes[i].Add(1)
			break
		}
	}
	for i, b := range commitBucketsMs {
		if commit <= time.Duration(b)*time.Millisecond {
			w.commits[i].Add(1)
			break
		}
	}
	w.lockNs.Add(int64(lock))
	w.stepNs.Add(int64(step))
	w.cm.Add(int64(commit))
}

// WriterStats returns the group-commit writer's counters (zero with group
// commit off).
func (s *Store) WriterStats() WriterStats {
	if s.w == nil {
		return WriterStats{}
	}
	st := &s.w.stats
	out := WriterStats{
		Batches: s.w.batches.Load(), Steps: s.w.steps.Load(), Alone: st.aloneN.Load(), Taken: st.takenN.Load(),
		SizeBuckets:     sizeBuckets,
		CommitBucketsMs: commitBucketsMs,
		QueueSeconds:    time.Duration(st.queueNs.Load()).Seconds(),
		LockSeconds:     time.Duration(st.lockNs.Load()).Seconds(),
		StepSeconds:     time.Duration(st.stepNs.Load()).Seconds(),
		CommitSeconds:   time.Duration(st.cm.Load()).Seconds(),
	}
	for i := range st.sizes {
		out.SizeCounts = append(out.SizeCounts, st.sizes[i].Load())
	}
	for i := range st.commits {
		out.CommitCounts = append(out.CommitCounts, st.commits[i].Load())
	}
	return out
}
