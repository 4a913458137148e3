package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/venuehq/venue/events/eventspg"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	sjson "github.com/segmentio/encoding/json"

	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/store"
)

// updateAttempts bounds how often Update runs a step that lost a deadlock or
// serialization race before it gives up.
const updateAttempts = 5

// CreateNegotiation implements store.Store: one transaction locks the offer,
// refuses if it already has a negotiation, inserts the pending row and links
// the offer.
func (s *Store) CreateNegotiation(parent context.Context, st negotiation.State) (err error) {
	ctx, cancel := s.bounded(parent)
	defer cancel()
	defer settle(parent, &err)
	if hasNUL(st.OfferID) {
		return notFound("offer", st.OfferID)
	}
	state, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("postgres: create negotiation %s: %w", st.ID, err)
	}
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var linked *string
		err := tx.QueryRow(ctx, `SELECT negotiation_id FROM offers WHERE id = $1 FOR UPDATE`, st.OfferID).Scan(&linked)
		if errors.Is(err, pgx.ErrNoRows) {
			return notFound("offer", st.OfferID)
		}
		if err != nil {
			return fmt.Errorf("postgres: create negotiation %s: lock offer %s: %w", st.ID, st.OfferID, err)
		}
		if linked != nil {
			return fmt.Errorf("postgres: offer %s already has negotiation %s: %w", st.OfferID, *linked, store.ErrConflict)
		}
		_, err = tx.Exec(ctx, `
			INSERT INTO negotiations (id, offer_id, brand, bouncer, status, arena, state, last_seq, next_wake_at, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
			st.ID, st.OfferID, st.Brand.AgentID, st.Bouncer.AgentID, st.Status, st.Arena, state, st.LastSeq,
			nextWake(&st), st.CreatedAt)
		if isUnique(err) {
			return conflict(err, "negotiation %s", st.ID)
		}
		if err != nil {
			return fmt.Errorf("postgres: create negotiation %s: %w", st.ID, err)
		}
		if _, err := tx.Exec(ctx, `UPDATE offers SET negotiation_id = $2 WHERE id = $1`, st.OfferID, st.ID); err != nil {
			return fmt.Errorf("postgres: create negotiation %s: link offer %s: %w", st.ID, st.OfferID, err)
		}
		return nil
	})
	return err
}

// Negotiation implements store.Store.
func (s *Store) Negotiation(parent context.Context, id string) (_ negotiation.State, err error) {
	ctx, cancel := s.bounded(parent)
	defer cancel()
	defer settle(parent, &err)
	if hasNUL(id) {
		return negotiation.State{}, notFound("negotiation", id)
	}
	var raw []byte
	err = s.pool.QueryRow(ctx, `SELECT state FROM negotiations WHERE id = $1`, id).Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return negotiation.State{}, notFound("negotiation", id)
	}
	if err != nil {
		return negotiation.State{}, fmt.Errorf("postgres: negotiation %s: %w", id, err)
	}
	return decodeState(id, raw)
}

// PendingFor implements store.Store: oldest first.
func (s *Store) PendingFor(parent context.Context, bouncerID string) (_ []negotiation.State, err error) {
	ctx, cancel := s.bounded(parent)
	defer cancel()
	defer settle(parent, &err)
	if hasNUL(bouncerID) {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `
		SELECT id, state FROM negotiations WHERE status = $2 AND bouncer = $1 ORDER BY ordinal`,
		bouncerID, negotiation.StatusPending)
	if err != nil {
		return nil, fmt.Errorf("postgres: pending requests of %s: %w", bouncerID, err)
	}
	return collectStates(rows)
}

// LiveNegotiations implements store.Store.
func (s *Store) LiveNegotiations(parent context.Context, agentID string) (_ []negotiation.State, err error) {
	ctx, cancel := s.bounded(parent)
	defer cancel()
	defer settle(parent, &err)
	if hasNUL(agentID) {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `
		SELECT id, state FROM negotiations WHERE status = $2 AND brand = $1
		UNION ALL
		SELECT id, state FROM negotiations WHERE status = $2 AND bouncer = $1 AND brand <> $1`,
		agentID, negotiation.StatusLive)
	if err != nil {
		return nil, fmt.Errorf("postgres: live negotiations of %s: %w", agentID, err)
	}
	return collectStates(rows)
}

// PendingCounts implements store.Store.
func (s *Store) PendingCounts(parent context.Context, bouncerID, brandID string) (_ int, _ int, err error) {
	ctx, cancel := s.bounded(parent)
	defer cancel()
	defer settle(parent, &err)
	if hasNUL(bouncerID, brandID) {
		return 0, 0, nil
	}
	var pair, total int
	err = s.pool.QueryRow(ctx, `
		SELECT count(*) FILTER (WHERE brand = $2), count(*) FROM negotiations
		WHERE status = $3 AND bouncer = $1`, bouncerID, brandID, negotiation.StatusPending).Scan(&pair, &total)
	if err != nil {
		return 0, 0, fmt.Errorf("postgres: pending counts of %s: %w", bouncerID, err)
	}
	return pair, total, nil
}

// PurgeRequests implements store.Store.
func (s *Store) PurgeRequests(parent context.Context, before time.Time) (_ int, err error) {
	ctx, cancel := s.bounded(parent)
	defer cancel()
	defer settle(parent, &err)
	var n int
	err = s.pool.QueryRow(ctx, `
		WITH gone AS (
			DELETE FROM negotiations WHERE status IN ($2, $3) AND created_at < $1 RETURNING offer_id
		), offers_gone AS (
			DELETE FROM offers WHERE id IN (SELECT offer_id FROM gone)
		), unused_gone AS (
			DELETE FROM offers WHERE negotiation_id IS NULL AND created_at < $1
		)
		SELECT count(*) FROM gone`, before, negotiation.StatusPending, negotiation.StatusDeclined).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("postgres: purge requests: %w", err)
	}
	return n, nil
}

// PurgeArena implements store.Store. The transcript goes with its
// negotiation (ON DELETE CASCADE).
func (s *Store) PurgeArena(parent context.Context, before time.Time) (_ int, err error) {
	ctx, cancel := s.bounded(parent)
	defer cancel()
	defer settle(parent, &err)
	var n int
	err = s.pool.QueryRow(ctx, `
		WITH gone AS (
			DELETE FROM negotiations WHERE arena AND status NOT IN ($2, $3) AND created_at < $1 RETURNING offer_id
		), offers_gone AS (
			DELETE FROM offers WHERE id IN (SELECT offer_id FROM gone)
		)
		SELECT count(*) FROM gone`, before, negotiation.StatusPending, negotiation.StatusLive).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("postgres: purge arena negotiations: %w", err)
	}
	return n, nil
}

// SetBlocked implements store.Store.
func (s *Store) SetBlocked(parent context.Context, bouncerID, brandID string, blocked bool, at time.Time) (err error) {
	ctx, cancel := s.bounded(parent)
	defer cancel()
	defer settle(parent, &err)
	if hasNUL(bouncerID, brandID) {
		return nil
	}
	if blocked {
		_, err = s.pool.Exec(ctx, `INSERT INTO agent_blocks (bouncer, brand, created_at) VALUES ($1, $2, $3)
			ON CONFLICT (bouncer, brand) DO NOTHING`, bouncerID, brandID, at)
	} else {
		_, err = s.pool.Exec(ctx, `DELETE FROM agent_blocks WHERE bouncer = $1 AND brand = $2`, bouncerID, brandID)
	}
	if err != nil {
		return fmt.Errorf("postgres: block %s by %s: %w", brandID, bouncerID, err)
	}
	return nil
}

// Blocked implements store.Store.
func (s *Store) Blocked(parent context.Context, bouncerID, brandID string) (_ bool, err error) {
	ctx, cancel := s.bounded(parent)
	defer cancel()
	defer settle(parent, &err)
	if hasNUL(bouncerID, brandID) {
		return false, nil
	}
	var blocked bool
	err = s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM agent_blocks WHERE bouncer = $1 AND brand = $2)`,
		bouncerID, brandID).Scan(&blocked)
	if err != nil {
		return false, fmt.Errorf("postgres: blocked %s by %s: %w", brandID, bouncerID, err)
	}
	return blocked, nil
}

