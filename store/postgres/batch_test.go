package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/store/postgres"
	"github.com/venuehq/venue/store/storetest"
)

// The contract holds with group commit off too (one transaction per step).
func TestContractWithoutGroupCommit(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.Store { return newStore(t, postgres.WithGroupCommit(0, 1, 0)) })
}

// Many negotiations stepping at once share commits: every step lands once,
// in order per negotiation, every chain verifies, and the writer committed
// fewer batches than steps.
func TestGroupCommitManyNegotiations(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	const negs, each = 40, 15
	ns := make([]negotiation.State, negs)
	for i := range ns {
		ns[i] = liveNegotiation(t, s)
	}
	b0, s0 := s.BatchStats()
	w0 := s.WriterStats()
	var wg sync.WaitGroup
	for _, n := range ns {
		for _, from := range []string{n.Brand.AgentID, n.Bouncer.AgentID} {
			wg.Go(func() {
				for j := range each {
					if _, _, err := s.Update(ctx, n.ID, applyFrame(t, from,
						fmt.Sprintf(`{"type":"message","content":"%s %d"}`, from, j), storetest.T0.Add(time.Second))); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	for _, n := range ns {
		entries, err := s.Transcript(ctx, n.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 2*each {
			t.Fatalf("%s: %d entries, want %d", n.ID, len(entries), 2*each)
		}
		storetest.VerifyChain(t, entries)
		got, err := s.Negotiation(ctx, n.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.LastSeq != int64(2*each) {
			t.Fatalf("%s: state at seq %d, transcript at %d", n.ID, got.LastSeq, 2*each)
		}
	}
	b, st := s.BatchStats()
	b, st = b-b0, st-s0
	if st == 0 || b >= st {
		t.Fatalf("%d batches for %d steps: nothing was grouped", b, st)
	}
	t.Logf("%d steps in %d batches", st, b)
	// The writer's own account agrees: every batch counted once by size,
	// every step it took waited some time, every batch spent time
	// committing.
	w := s.WriterStats()
	var sized int64
	for i, c := range w.SizeCounts {
		sized += c - w0.SizeCounts[i]
	}
	var timed int64
	for i, c := range w.CommitCounts {
		timed += c - w0.CommitCounts[i]
	}
	if sized != w.Batches-w0.Batches || timed != sized || w.Batches-w0.Batches != b || w.Steps-w0.Steps != st {
		t.Errorf("writer stats: %d batches by size, %d by commit time, %d batches, %d steps; BatchStats %d, %d",
			sized, timed, w.Batches-w0.Batches, w.Steps-w0.Steps, b, st)
	}
	if w.Taken-w0.Taken < st || w.QueueSeconds <= w0.QueueSeconds || w.CommitSeconds <= w0.CommitSeconds || w.LockSeconds <= w0.LockSeconds {
		t.Errorf("writer stats: %d taken for %d steps, queue %.3fs, lock %.3fs, commit %.3fs", w.Taken-w0.Taken, st,
			w.QueueSeconds-w0.QueueSeconds, w.LockSeconds-w0.LockSeconds, w.CommitSeconds-w0.CommitSeconds)
	}
}

// Two stores on one schema are two nodes, each with its writer, racing on
// the same negotiations: every step lands exactly once and no chain forks.
//
// The waits are the test's, not production's: 80 steps at once on 20 rows
// across two nodes, under -race on a loaded machine, may wait past the
// default 2 s bounds for a connection or a row lock, and a step that runs
// out of them is (rightly) refused as unavailable. That bound is tested on
// its own (TestGroupCommitStepFailuresIsolated); here every step must land.
func TestGroupCommitTwoNodesRace(t *testing.T) {
	t.Parallel()
	patient := postgres.WithTimeouts(time.Minute, time.Minute, time.Minute)
	a := newStore(t, patient)
	ctx := t.Context()
	var schema string
	if err := a.Pool().QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		t.Fatal(err)
	}
	b, err := postgres.New(ctx, storetest.DatabaseURL(t), postgres.WithSchema(schema), patient)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	const negs, each = 20, 10
	ns := make([]negotiation.State, negs)
	for i := range ns {
		ns[i] = liveNegotiation(t, a)
	}
	var wg sync.WaitGroup
	for _, n := range ns {
		for i, s := range []*postgres.Store{a, b, a, b} {
			from := n.Brand.AgentID
			if i%2 == 1 {
				from = n.Bouncer.AgentID
			}
			wg.Go(func() {
				for j := range each {
					frame := fmt.Sprintf(`{"type":"message","content":"%d/%d"}`, i, j)
					if _, _, err := s.Update(ctx, n.ID, applyFrame(t, from, frame, storetest.T0.Add(time.Second))); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
	}
	wg.Wait()
	for _, n := range ns {
		entries, err := b.Transcript(ctx, n.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 4*each {
			t.Fatalf("%s: %d entries, want %d", n.ID, len(entries), 4*each)
		}
		storetest.VerifyChain(t, entries)
		seen := map[string]bool{}
		for _, e := range entries {
			if seen[string(e.Frame)] {
				t.Fatalf("%s: frame %s stored twice", n.ID, e.Frame)
			}
			seen[string(e.Frame)] = true
		}
	}
}

// In one batch, a refused frame, a step whose store.Tx fails (its grant row
// locked elsewhere past the lock timeout) and an unchanged step with grant
// spend do not spoil the others: the good steps land, the refused one
// answers its error, the failed one answers unavailable, and the unchanged
// step's spend is undone.
func TestGroupCommitStepFailuresIsolated(t *testing.T) {
	t.Parallel()
	s, schema := faultStore(t, postgres.WithTimeouts(2*time.Second, 300*time.Millisecond, 5*time.Second),
		postgres.WithGroupCommit(50*time.Millisecond, 0, 1))
	ctx := t.Context()
	tx := holdGrant(t, s, schema, "g_locked", "g_free")
	good, refused, txFails, unchanged := liveNegotiation(t, s), liveNegotiation(t, s), liveNegotiation(t, s), liveNegotiation(t, s)
	// Hold the writer's one slot with a step that waits, so the four below
	// queue up and go in one batch together.
	blocker := liveNegotiation(t, s)
	release, entered := make(chan struct{}), make(chan struct{})
	var enter, released sync.Once
	defer released.Do(func() { close(release) }) // a failing test does not leave the writer stuck
	var wg sync.WaitGroup
	wg.Go(func() {
		frame := applyFrame(t, blocker.Brand.AgentID, `{"type":"message","content":"first"}`, storetest.T0.Add(time.Second))
		if _, _, err := s.Update(ctx, blocker.ID, func(tx store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
			enter.Do(func() { close(entered) })
			<-release
			return frame(tx, st)
		}); err != nil {
			t.Error(err)
		}
	})
	<-entered
	b0, _ := s.BatchStats()
	var errGood, errRefused, errTx, errUnchanged error
	wg.Go(func() {
		_, _, errGood = s.Update(ctx, good.ID, applyFrame(t, good.Brand.AgentID, `{"type":"message","content":"fine"}`, storetest.T0.Add(time.Second)))
	})
	wg.Go(func() {
		// An accept with nothing proposed: refused, nothing stored.
		_, _, errRefused = s.Update(ctx, refused.ID, applyFrame(t, refused.Brand.AgentID, `{"type":"accept"}`, storetest.T0.Add(time.Second)))
	})
	wg.Go(func() {
		frame := applyFrame(t, txFails.Brand.AgentID, `{"type":"message","content":"spend"}`, storetest.T0.Add(time.Second))
		_, _, errTx = s.Update(ctx, txFails.ID, func(tx store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
			if _, err := tx.GrantSpent("", "g_locked"); err != nil {
				return negotiation.Outcome{}, err
			}
			return frame(tx, st)
		})
	})
	wg.Go(func() {
		_, _, errUnchanged = s.Update(ctx, unchanged.ID, func(tx store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
			if _, err := tx.GrantSpent("", "g_free"); err != nil {
				return negotiation.Outcome{}, err
			}
			if err := tx.AddGrantSpent("", "g_free", 7); err != nil {
				return negotiation.Outcome{}, err
			}
			return negotiation.Outcome{}, errors.New("refused after spending")
		})
	})
	deadline := time.Now().Add(30 * time.Second)
	for s.Queued() != 4 {
		if time.Now().After(deadline) {
			t.Fatalf("%d steps queued, want 4", s.Queued())
		}
		runtime.Gosched()
	}
	released.Do(func() { close(release) })
	wg.Wait()
	if b, _ := s.BatchStats(); b-b0 != 2 {
		t.Fatalf("%d batches committed, want 2 (the blocker's, then the four together)", b-b0)
	}
	if errGood != nil {
		t.Fatalf("good step: %v", errGood)
	}
	if errRefused == nil || isUnavailable(errRefused) {
		t.Fatalf("refused step: err = %v, want the room's refusal", errRefused)
	}
	if !isUnavailable(errTx) {
		t.Fatalf("step with a stuck grant row: err = %v, want unavailable", errTx)
	}
	if errUnchanged == nil || errUnchanged.Error() != "refused after spending" {
		t.Fatalf("unchanged step: err = %v", errUnchanged)
	}
	count := func(id string) int {
		t.Helper()
		entries, err := s.Transcript(ctx, id, 0)
		if err != nil {
			t.Fatal(err)
		}
		return len(entries)
	}
	if n := count(good.ID); n != 1 {
		t.Fatalf("good: %d entries, want 1", n)
	}
	for _, id := range []string{refused.ID, txFails.ID, unchanged.ID} {
		if n := count(id); n != 0 {
			t.Fatalf("%s: %d entries, want 0", id, n)
		}
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	grants, err := s.Grants(ctx, "agt_x")
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range grants {
		if g.SpentCents != 0 {
			t.Fatalf("grant %s spent %d: an unchanged or failed step's spend stayed", g.JTI, g.SpentCents)
		}
	}
}

// Closing the store answers what is still queued; nothing hangs.
func TestGroupCommitClose(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	n := liveNegotiation(t, s)
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			_, _, _ = s.Update(t.Context(), n.ID, applyFrame(t, n.Brand.AgentID, fmt.Sprintf(`{"type":"message","content":"%d"}`, i), storetest.T0.Add(time.Second)))
		})
	}
	s.Close()
	wg.Wait()
	if _, _, err := s.Update(t.Context(), n.ID, applyFrame(t, n.Brand.AgentID, `{"type":"message","content":"late"}`, storetest.T0.Add(time.Second))); err == nil {
		t.Fatal("a step after Close succeeded")
	}
}

// A caller that has gone (its context cancelled, as when its socket
// closed) gets its step dropped unless a batch already took it; either
// way what it is told matches what is stored: success means committed,
// a context error means nothing landed.
func TestGroupCommitAbandoned(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	n := liveNegotiation(t, s)
	gone, cancel := context.WithCancel(t.Context())
	cancel()
	ok, dropped := 0, 0
	for i := range 200 {
		_, _, err := s.Update(gone, n.ID, applyFrame(t, n.Brand.AgentID, fmt.Sprintf(`{"type":"message","content":"%d"}`, i), storetest.T0.Add(time.Second)))
		switch {
		case err == nil:
			ok++
		case errors.Is(err, context.Canceled):
			dropped++
		default:
			t.Fatalf("step %d: %v", i, err)
		}
	}
	entries, err := s.Transcript(t.Context(), n.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != ok {
		t.Fatalf("%d steps reported committed, %d stored", ok, len(entries))
	}
	if dropped == 0 {
		t.Fatal("no step of a caller that had gone was dropped")
	}
	t.Logf("%d dropped, %d committed before the writer saw the caller had gone", dropped, ok)
}

// On an idle node, steps that follow one another closely (a wave of clocks
// coming due, settled one goroutine each) go in one batch: the first does
// not commit alone while the rest wait for it. The window here is 30 s (a
// gap of 7.5 s), so only the batch filling up (max 8) ends the gathering;
// the old writer committed the first step alone, the rest 30 s later.
func TestGroupCommitIdleWave(t *testing.T) {
	t.Parallel()
	const wave = 8
	url := storetest.DatabaseURL(t)
	schema := storetest.Schema(t, url)
	setup := newStoreOn(t, schema) // its own writer: a lone step on s would wait the window
	if _, err := setup.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	negs := make([]negotiation.State, wave)
	for i := range negs {
		negs[i] = liveNegotiation(t, setup)
	}
	s, err := postgres.New(t.Context(), url, postgres.WithSchema(schema), postgres.WithGroupCommit(30*time.Second, wave, 1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	b0, n0 := s.BatchStats()
	var wg sync.WaitGroup
	for i, n := range negs {
		wg.Go(func() {
			if _, _, err := s.Update(t.Context(), n.ID, applyFrame(t, n.Brand.AgentID, `{"type":"message","content":"wave"}`, storetest.T0.Add(time.Second))); err != nil {
				t.Error(err)
			}
		})
		// The next step comes only once this one is queued or taken.
		deadline := time.Now().Add(30 * time.Second)
		for b, _ := s.BatchStats(); s.Queued() < i+1 && b == b0; b, _ = s.BatchStats() {
			if time.Now().After(deadline) {
				t.Fatalf("step %d never queued", i)
			}
			runtime.Gosched()
		}
	}
	wg.Wait()
	if b, n := s.BatchStats(); b-b0 != 1 || n-n0 != wave {
		t.Fatalf("%d batches of %d steps in all, want 1 of %d", b-b0, n-n0, wave)
	}
}

// The default number of batches committing at once: one per two cores, a
// quarter of the pool, DefaultBatches at most, never 0.
func TestDefaultBatches(t *testing.T) {
	for _, c := range []struct{ conns, procs, want int }{
		{16, 1, 1}, {16, 2, 1}, {16, 4, 2}, {16, 8, 4}, {16, 64, 4}, {4, 8, 1}, {2, 2, 1}, {8, 16, 2},
	} {
		if got := postgres.DefaultBatchesFor(c.conns, c.procs); got != c.want {
			t.Errorf("defaultBatches(%d conns, %d procs) = %d, want %d", c.conns, c.procs, got, c.want)
		}
	}
}

// A step whose grant row another transaction holds waits for it at most
// BatchLockWait inside a batch, then runs alone: the steps batched with it
// commit at once, never after the store's (long, here) lock timeout.
func TestGroupCommitContendedGrantHoldsNobody(t *testing.T) {
	t.Parallel()
	s, schema := faultStore(t, postgres.WithTimeouts(2*time.Second, 30*time.Second, 40*time.Second),
		postgres.WithGroupCommit(0, 0, 1))
	ctx := t.Context()
	tx := holdGrant(t, s, schema, "g_held")
	spender, good, blocker := liveNegotiation(t, s), liveNegotiation(t, s), liveNegotiation(t, s)
	// Hold the writer's one slot so the spender and the good step queue
	// up behind it, in that order, and go in one batch.
	release, entered := make(chan struct{}), make(chan struct{})
	var released sync.Once
	defer released.Do(func() { close(release) })
	var wg sync.WaitGroup
	wg.Go(func() {
		frame := applyFrame(t, blocker.Brand.AgentID, `{"type":"message","content":"first"}`, storetest.T0.Add(time.Second))
		if _, _, err := s.Update(ctx, blocker.ID, func(tx store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
			close(entered)
			<-release
			return frame(tx, st)
		}); err != nil {
			t.Error(err)
		}
	})
	<-entered
	waitQueued := func(n int) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for s.Queued() != n {
			if time.Now().After(deadline) {
				t.Fatalf("%d steps queued, want %d", s.Queued(), n)
			}
			runtime.Gosched()
		}
	}
	spent := make(chan error, 1)
	wg.Go(func() {
		frame := applyFrame(t, spender.Brand.AgentID, `{"type":"message","content":"spend"}`, storetest.T0.Add(time.Second))
		_, _, err := s.Update(ctx, spender.ID, func(tx store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
			if _, err := tx.GrantSpent("", "g_held"); err != nil {
				return negotiation.Outcome{}, err
			}
			if err := tx.AddGrantSpent("", "g_held", 5); err != nil {
				return negotiation.Outcome{}, err
			}
			return frame(tx, st)
		})
		spent <- err
	})
	waitQueued(1)
	goodDone := make(chan error, 1)
	wg.Go(func() {
		_, _, err := s.Update(ctx, good.ID, applyFrame(t, good.Brand.AgentID, `{"type":"message","content":"fine"}`, storetest.T0.Add(time.Second)))
		goodDone <- err
	})
	waitQueued(2)
	released.Do(func() { close(release) })
	select {
	case err := <-goodDone:
		if err != nil {
			t.Fatalf("good step: %v", err)
		}
	case <-time.After(15 * time.Second): // the lock timeout is 30 s
		t.Fatal("the step batched with a contended grant waited for its lock")
	}
	select {
	case err := <-spent:
		t.Fatalf("the spender returned (%v) while its grant row was still held", err)
	default:
	}
	if err := tx.Rollback(ctx); err != nil { // the spender, alone, gets the row now
		t.Fatal(err)
	}
	if err := <-spent; err != nil {
		t.Fatalf("spender after the lock went: %v", err)
	}
	wg.Wait()
	grants, err := s.Grants(ctx, "agt_x")
	if err != nil {
		t.Fatal(err)
	}
	if len(grants) != 1 || grants[0].SpentCents != 5 {
		t.Fatalf("grants %+v, want g_held spent 5 once", grants)
	}
}

// holdGrant saves grants held and free of agt_x and locks held's row from a
// transaction outside the store (rolled back when t ends, if not before).
func holdGrant(t *testing.T, s *postgres.Store, schema, held string, free ...string) pgx.Tx {
	t.Helper()
	ctx := t.Context()
	for _, jti := range append([]string{held}, free...) {
		if err := s.SaveGrant(ctx, store.GrantRecord{JTI: jti, AgentID: "agt_x", IssuedAt: storetest.T0, ExpiresAt: storetest.T0, CreatedAt: storetest.T0}); err != nil {
			t.Fatal(err)
		}
	}
	tx, err := outside(t, schema).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	if _, err := tx.Exec(ctx, `SELECT 1 FROM grants WHERE jti = $1 FOR UPDATE`, held); err != nil {
		t.Fatal(err)
	}
	return tx
}

// A batch's statements are planned once per connection and by index
// (plan_cache_mode force_generic_plan, enable_seqscan off), for the
// batch's transaction only: a step run alone plans as the database has it.
func TestBatchPlannerSettings(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	for _, tc := range []struct {
		name            string
		opts            []postgres.Option
		wantMode, wantS string
	}{
		{"batch", nil, "force_generic_plan", "off"},
		{"alone", []postgres.Option{postgres.WithGroupCommit(0, 1, 0)}, "auto", "on"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t, tc.opts...)
			n := liveNegotiation(t, s)
			step := applyFrame(t, n.Brand.AgentID, `{"type":"message","content":"hello"}`, storetest.T0.Add(time.Second))
			var mode, seq string
			if _, _, err := s.Update(ctx, n.ID, func(tx store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
				var err error
				if mode, seq, err = postgres.PlannerSettings(tx); err != nil {
					return negotiation.Outcome{}, err
				}
				return step(tx, st)
			}); err != nil {
				t.Fatal(err)
			}
			if mode != tc.wantMode || seq != tc.wantS {
				t.Errorf("in the step's transaction: plan_cache_mode %q, enable_seqscan %q; want %q, %q", mode, seq, tc.wantMode, tc.wantS)
			}
		})
	}
}

// A full batch commits beside a partial one still in flight by default
// (DefaultFullBatches), and not when the batches are set explicitly: a
// step that waits holds the one ordinary slot (a pool of 4: one batch at
// a time) while a full batch of four other negotiations forms behind it.
// Each of the four notes whether it ran while the waiting step was still
// inside its own step.
func TestGroupCommitFullBatchBeside(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name    string
		batches int
		beside  bool
	}{{"default", 0, true}, {"one batch set", 1, false}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := newStore(t, postgres.WithMaxConns(4), postgres.WithGroupCommit(50*time.Millisecond, 4, c.batches))
			ctx := t.Context()
			blocker := liveNegotiation(t, s)
			negs := []negotiation.State{liveNegotiation(t, s), liveNegotiation(t, s), liveNegotiation(t, s), liveNegotiation(t, s)}
			release, entered := make(chan struct{}), make(chan struct{})
			var enter, released sync.Once
			defer released.Do(func() { close(release) })
			var inBlocker atomic.Bool
			var beside, after atomic.Int32 // steps of the four run during, and after, the blocker's step
			var wg sync.WaitGroup
			wg.Go(func() {
				frame := applyFrame(t, blocker.Brand.AgentID, `{"type":"message","content":"first"}`, storetest.T0.Add(time.Second))
				if _, _, err := s.Update(ctx, blocker.ID, func(tx store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
					inBlocker.Store(true)
					enter.Do(func() { close(entered) })
					<-release
					inBlocker.Store(false)
					return frame(tx, st)
				}); err != nil {
					t.Error(err)
				}
			})
			<-entered
			returned := make(chan struct{}, len(negs))
			for _, n := range negs {
				frame := applyFrame(t, n.Brand.AgentID, `{"type":"message","content":"hi"}`, storetest.T0.Add(time.Second))
				wg.Go(func() {
					_, _, err := s.Update(ctx, n.ID, func(tx store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
						if inBlocker.Load() {
							beside.Add(1)
						} else {
							after.Add(1)
						}
						return frame(tx, st)
					})
					if err != nil {
						t.Error(err)
					}
					returned <- struct{}{}
				})
			}
			if c.beside {
				// The four commit while the blocker still waits.
				timeout := time.After(30 * time.Second)
				for range negs {
					select {
					case <-returned:
					case <-timeout:
						t.Fatal("the full batch did not commit beside the partial one")
					}
				}
			} else {
				deadline := time.Now().Add(30 * time.Second)
				for s.Queued() != len(negs) {
					if time.Now().After(deadline) {
						t.Fatalf("%d steps queued, want %d", s.Queued(), len(negs))
					}
					runtime.Gosched()
				}
			}
			released.Do(func() { close(release) })
			wg.Wait()
			want := int32(0)
			if c.beside {
				want = int32(len(negs))
			}
			if beside.Load() != want || beside.Load()+after.Load() != int32(len(negs)) {
				t.Fatalf("steps run beside the blocker's: %d, after it: %d; want %d beside of %d", beside.Load(), after.Load(), want, len(negs))
			}
		})
	}
}
