package postgres

import "fmt"

// Queued returns how many steps wait for the group-commit writer, not yet
// taken into a batch (tests).
func (s *Store) Queued() int { return int(s.w.waiting.Load()) }

// ResolveXID is resolve for tests: "committed", "aborted" or "unknown".
func (s *Store) ResolveXID(xid string) string {
	switch o, _ := s.resolve(xid); o {
	case outcomeCommitted:
		return "committed"
	case outcomeAborted:
		return "aborted"
	}
	return "unknown"
}

// DefaultBatchesFor is defaultBatches for tests.
var DefaultBatchesFor = defaultBatches

// PlannerSettings returns plan_cache_mode and enable_seqscan as the
// statements of tx's transaction (a step's store.Tx, in a batch or alone)
// are planned with (tests).
func PlannerSettings(tx any) (cacheMode, seqScan string, err error) {
	var t *pgTx
	switch v := tx.(type) {
	case *spTx:
		t = &v.pgTx
	case *pgTx:
		t = v
	default:
		return "", "", fmt.Errorf("PlannerSettings: a %T is not a step's store.Tx", tx)
	}
	err = t.q.QueryRow(t.ctx, `SELECT current_setting('plan_cache_mode'), current_setting('enable_seqscan')`).Scan(&cacheMode, &seqScan)
	return cacheMode, seqScan, err
}