func collectStates(rows pgx.Rows) ([]negotiation.State, error) {
	states, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (negotiation.State, error) {
		var id string
		var raw []byte
		if err := r.Scan(&id, &raw); err != nil {
			return negotiation.State{}, err
		}
		return decodeState(id, raw)
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: list negotiations: %w", err)
	}
	return states, nil
}

// encodeState is the state column's JSON (encoding/json).
func encodeState(st *negotiation.State) ([]byte, error) { return json.Marshal(st) }

// decodeState decodes the state column with segmentio's decoder, which
// reads what encoding/json wrote into the same State (TestDecodeStateSame,
// FuzzDecodeStateSame) about four times faster: one decode a step on the
// writer's path, a tenth of the node's CPU with encoding/json
// (BENCHMARKS.md). It copies what it keeps of raw.
func decodeState(id string, raw []byte) (negotiation.State, error) {
	var st negotiation.State
	if err := sjson.Unmarshal(raw, &st); err != nil {
		return negotiation.State{}, fmt.Errorf("postgres: negotiation %s: decode state: %w", id, err)
	}
	return st, nil
}

// nextWake is the next_wake_at column: the state's next wake, rounded up to
// the microsecond, or NULL.
func nextWake(st *negotiation.State) any {
	at := st.NextWake()
	if at.IsZero() {
		return nil
	}
	return ceilMicro(at)
}

