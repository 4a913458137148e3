package postgres

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
