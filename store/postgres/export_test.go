package postgres

// Queued returns how many steps wait for the group-commit writer, not yet
// taken into a batch (tests).
func (s *Store) Queued() int { return int(s.w.waiting.Load()) }