// Update implements store.Store. One transaction locks the negotiation's
// row (SELECT ... FOR UPDATE, held across every node), runs step on the
// decoded state with a store.Tx in the same transaction, and, when the
// outcome Changed(), writes the state, appends the outcome's entries as
// transcript rows, applies its reputation changes and commits — also when
// the step returned an error. Otherwise it rolls back (grant spend of the
// step included). A deadlock or serialization failure runs the whole step
// again (at most updateAttempts times). Errors: store.ErrNotFound for an
// unknown id; store.ErrConflict when an entry's seq does not follow the
// stored last seq or is already stored (a lost race, never a fork). The
// step's own error is returned as is, with the stored state: the one after
// the step if it changed something, the one before otherwise.
//
// Waits are bounded (WithTimeouts): a connection not had in time, the row
// locked elsewhere past lock_timeout, a statement past statement_timeout or
// a session the server ended before the step took effect return an error
// wrapping store.ErrUnavailable, with nothing changed. A connection lost
// while locking is replaced and the step run again. When ctx is done the
// step is abandoned, unless its commit is already under way.
func (s *Store) Update(ctx context.Context, id string, step store.Step) (negotiation.State, negotiation.Outcome, error) {
	if hasNUL(id) {
		return negotiation.State{}, negotiation.Outcome{}, notFound("negotiation", id)
	}
	if s.w != nil {
		return s.submit(ctx, id, step)
	}
	return s.updateAlone(ctx, id, step)
}

// updateAlone is Update in a transaction of its own.
func (s *Store) updateAlone(parent context.Context, id string, step store.Step) (_ negotiation.State, _ negotiation.Outcome, err error) {
	ctx, cancel := s.bounded(parent)
	defer cancel()
	defer settle(parent, &err)
	if s.lockers != nil {
		t := time.NewTimer(s.acquire)
		select {
		case s.lockers <- struct{}{}:
			t.Stop()
			defer func() { <-s.lockers }()
		case <-t.C:
			return negotiation.State{}, negotiation.Outcome{}, fmt.Errorf("postgres: update negotiation %s: too many steps waiting on row locks: %w", id, store.ErrUnavailable)
		case <-ctx.Done():
			t.Stop()
			return negotiation.State{}, negotiation.Outcome{}, fmt.Errorf("postgres: update negotiation %s: %w", id, ctx.Err())
		}
	}
	for attempt := 1; ; attempt++ {
		st, out, stepErr, err := s.update(ctx, id, step)
		if err == nil {
			return st, out, stepErr
		}
		if !retryable(err) && !lostWhileLocking(parent, err) || attempt == updateAttempts {
			if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrConflict) {
				return st, negotiation.Outcome{}, err
			}
			return st, negotiation.Outcome{}, fmt.Errorf("postgres: update negotiation %s: %w", id, err)
		}
		// Lost to a concurrent step, or the connection went: back off a
		// little, with jitter.
		d := time.Duration(attempt)*5*time.Millisecond + rand.N(5*time.Millisecond)
		select {
		case <-ctx.Done():
			return st, negotiation.Outcome{}, fmt.Errorf("postgres: update negotiation %s: %w", id, ctx.Err())
		case <-time.After(d):
		}
	}
}

