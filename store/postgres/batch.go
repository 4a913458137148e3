package postgres

import (
	"context"
	"errors"
	"fmt"
	"github.com/venuehq/venue/events"
	"github.com/venuehq/venue/events/eventspg"
	"github.com/venuehq/venue/internal/pgjoin"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/settlement"
	"github.com/venuehq/venue/store"
)

// Group commit: Update hands its step to the
// node's writer, which gathers the steps of many negotiations for up to a
// window (while another batch is committing, or while steps keep coming
// close together on an idle node), locks their rows together
// (SELECT ... FOR UPDATE SKIP LOCKED, in id order), runs each step on its
// state, writes every changed state, transcript row and reputation change
// with multi-row statements and commits once (synchronous_commit as the
// database has it). Each caller's Update returns after that commit. The
// row lock is what keeps nodes apart: a row another node (or another batch)
// holds is skipped and its step runs alone, waiting for the lock within
// lock_timeout, so a step is never lost and never applied twice.

// Defaults of WithGroupCommit.
const (
	DefaultBatchWindow = time.Millisecond
	DefaultBatchMax    = 128
	// DefaultBatches is the most batches committing at once by default;
	// the default is also at most one per two cores (GOMAXPROCS) and a
	// quarter of the pool. On two cores, where the venue and Postgres
	// share the CPU, one batch at a time (the next gathering while it
	// commits) commits a wave of 1,000 steps faster than four: four
	// smaller batches cost more per step and slow each other
	// (BENCHMARKS.md, "Issue 21, eighth pass").
	DefaultBatches = 4
	// DefaultFullBatches is how many more batches may commit beside the
	// default ones when they are full (the writer's max steps): a node
	// whose queue holds more than a batch keeps two Postgres backends
	// busy instead of running lock, steps and COMMIT one after the other
	// on one, while a partial batch (light load, or the first of a wave)
	// still waits for its turn and gathers meanwhile. On two cores this
	// raised the most a node delivers by 13-28 % on a fast disk, and
	// kept a phase of 8,000 frames/s where one batch at a time managed
	// 4,400 with 15 ms commits (BENCHMARKS.md, "Issue 21, fourteenth
	// pass").
	DefaultFullBatches = 1
	// BatchLockWait bounds how long a step in a batch waits for a row
	// lock its store.Tx takes (a grant's row another transaction holds;
	// the store's lock timeout if that is shorter). Past it the step is
	// undone and runs alone, where it waits the whole lock timeout: one
	// contended grant never holds up the other negotiations of the batch,
	// nor, with one batch at a time, the node's writer.
	BatchLockWait = 50 * time.Millisecond
)

// WithGroupCommit tunes the writer: window is how long it keeps gathering
// steps once the node is busy (a batch already committing), and the most an
// idle node gathers the steps that follow its first within a quarter of
// the window each (a wave of clocks coming due); max the most
// steps in one transaction, batches how many transactions commit at once.
// max 1 turns group commit off (one transaction per Update). Zero keeps a
// default (DefaultBatchWindow, DefaultBatchMax, and for batches
// defaultBatches: DefaultBatches capped to half of GOMAXPROCS and a quarter
// of the pool, at least 1; with that default, DefaultFullBatches more may
// commit when they are full).
func WithGroupCommit(window time.Duration, max, batches int) Option {
	return func(o *options) { o.window, o.batchMax, o.batches = window, max, batches }
}

// request is one Update waiting for the writer.
type request struct {
	ctx  context.Context
	id   string
	step store.Step
	// state: 0 queued, 1 taken by a batch (the caller waits for it), 2
	// abandoned by its caller (the batch drops it).
	state  atomic.Int32
	done   chan result // buffered 1
	queued time.Time   // when Update handed it over (WriterStats)
}

type result struct {
	st  negotiation.State
	out negotiation.Outcome
	err error
}

