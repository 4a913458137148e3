package bench

import "testing"

// TestWriterUsage: a phase's writer figures are the difference of two
// cumulative readings, the size and commit-time quantiles come from the
// phase's own batches, and a commit counts as slow only past
// SlowCommitMs.
func TestWriterUsage(t *testing.T) {
	bounds := []int{1, 2, 5, 10, 20, 50, 100, 1 << 30}
	a := &writerCounters{
		Batches: 100, Steps: 1000, SizeBuckets: []int{1, 8, 128}, SizeCounts: []int64{50, 50, 0},
		CommitSeconds: 1, CommitBucketsMs: bounds, CommitCounts: []int64{100, 0, 0, 0, 0, 0, 0, 0},
	}
	b := &writerCounters{
		Batches: 200, Steps: 3000, SizeBuckets: []int{1, 8, 128}, SizeCounts: []int64{50, 100, 50},
		CommitSeconds: 2, CommitBucketsMs: bounds,
		// the phase: 60 commits within 2 ms, 37 within 20 ms (exactly 20
		// is not slow), 2 within 50 ms and 1 past 100 ms
		CommitCounts: []int64{100, 60, 0, 0, 37, 2, 0, 1},
	}
	u := writerUsage(a, b)
	if u == nil {
		t.Fatal("no usage")
	}
	if u.Batches != 100 || u.StepsPerBatch != 20 || u.CommitMsPerBatch != 10 {
		t.Errorf("batches %d of %.1f steps, %.1f ms committing each; want 100 of 20, 10 ms", u.Batches, u.StepsPerBatch, u.CommitMsPerBatch)
	}
	if u.BatchSizeP50 != 8 || u.BatchSizeP99 != 128 {
		t.Errorf("batch size p50 <= %d, p99 <= %d; want 8 and 128", u.BatchSizeP50, u.BatchSizeP99)
	}
	if u.CommitMsP50 != 2 || u.CommitMsP99 != 50 || u.CommitMsMax != 1<<30 || u.SlowCommits != 3 {
		t.Errorf("commit p50 <= %d, p99 <= %d, max <= %d ms, %d slow; want 2, 50, 1<<30, 3", u.CommitMsP50, u.CommitMsP99, u.CommitMsMax, u.SlowCommits)
	}

	// A venue without the histogram: the rest is still read.
	a.CommitBucketsMs, a.CommitCounts, b.CommitBucketsMs, b.CommitCounts = nil, nil, nil, nil
	if u := writerUsage(a, b); u == nil || u.Batches != 100 || u.CommitMsP99 != 0 || u.SlowCommits != 0 {
		t.Errorf("without the histogram: %+v", u)
	}
}