// lockPhaseError is a failure before anything of a step was sent to be
// written: running the step again cannot apply it twice.
type lockPhaseError struct{ err error }

func (e *lockPhaseError) Error() string { return e.err.Error() }
func (e *lockPhaseError) Unwrap() error { return e.err }

// lostWhileLocking reports whether err lost the connection (not a timeout:
// those already waited their bound) before the step's writes were sent, so
// the step may run again on a fresh connection.
func lostWhileLocking(parent context.Context, err error) bool {
	var lp *lockPhaseError
	if !errors.As(err, &lp) || parent.Err() != nil {
		return false
	}
	switch pgCode(err) {
	case codeLockNotAvailable, codeQueryCanceled:
		return false
	case "":
		return !errors.Is(err, context.DeadlineExceeded) && !pgconn.Timeout(err)
	}
	return unavailable(parent, err)
}

// update is one attempt of Update. err is a store or database failure (the
// transaction rolled back); stepErr is the step's own error.
//
// It is one transaction on one pooled connection in two round trips: BEGIN
// and SELECT ... FOR UPDATE pipelined, the step in Go, then the writes and
// COMMIT pipelined (see save). Any failure rolls back.
func (s *Store) update(ctx context.Context, id string, step store.Step) (st negotiation.State, out negotiation.Outcome, stepErr, err error) {
	actx, cancel := context.WithTimeout(ctx, s.acquire)
	conn, err := s.pool.Acquire(actx)
	cancel()
	if err != nil {
		return negotiation.State{}, out, nil, fmt.Errorf("acquire a connection: %w", err)
	}
	defer conn.Release() // a connection left inside a transaction is destroyed, never reused
	open := false
	defer func() {
		if open {
			_, _ = conn.Exec(context.WithoutCancel(ctx), "ROLLBACK")
		}
	}()
	var raw []byte
	var xid string // this transaction's id: what resolve asks about after a lost COMMIT answer
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue(`SELECT state FROM negotiations WHERE id = $1 FOR UPDATE`, id)
	b.Queue(`SELECT pg_current_xact_id()::text`)
	br := conn.SendBatch(ctx, b)
	_, err = br.Exec()
	if err == nil {
		open = true
		err = br.QueryRow().Scan(&raw)
		if err == nil {
			err = br.QueryRow().Scan(&xid)
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return negotiation.State{}, out, nil, notFound("negotiation", id)
	}
	if err != nil {
		return negotiation.State{}, out, nil, &lockPhaseError{fmt.Errorf("lock: %w", err)}
	}
	before, err := decodeState(id, raw)
	if err != nil {
		return negotiation.State{}, out, nil, err
	}
	work := before.Clone()
	ptx := &pgTx{ctx: ctx, q: conn}
	out, stepErr = step(ptx, &work)
	if ptx.err != nil {
		// The transaction is aborted; whatever the step made of the error,
		// nothing can commit. A deadlock here is retried by Update.
		return before, negotiation.Outcome{}, nil, ptx.err
	}
	if !out.Changed() {
		return before, out, stepErr, nil
	}
	for i, e := range out.Entries {
		if want := before.LastSeq + int64(i) + 1; e.Seq != want {
			return before, negotiation.Outcome{}, nil,
				fmt.Errorf("postgres: negotiation %s: entry seq %d, want %d: %w", id, e.Seq, want, store.ErrConflict)
		}
	}
	if err := s.save(ctx, conn, &work, out); err != nil {
		var cu *commitUnknownError
		if errors.As(err, &cu) {
			// The COMMIT was sent and its answer lost: learn the truth
			// before anyone is told anything.
			open = false
			conn.Conn().PgConn().Close(context.WithoutCancel(ctx)) //nolint:errcheck
			if rerr := s.resolved(xid, err); rerr != nil {
				return before, negotiation.Outcome{}, nil, rerr
			}
			return work, out, stepErr, nil
		}
		return before, negotiation.Outcome{}, nil, err
	}
	open = false
	return work, out, stepErr, nil
}

// querier is what a step's store.Tx and save need of a connection inside
// an open transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// save writes a changed step inside Update's transaction and commits: the
// state, the transcript rows, the reputation changes and COMMIT go in one
// pipelined batch (one round trip), so the row lock is held as briefly as
// the commit allows. After an error the transaction is left to roll back.
func (s *Store) save(ctx context.Context, tx querier, st *negotiation.State, out negotiation.Outcome) error {
	state, err := encodeState(st)
	if err != nil {
		return fmt.Errorf("encode state: %w", err)
	}
	b := &pgx.Batch{}
	what := []string{"save state"}
	b.Queue(`
		UPDATE negotiations SET state = $2, status = $3, last_seq = $4, next_wake_at = $5, updated_at = now()
		WHERE id = $1`, st.ID, state, st.Status, st.LastSeq, nextWake(st))
	var seqs []int64
	if n := len(out.Entries); n > 0 {
		seqs = make([]int64, n)
		ats := make([]time.Time, n)
		frames, hashes, types, froms := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		for i, e := range out.Entries {
			seqs[i], frames[i], hashes[i], ats[i], types[i], froms[i] = e.Seq, string(e.Frame), e.Hash, e.At, e.Type, e.From
		}
		if n == 1 { // the common step: one frame, a plain insert
			b.Queue(`
				INSERT INTO transcript (negotiation_id, seq, frame, hash, created_at, frame_type, from_agent)
				VALUES ($1, $2, $3, $4, $5, $6, $7)`,
				st.ID, seqs[0], frames[0], hashes[0], ats[0], types[0], froms[0])
		} else {
			b.Queue(`
				INSERT INTO transcript (negotiation_id, seq, frame, hash, created_at, frame_type, from_agent)
				SELECT $1, e.seq, e.frame, e.hash, e.at, e.type, e.from_agent
				FROM unnest($2::bigint[], $3::text[], $4::text[], $5::timestamptz[], $6::text[], $7::text[])
					AS e(seq, frame, hash, at, type, from_agent)`,
				st.ID, seqs, frames, hashes, ats, types, froms)
		}
		what = append(what, "append transcript")
	}
	// Agents in a fixed order: two steps never wait on each other's rows
	// the other way round.
	agents := make([]string, 0, len(out.Reputation))
	for a := range out.Reputation {
		agents = append(agents, a)
	}
	slices.Sort(agents)
	for _, a := range agents {
		d := out.Reputation[a]
		b.Queue(`UPDATE agents SET reputation = reputation + $2 WHERE id = $1`, a, d)
		b.Queue(`INSERT INTO reputation_events (agent_id, negotiation_id, delta, reason, created_at) VALUES ($1, $2, $3, $4, $5)`,
			a, st.ID, d, st.Status, st.EndedAt)
		what = append(what, "reputation of "+a, "reputation event of "+a)
	}
	if out.Settlement != nil {
		queueSettlement(b, out.Settlement)
		what = append(what, "settlement instruction")
	}
	if evs := s.eventsFor(st, out); len(evs) > 0 {
		if err := eventspg.Queue(b, evs); err != nil {
			return err
		}
		what = append(what, "event log")
	}
	b.Queue("COMMIT")
	what = append(what, "commit")
	br := tx.SendBatch(ctx, b)
	for _, w := range what {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			if w == "append transcript" && isUnique(err) {
				return conflict(err, "negotiation %s: transcript seq %d..%d already stored", st.ID, seqs[0], seqs[len(seqs)-1])
			}
			var pe *pgconn.PgError
			if !errors.As(err, &pe) {
				// The connection failed with the writes and COMMIT sent:
				// whether they landed is unknown, so never "unavailable".
				return &commitUnknownError{fmt.Errorf("%s: %w", w, err)}
			}
			return fmt.Errorf("%s: %w", w, err)
		}
	}
	_ = br.Close() // COMMIT succeeded: whatever the connection does now, the step is stored
	return nil
}