// writer is the node's group-commit writer.
type writer struct {
	in       chan *request
	mu       sync.RWMutex // held to send on in; Lock to close
	closed   bool
	stop     chan struct{}
	wg       sync.WaitGroup // dispatcher and batches
	window   time.Duration
	max      int
	slots    chan struct{} // one per batch committing
	full     chan struct{} // one per full batch committing beyond slots (nil: none)
	inflight atomic.Int32
	batches  atomic.Int64 // committed
	steps    atomic.Int64 // committed in them
	waiting  atomic.Int64 // queued, not yet taken by a batch
	stats    writerStats
}

// BatchStats returns how many batches the writer committed and how many
// steps they held (0, 0 with group commit off).
func (s *Store) BatchStats() (batches, steps int64) {
	if s.w == nil {
		return 0, 0
	}
	return s.w.batches.Load(), s.w.steps.Load()
}

var errClosed = errors.New("postgres: store closed")

// startWriter starts the writer unless group commit is off.
func (s *Store) startWriter(o options) {
	if o.batchMax == 1 {
		return
	}
	batches := o.batches
	var full chan struct{}
	if batches <= 0 {
		batches = defaultBatches(int(s.pool.Config().MaxConns), runtime.GOMAXPROCS(0))
		full = make(chan struct{}, DefaultFullBatches)
	}
	w := &writer{
		in:     make(chan *request, 4096),
		stop:   make(chan struct{}),
		window: o.window,
		max:    o.batchMax,
		slots:  make(chan struct{}, batches),
		full:   full,
	}
	if w.window <= 0 {
		w.window = DefaultBatchWindow
	}
	if w.max <= 0 {
		w.max = DefaultBatchMax
	}
	s.w = w
	w.wg.Go(func() { s.dispatch() })
}

// defaultBatches is how many batches commit at once by default on a pool of
// maxConns connections and procs cores: DefaultBatches, at most a quarter of
// the pool and one per two cores, at least 1.
func defaultBatches(maxConns, procs int) int {
	return max(1, min(DefaultBatches, maxConns/4, procs/2))
}

// stopWriter fails the queued steps, waits for the batches committing and
// stops the writer.
func (s *Store) stopWriter() {
	w := s.w
	if w == nil {
		return
	}
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.stop)
	}
	w.mu.Unlock()
	w.wg.Wait()
}

// submit queues step for the writer and waits for its result. A caller
// whose ctx ends before a batch took its step gets ctx's error, the step
// never run; once taken, the step's commit is waited for.
func (s *Store) submit(ctx context.Context, id string, step store.Step) (negotiation.State, negotiation.Outcome, error) {
	if err := ctx.Err(); err != nil { // the caller has gone already
		return negotiation.State{}, negotiation.Outcome{}, fmt.Errorf("postgres: update negotiation %s: %w", id, err)
	}
	w := s.w
	r := &request{ctx: ctx, id: id, step: step, done: make(chan result, 1), queued: time.Now()}
	w.mu.RLock()
	if w.closed {
		w.mu.RUnlock()
		return negotiation.State{}, negotiation.Outcome{}, errClosed
	}
	w.waiting.Add(1)
	select {
	case w.in <- r:
		w.mu.RUnlock()
	case <-ctx.Done():
		w.mu.RUnlock()
		w.waiting.Add(-1)
		return negotiation.State{}, negotiation.Outcome{}, fmt.Errorf("postgres: update negotiation %s: %w", id, ctx.Err())
	}
	select {
	case res := <-r.done:
		return res.st, res.out, res.err
	case <-ctx.Done():
		if r.state.CompareAndSwap(0, 2) {
			w.waiting.Add(-1)
			return negotiation.State{}, negotiation.Outcome{}, fmt.Errorf("postgres: update negotiation %s: %w", id, ctx.Err())
		}
		res := <-r.done // taken: its commit is under way
		return res.st, res.out, res.err
	}
}

