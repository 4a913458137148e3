package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/venuehq/venue/store"
)

// The truth about a lost COMMIT answer (PROTOCOL.md "Errors",
// `outcome_unknown`). A step's transaction learns its own transaction id in
// the round trip that locks its rows (pg_current_xact_id; SELECT ... FOR
// UPDATE assigns one anyway). When the connection fails after the writes
// and COMMIT were sent, the store asks the database, on another
// connection, what became of that transaction (pg_xact_status): committed
// (the step landed: its result is returned as if the answer had come),
// aborted (nothing landed: an error wrapping store.ErrUnavailable, the
// caller may retry), in progress (asked again). Only when the database
// cannot be asked within the resolve bound is the caller told
// store.ErrOutcomeUnknown.

// DefaultResolveWindow bounds how long a step whose COMMIT answer was lost
// keeps asking the database for its outcome (see WithResolveWindow).
const DefaultResolveWindow = 5 * time.Second

// WithResolveWindow bounds how long the store keeps asking the database
// whether a commit whose answer was lost landed, before it gives up with
// store.ErrOutcomeUnknown (zero: DefaultResolveWindow).
func WithResolveWindow(d time.Duration) Option { return func(o *options) { o.resolve = d } }

// outcome is what became of a transaction whose COMMIT answer was lost.
type outcome int

const (
	outcomeUnknown outcome = iota
	outcomeCommitted
	outcomeAborted
)

// notLandedError is a step whose commit answer was lost and whose
// transaction the database reports aborted: nothing changed, retry.
type notLandedError struct{ err error }

func (e *notLandedError) Error() string {
	return e.err.Error() + "; the transaction did not commit, nothing was changed"
}
func (e *notLandedError) Unwrap() []error { return []error{store.ErrUnavailable, e.err} }

// unknownError is a step whose outcome could not be learned.
type unknownError struct{ err, last error }

func (e *unknownError) Error() string {
	msg := e.err.Error() + ": " + store.ErrOutcomeUnknown.Error()
	if e.last != nil {
		msg += " (last: " + e.last.Error() + ")"
	}
	return msg
}
func (e *unknownError) Unwrap() []error { return []error{store.ErrOutcomeUnknown, e.err} }

// resolve asks the database, within the resolve window, what became of
// transaction xid. It never uses the connection that failed. xid "" (the
// lock round trip's answer never came) is unknown at once.
func (s *Store) resolve(xid string) (outcome, error) {
	if xid == "" {
		return outcomeUnknown, errors.New("the transaction id was never learned")
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.resolveWindow)
	defer cancel()
	var last error
	for attempt := 0; ; attempt++ {
		var status *string
		qctx, qcancel := context.WithTimeout(ctx, time.Second)
		err := s.pool.QueryRow(qctx, `SELECT pg_xact_status($1::xid8)`, xid).Scan(&status)
		qcancel()
		switch {
		case err != nil:
			last = err
		case status == nil:
			// Too old to know (never, seconds after the commit) or from
			// another database cluster (Postgres was replaced).
			return outcomeUnknown, fmt.Errorf("transaction %s: the database does not know it", xid)
		case *status == "committed":
			return outcomeCommitted, nil
		case *status == "aborted":
			return outcomeAborted, nil
		default: // "in progress": the COMMIT is still being written
			last = fmt.Errorf("transaction %s still in progress", xid)
		}
		d := min(time.Duration(1<<min(attempt, 6))*10*time.Millisecond, 500*time.Millisecond)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return outcomeUnknown, last
		case <-t.C:
		}
	}
}

// resolved turns a commit failure into the step's truth: nil when it
// landed, else the error to return (notLandedError or unknownError).
func (s *Store) resolved(xid string, commitErr error) error {
	switch o, err := s.resolve(xid); o {
	case outcomeCommitted:
		return nil
	case outcomeAborted:
		return &notLandedError{commitErr}
	default:
		return &unknownError{commitErr, err}
	}
}

// LastSeqs returns the stored last seq of each of ids that exists, in one
// read (hub.SeqReader: the hub's reconciliation of its subscriptions).
func (s *Store) LastSeqs(parent context.Context, ids []string) (_ map[string]int64, err error) {
	ctx, cancel := s.bounded(parent)
	defer cancel()
	defer settle(parent, &err)
	clean := make([]string, 0, len(ids))
	for _, id := range ids {
		if !hasNUL(id) {
			clean = append(clean, id)
		}
	}
	rows, err := s.pool.Query(ctx, `SELECT id, last_seq FROM negotiations WHERE id = ANY($1)`, clean)
	if err != nil {
		return nil, fmt.Errorf("postgres: last seqs: %w", err)
	}
	seqs := make(map[string]int64, len(clean))
	var id string
	var seq int64
	if _, err := pgx.ForEachRow(rows, []any{&id, &seq}, func() error { seqs[id] = seq; return nil }); err != nil {
		return nil, fmt.Errorf("postgres: last seqs: %w", err)
	}
	return seqs, nil
}

// Now reads the database's clock (clock_timestamp()): the venue clock's
// reference, which every node shares (clock.Venue, ARCHITECTURE.md "One
// venue clock").
func (s *Store) Now(parent context.Context) (_ time.Time, err error) {
	ctx, cancel := s.bounded(parent)
	defer cancel()
	defer settle(parent, &err)
	var at time.Time
	if err := s.pool.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&at); err != nil {
		return time.Time{}, fmt.Errorf("postgres: clock: %w", err)
	}
	return at.UTC(), nil
}