// Transcript implements store.Store.
func (s *Store) Transcript(parent context.Context, id string, since int64) (_ []negotiation.Entry, err error) {
	ctx, cancel := s.bounded(parent)
	defer cancel()
	defer settle(parent, &err)
	if hasNUL(id) {
		return nil, notFound("negotiation", id)
	}
	rows, err := s.pool.Query(ctx, `
		SELECT seq, frame, hash, created_at, frame_type, from_agent FROM transcript
		WHERE negotiation_id = $1 AND seq > $2 ORDER BY seq`,
		id, since)
	if err != nil {
		return nil, fmt.Errorf("postgres: transcript %s since %d: %w", id, since, err)
	}
	entries, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (negotiation.Entry, error) {
		var e negotiation.Entry
		var frame string
		var at time.Time
		if err := r.Scan(&e.Seq, &frame, &e.Hash, &at, &e.Type, &e.From); err != nil {
			return e, err
		}
		e.Frame, e.At = json.RawMessage(frame), at.UTC()
		return e, nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: transcript %s since %d: %w", id, since, err)
	}
	if len(entries) == 0 {
		var exists bool
		if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM negotiations WHERE id = $1)`, id).Scan(&exists); err != nil {
			return nil, fmt.Errorf("postgres: transcript %s: %w", id, err)
		}
		if !exists {
			return nil, notFound("negotiation", id)
		}
	}
	return entries, nil
}

// runningPredicate is the predicate of the index negotiations_running
// (migration 00077), spelled as a literal: a query with the statuses as
// parameters matches no partial index once Postgres plans it generically.
const runningPredicate = "status IN ('" + negotiation.StatusPending + "', '" + negotiation.StatusLive + "')"

// Wakes implements store.Store: next_wake_at of every pending or live
// negotiation that has a clock running (rounded up to the microsecond).
func (s *Store) Wakes(parent context.Context) (_ []store.Wake, err error) {
	ctx, cancel := s.bounded(parent)
	defer cancel()
	defer settle(parent, &err)
	rows, err := s.pool.Query(ctx, `
		SELECT id, next_wake_at FROM negotiations
		WHERE next_wake_at IS NOT NULL AND `+runningPredicate+` ORDER BY next_wake_at`)
	if err != nil {
		return nil, fmt.Errorf("postgres: wakes: %w", err)
	}
	wakes, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Wake, error) {
		var w store.Wake
		err := r.Scan(&w.NegotiationID, &w.At)
		w.At = w.At.UTC()
		return w, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: wakes: %w", err)
	}
	return wakes, nil
}

// Overdue implements store.Store: the running negotiations whose
// next_wake_at is before `before`, earliest first (a scan of the running
// ones by negotiations_running, sorted).
func (s *Store) Overdue(parent context.Context, before time.Time, limit int) (_ []store.Wake, err error) {
	ctx, cancel := s.bounded(parent)
	defer cancel()
	defer settle(parent, &err)
	rows, err := s.pool.Query(ctx, `
		SELECT id, next_wake_at FROM negotiations
		WHERE next_wake_at < $1 AND `+runningPredicate+` ORDER BY next_wake_at LIMIT $2`,
		before, max(limit, 1))
	if err != nil {
		return nil, fmt.Errorf("postgres: overdue wakes: %w", err)
	}
	wakes, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Wake, error) {
		var w store.Wake
		err := r.Scan(&w.NegotiationID, &w.At)
		w.At = w.At.UTC()
		return w, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: overdue wakes: %w", err)
	}
	return wakes, nil
}

// pgTx is the store.Tx of Update: grant budget rows locked in Update's
// transaction. The first database error sticks: the transaction is then
// aborted and Update fails (or retries) whatever the step does.
type pgTx struct {
	ctx context.Context
	q   querier
	err error
}

// GrantSpent implements store.Tx: SELECT ... FOR UPDATE of the grant's row,
// held until Update's transaction ends; 0 for an unknown grant.
func (t *pgTx) GrantSpent(iss, jti string) (int64, error) {
	if t.err != nil {
		return 0, t.err
	}
	if hasNUL(iss, jti) {
		return 0, nil
	}
	var spent int64
	err := t.q.QueryRow(t.ctx, `SELECT spent_cents FROM grants WHERE iss = $1 AND jti = $2 FOR UPDATE`, iss, jti).Scan(&spent)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		t.err = fmt.Errorf("grant %s spent: %w", jti, err)
		return 0, t.err
	}
	return spent, nil
}

// AddGrantSpent implements store.Tx (an unknown jti is ignored, as in
// store/memory). It commits only with the step.
func (t *pgTx) AddGrantSpent(iss, jti string, cents int64) error {
	if t.err != nil {
		return t.err
	}
	if hasNUL(iss, jti) {
		return nil
	}
	if _, err := t.q.Exec(t.ctx, `UPDATE grants SET spent_cents = spent_cents + $3 WHERE iss = $1 AND jti = $2`, iss, jti, cents); err != nil {
		t.err = fmt.Errorf("grant %s add spent: %w", jti, err)
		return t.err
	}
	return nil
}