// dispatch gathers requests into batches and starts each when a slot is
// free. An idle node starts a batch once the steps closely following the
// first have joined it (gatherIdle); a busy one (a batch in flight) keeps
// gathering for the window, or until the batch is full.
func (s *Store) dispatch() {
	w := s.w
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		var first *request
		select {
		case first = <-w.in:
		case <-w.stop:
			s.drain()
			return
		}
		batch := []*request{first}
		if w.inflight.Load() > 0 {
			timer.Reset(w.window)
		gather:
			for len(batch) < w.max {
				select {
				case r := <-w.in:
					batch = append(batch, r)
				case <-timer.C:
					break gather
				case <-w.stop:
					break gather
				}
			}
			timer.Stop()
		} else {
			batch = w.gatherIdle(batch, timer)
		}
		// Wait for a slot, still gathering; a full batch may take a full
		// one (a nil w.full never takes).
		var slot chan struct{}
	wait:
		for {
			if len(batch) >= w.max {
				select {
				case w.slots <- struct{}{}:
					slot = w.slots
				case w.full <- struct{}{}:
					slot = w.full
				}
				break
			}
			select {
			case w.slots <- struct{}{}:
				slot = w.slots
				break wait
			case r := <-w.in:
				batch = append(batch, r)
			}
		}
		// Whatever is queued now and fits goes too.
	more:
		for len(batch) < w.max {
			select {
			case r := <-w.in:
				batch = append(batch, r)
			default:
				break more
			}
		}
		w.inflight.Add(1)
		w.wg.Go(func() {
			defer func() { w.inflight.Add(-1); <-slot }()
			s.runBatch(batch)
		})
	}
}

// gatherIdle gathers the steps that closely follow the first one on an
// idle node, as a wave of clocks coming due or a burst of frames does:
// while each comes within a quarter of the window of the one before, for
// at most the window, and at most max steps. A lone step waits a quarter of
// the window (at least the runtime's timer resolution, up to a millisecond
// where every core is idle). Without it, the first step of a wave was
// committed alone and the rest waited for that commit (BENCHMARKS.md,
// "Issue 21, ninth pass"). timer is stopped on entry and on return.
func (w *writer) gatherIdle(batch []*request, timer *time.Timer) []*request {
	gap := max(w.window/4, time.Microsecond)
	end := time.Now().Add(w.window)
	timer.Reset(gap)
	defer timer.Stop()
	for len(batch) < w.max {
		select {
		case r := <-w.in:
			batch = append(batch, r)
			left := time.Until(end)
			if left <= 0 {
				return batch
			}
			timer.Reset(min(gap, left))
		case <-timer.C:
			return batch
		case <-w.stop: // commit what is gathered; dispatch drains the rest
			return batch
		}
	}
	return batch
}

// drain fails what is still queued once the writer stops.
func (s *Store) drain() {
	for {
		select {
		case r := <-s.w.in:
			if r.state.CompareAndSwap(0, 1) {
				s.w.waiting.Add(-1)
				r.done <- result{err: errClosed}
			}
		default:
			return
		}
	}
}

// negBatch is the requests of one negotiation in a batch, in arrival order.
type negBatch struct {
	id   string
	reqs []*request
}

// pending is a step run in the batch whose result waits for the commit.
type pending struct {
	r   *request
	res result
}

// runBatch runs one batch: every request either gets its result after the
// batch's commit, or runs alone (its row was locked elsewhere, its step's
// store.Tx failed, or the batch could not commit and nothing of it landed).
func (s *Store) runBatch(batch []*request) {
	var taken []*request
	for _, r := range batch {
		if r.state.CompareAndSwap(0, 1) {
			s.w.waiting.Add(-1)
			taken = append(taken, r)
		}
	}
	if len(taken) == 0 {
		return
	}
	tTaken := time.Now()
	for _, r := range taken {
		s.w.stats.took(r.queued, tTaken)
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.bound)
	defer cancel()
	alone := func(rs ...*request) {
		s.w.stats.aloneN.Add(int64(len(rs)))
		for _, r := range rs {
			s.w.wg.Go(func() {
				st, out, err := s.updateAlone(r.ctx, r.id, r.step)
				r.done <- result{st, out, err}
			})
		}
	}
	fail := func(err error, rs ...*request) {
		for _, r := range rs {
			e := err
			settle(r.ctx, &e)
			r.done <- result{err: fmt.Errorf("postgres: update negotiation %s: %w", r.id, e)}
		}
	}

	byID := map[string]*negBatch{}
	var ids []string
	for _, r := range taken {
		nb := byID[r.id]
		if nb == nil {
			nb = &negBatch{id: r.id}
			byID[r.id] = nb
			ids = append(ids, r.id)
		}
		nb.reqs = append(nb.reqs, r)
	}
	slices.Sort(ids)

	actx, acancel := context.WithTimeout(ctx, s.acquire)
	conn, err := s.pool.Acquire(actx)
	acancel()
	if err != nil {
		fail(fmt.Errorf("acquire a connection: %w", err), taken...)
		return
	}
	defer conn.Release()
	open := false
	defer func() {
		if open {
			_, _ = conn.Exec(context.WithoutCancel(ctx), "ROLLBACK")
		}
	}()

	// Lock what can be had now; a row held elsewhere is skipped.
	raws := make(map[string][]byte, len(ids))
	var xid string // the batch transaction's id: what resolve asks about after a lost COMMIT answer
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	// Every statement of a batch reaches its rows by key. Left to itself,
	// the planner re-plans each one for each batch (the arrays' lengths
	// are known only then) and, for a large batch on a small or
	// not yet analyzed table, joins the batch's arrays to a sequential
	// scan of negotiations: every row read to update a few dozen. For
	// this transaction only: plan once per connection, and by index
	// (BENCHMARKS.md, "Issue 21, twelfth pass").
	b.Queue(`SELECT pg_current_xact_id()::text, set_config('plan_cache_mode', 'force_generic_plan', true),
		set_config('enable_seqscan', 'off', true)`)
	b.Queue(`SELECT id, state FROM negotiations WHERE id = ANY($1) ORDER BY id FOR UPDATE SKIP LOCKED`, ids)
	br := conn.SendBatch(ctx, b)
	_, err = br.Exec()
	if err == nil {
		open = true
		err = br.QueryRow().Scan(&xid, nil, nil)
		var rows pgx.Rows
		if err == nil {
			rows, err = br.Query()
		}
		if err == nil {
			var id string
			var raw []byte
			_, err = pgx.ForEachRow(rows, []any{&id, &raw}, func() error {
				raws[id] = slices.Clone(raw)
				return nil
			})
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	tLocked := time.Now()
	if err != nil {
		// Nothing was written: each step may run alone.
		alone(taken...)
		return
	}

	var (
		waiting  = make([]pending, 0, len(taken)) // run, committed with the batch (a pending is large: sized once)
		rerun    []*request                       // run alone after the batch
		changed  []*negotiation.State
		entries  []entryRow
		repDelta = map[string]int{}
		repEvs   []repEvent
		settles  []*settlement.Instruction
		evs      []events.Event
		sp       int
		// shortLocks: a kept step's savepoint set the short lock wait,
		// which the batch's writes must not inherit.
		shortLocks bool
	)
	for _, id := range ids {
		nb := byID[id]
		raw, ok := raws[id]
		if !ok { // locked elsewhere, or no such negotiation: alone decides
			rerun = append(rerun, nb.reqs...)
			continue
		}
		cur, derr := decodeState(id, raw)
		if derr != nil {
			fail(derr, nb.reqs...)
			continue
		}
		dirty := false
		for _, r := range nb.reqs {
			work := cur.Clone()
			sp++
			tx := &spTx{pgTx: pgTx{ctx: ctx, q: conn}, name: fmt.Sprintf("s%d", sp), lockWait: s.batchLockWait}
			out, stepErr := r.step(tx, &work)
			if tx.err != nil {
				// The step's store.Tx failed (a deadlock, a lock timeout): undo
				// it and run it alone.
				if rerr := tx.rollback(); rerr != nil {
					s.batchBroken(rerr, append(waiting, pendingOf(nb.reqs, r)...), rerun, taken, alone)
					return
				}
				rerun = append(rerun, r)
				continue
			}
			if !out.Changed() {
				if rerr := tx.rollback(); rerr != nil { // grant spend of an unchanged step
					s.batchBroken(rerr, append(waiting, pendingOf(nb.reqs, r)...), rerun, taken, alone)
					return
				}
				waiting = append(waiting, pending{r, result{cur, out, stepErr}})
				continue
			}
			if serr := checkSeqs(id, cur.LastSeq, out.Entries); serr != nil {
				if rerr := tx.rollback(); rerr != nil {
					s.batchBroken(rerr, append(waiting, pendingOf(nb.reqs, r)...), rerun, taken, alone)
					return
				}
				waiting = append(waiting, pending{r, result{cur, negotiation.Outcome{}, serr}})
				continue
			}
			cur, dirty = work, true
			shortLocks = shortLocks || tx.open
			for _, e := range out.Entries {
				entries = append(entries, entryRow{id, e})
			}
			for a, d := range out.Reputation {
				repDelta[a] += d
				repEvs = append(repEvs, repEvent{a, id, d, work.Status, work.EndedAt})
			}
			if out.Settlement != nil {
				settles = append(settles, out.Settlement)
			}
			evs = append(evs, s.eventsFor(&work, out)...)
			waiting = append(waiting, pending{r, result{work, out, stepErr}})
		}
		if dirty {
			final := cur
			changed = append(changed, &final)
		}
	}

	if len(changed) == 0 {
		// Nothing to write: roll back (the locks and any grant spend go).
		open = false
		_, _ = conn.Exec(ctx, "ROLLBACK")
		for _, p := range waiting {
			p.r.done <- p.res
		}
		alone(rerun...)
		return
	}
	tStepped := time.Now()
	if err := s.writeBatch(ctx, conn, shortLocks, changed, entries, repDelta, repEvs, settles, evs); err != nil {
		var pe *pgconn.PgError
		if errors.As(err, &pe) {
			// The server refused a statement: the transaction rolled back,
			// nothing of the batch landed; every step runs again alone.
			open = false
			_, _ = conn.Exec(context.WithoutCancel(ctx), "ROLLBACK")
			for _, p := range waiting {
				alone(p.r)
			}
			alone(rerun...)
			return
		}
		// The connection failed with the writes and COMMIT sent: learn
		// whether the batch landed before anyone is told anything.
		open = false
		conn.Conn().PgConn().Close(context.WithoutCancel(ctx)) //nolint:errcheck
		switch o, rerr := s.resolve(xid); o {
		case outcomeCommitted:
			s.w.batches.Add(1)
			s.w.steps.Add(int64(len(waiting)))
			for _, p := range waiting {
				p.r.done <- p.res
			}
		case outcomeAborted: // nothing of it landed: every step runs again alone
			for _, p := range waiting {
				alone(p.r)
			}
		default:
			for _, p := range waiting {
				p.r.done <- result{err: fmt.Errorf("postgres: update negotiation %s: %w", p.r.id,
					&unknownError{fmt.Errorf("commit: %w", err), rerr})}
			}
		}
		alone(rerun...)
		return
	}
	open = false
	s.w.batches.Add(1)
	s.w.steps.Add(int64(len(waiting)))
	s.w.stats.batch(len(waiting), tLocked.Sub(tTaken), tStepped.Sub(tLocked), time.Since(tStepped))
	for _, p := range waiting {
		p.r.done <- p.res
	}
	alone(rerun...)
}

// pendingOf is what batchBroken must re-run of one negotiation's requests
// from r on (those before r are already in waiting).
func pendingOf(reqs []*request, from *request) []pending {
	i := slices.Index(reqs, from)
	out := make([]pending, 0, len(reqs)-i)
	for _, r := range reqs[i:] {
		out = append(out, pending{r: r})
	}
	return out
}

// batchBroken handles a batch whose transaction cannot go on (a savepoint
// could not be rolled back): nothing of it is committed (the deferred
// ROLLBACK runs), so every step not yet answered runs alone. Requests of
// negotiations not reached yet are in taken but not in waiting or rerun.
func (s *Store) batchBroken(err error, waiting []pending, rerun, taken []*request, alone func(...*request)) {
	seen := map[*request]bool{}
	for _, p := range waiting {
		seen[p.r] = true
	}
	for _, r := range rerun {
		seen[r] = true
	}
	for _, r := range taken {
		if !seen[r] {
			rerun = append(rerun, r)
		}
	}
	for _, p := range waiting {
		rerun = append(rerun, p.r)
	}
	_ = err
	alone(rerun...)
}

// checkSeqs refuses entries that do not follow last (a lost race, never a
// fork).
func checkSeqs(id string, last int64, entries []negotiation.Entry) error {
	for i, e := range entries {
		if want := last + int64(i) + 1; e.Seq != want {
			return fmt.Errorf("postgres: negotiation %s: entry seq %d, want %d: %w", id, e.Seq, want, store.ErrConflict)
		}
	}
	return nil
}

type entryRow struct {
	negID string
	e     negotiation.Entry
}

type repEvent struct {
	agent, negID string
	delta        int
	reason       string
	at           time.Time
}

// writeBatch writes a batch's changes and commits, in one round trip:
// the connection's lock timeout back if a step's savepoint shortened it
// (resetLocks), one UPDATE of every changed negotiation, one INSERT of
// every transcript row, the reputation changes (agents in a fixed order),
// one INSERT of the reputation events, the settlement instructions of live
// deals, the event log entries of the steps (eventspg.Queue), COMMIT.
func (s *Store) writeBatch(ctx context.Context, conn querier, resetLocks bool, changed []*negotiation.State, entries []entryRow,
	repDelta map[string]int, repEvs []repEvent, settles []*settlement.Instruction, evlog []events.Event) error {
	n := len(changed)
	ids, statuses := make([]string, n), make([]string, n)
	raws := make([][]byte, n)
	seqs := make([]int64, n)
	wakes := make([]*time.Time, n)
	for i, st := range changed {
		raw, err := encodeState(st)
		if err != nil {
			return fmt.Errorf("encode state: %w", err)
		}
		ids[i], raws[i], statuses[i], seqs[i] = st.ID, raw, st.Status, st.LastSeq
		if w, ok := nextWake(st).(time.Time); ok {
			wakes[i] = &w
		}
	}
	// The large texts go joined, one parameter each (internal/pgjoin).
	states, err := pgjoin.Join(raws)
	if err != nil {
		return fmt.Errorf("states: %w", err)
	}
	b := &pgx.Batch{}
	if resetLocks {
		b.Queue(`SET LOCAL lock_timeout TO DEFAULT`)
	}
	b.Queue(`
		UPDATE negotiations n SET state = u.state::json, status = u.status, last_seq = u.last_seq,
			next_wake_at = u.wake, updated_at = now()
		FROM unnest($1::text[], `+pgjoin.Split(2)+`, $3::text[], $4::bigint[], $5::timestamptz[]) AS u(id, state, status, last_seq, wake)
		WHERE n.id = u.id`, ids, states, statuses, seqs, wakes)
	if m := len(entries); m > 0 {
		negIDs, hashes, types, froms := make([]string, m), make([]string, m), make([]string, m), make([]string, m)
		frameRaws := make([][]byte, m)
		eseqs, ats := make([]int64, m), make([]time.Time, m)
		for i, r := range entries {
			negIDs[i], eseqs[i], frameRaws[i], hashes[i], ats[i], types[i], froms[i] = r.negID, r.e.Seq, r.e.Frame, r.e.Hash, r.e.At, r.e.Type, r.e.From
		}
		frames, err := pgjoin.Join(frameRaws)
		if err != nil {
			return fmt.Errorf("frames: %w", err)
		}
		b.Queue(`
			INSERT INTO transcript (negotiation_id, seq, frame, hash, created_at, frame_type, from_agent)
			SELECT * FROM unnest($1::text[], $2::bigint[], `+pgjoin.Split(3)+`, $4::text[], $5::timestamptz[], $6::text[], $7::text[])`,
			negIDs, eseqs, frames, hashes, ats, types, froms)
	}
	agents := make([]string, 0, len(repDelta))
	for a := range repDelta {
		agents = append(agents, a)
	}
	slices.Sort(agents)
	for _, a := range agents {
		b.Queue(`UPDATE agents SET reputation = reputation + $2 WHERE id = $1`, a, repDelta[a])
	}
	if m := len(repEvs); m > 0 {
		ag, ng, rs := make([]string, m), make([]string, m), make([]string, m)
		ds := make([]int32, m)
		ats := make([]time.Time, m)
		for i, e := range repEvs {
			ag[i], ng[i], ds[i], rs[i], ats[i] = e.agent, e.negID, int32(e.delta), e.reason, e.at
		}
		b.Queue(`INSERT INTO reputation_events (agent_id, negotiation_id, delta, reason, created_at)
			SELECT * FROM unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::timestamptz[])`, ag, ng, ds, rs, ats)
	}
	for _, in := range settles {
		queueSettlement(b, in)
	}
	if err := eventspg.Queue(b, evlog); err != nil {
		return err
	}
	b.Queue("COMMIT")
	br := conn.SendBatch(ctx, b)
	for range b.Len() {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return err
		}
	}
	_ = br.Close() // COMMIT succeeded: the batch is stored
	return nil
}

// spTx is the store.Tx of a step in a batch: the first use opens a
// savepoint, so a failure (a deadlock on a grant row, a lock timeout) or an
// unchanged step undoes only that step's grant accounting. The savepoint
// shortens the lock timeout to lockWait (BatchLockWait): a lock held
// elsewhere fails the step here, and it runs alone; rolling back to the
// savepoint restores the timeout, writeBatch restores it for a kept step.
type spTx struct {
	pgTx
	name     string
	lockWait time.Duration
	open     bool
}

func (t *spTx) begin() error {
	if t.open || t.err != nil {
		return t.err
	}
	// One simple-protocol round trip; a duration is not a parameter.
	if _, err := t.q.Exec(t.ctx, fmt.Sprintf("SAVEPOINT %s; SET LOCAL lock_timeout = %d", t.name, max(1, t.lockWait.Milliseconds()))); err != nil {
		t.err = fmt.Errorf("savepoint: %w", err)
		return t.err
	}
	t.open = true
	return nil
}

// GrantSpent implements store.Tx.
func (t *spTx) GrantSpent(iss, jti string) (int64, error) {
	if err := t.begin(); err != nil {
		return 0, err
	}
	return t.pgTx.GrantSpent(iss, jti)
}

// AddGrantSpent implements store.Tx.
func (t *spTx) AddGrantSpent(iss, jti string, cents int64) error {
	if err := t.begin(); err != nil {
		return err
	}
	return t.pgTx.AddGrantSpent(iss, jti, cents)
}

// rollback undoes the step's store.Tx work, if it did any.
func (t *spTx) rollback() error {
	if !t.open {
		if t.err != nil {
			return t.err // the savepoint itself failed: the transaction is aborted
		}
		return nil
	}
	t.open = false
	if _, err := t.q.Exec(context.WithoutCancel(t.ctx), "ROLLBACK TO SAVEPOINT "+t.name); err != nil {
		return fmt.Errorf("rollback to savepoint: %w", err)
	}
	return nil
}
