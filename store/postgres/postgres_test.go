package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/venuehq/venue/migrations"
	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/store/postgres"
	"github.com/venuehq/venue/store/storetest"
)

// newStore returns a migrated store in a fresh schema, closed and dropped
// when t ends.
func newStore(t testing.TB, opts ...postgres.Option) *postgres.Store {
	t.Helper()
	url := storetest.DatabaseURL(t)
	schema := storetest.Schema(t, url)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	s, err := postgres.New(ctx, url, append([]postgres.Option{postgres.WithSchema(schema)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestContract(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.Store { return newStore(t) })
}

// A transcript row that already exists (a state and transcript out of step,
// or a lost race) is a conflict, never a fork: nothing of the step lands.
func TestTranscriptUniqueViolationIsConflict(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	st := liveNegotiation(t, s)
	if _, err := s.Pool().Exec(ctx, `INSERT INTO transcript (negotiation_id, seq, frame, hash, created_at)
		VALUES ($1, 1, '{}', 'x', now())`, st.ID); err != nil {
		t.Fatal(err)
	}
	_, _, err := s.Update(ctx, st.ID, applyFrame(t, st.Brand.AgentID, `{"type":"message","content":"hi"}`, storetest.T0.Add(time.Second)))
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("err = %v, want ErrConflict", err)
	}
	if strings.Contains(err.Error(), "SQLSTATE") {
		t.Errorf("conflict message shows the database error: %v", err)
	}
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "23505" {
		t.Errorf("the unique violation is not reachable with errors.As: %v", err)
	}
	got, err := s.Negotiation(ctx, st.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.LastSeq != 0 {
		t.Fatalf("state saved with last seq %d", got.LastSeq)
	}
}

// Two stores on one schema are two nodes: their steps on one negotiation
// serialise on the row lock.
func TestTwoNodesNoFork(t *testing.T) {
	t.Parallel()
	a := newStore(t)
	ctx := t.Context()
	var schema string
	if err := a.Pool().QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		t.Fatal(err)
	}
	b, err := postgres.New(ctx, storetest.DatabaseURL(t), postgres.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	st := liveNegotiation(t, a)
	const each = 40
	var wg sync.WaitGroup
	for i, s := range []*postgres.Store{a, b, a, b} {
		from := st.Brand.AgentID
		if i%2 == 1 {
			from = st.Bouncer.AgentID
		}
		wg.Go(func() {
			for j := range each {
				frame := fmt.Sprintf(`{"type":"message","content":"%d/%d"}`, i, j)
				if _, _, err := s.Update(ctx, st.ID, applyFrame(t, from, frame, storetest.T0.Add(time.Second))); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	entries, err := b.Transcript(ctx, st.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 4*each {
		t.Fatalf("%d entries, want %d", len(entries), 4*each)
	}
	storetest.VerifyChain(t, entries)
}

// Steps that lock two grants in opposite orders deadlock; Postgres aborts
// one and Update runs it again, so both land. (Each step in a transaction
// of its own: in one batch the two steps would run one after the other.)
func TestDeadlockRetried(t *testing.T) {
	t.Parallel()
	s := newStore(t, postgres.WithGroupCommit(0, 1, 0))
	ctx := t.Context()
	for _, jti := range []string{"g1", "g2"} {
		if err := s.SaveGrant(ctx, store.GrantRecord{JTI: jti, AgentID: "agt_x", IssuedAt: storetest.T0, ExpiresAt: storetest.T0, CreatedAt: storetest.T0}); err != nil {
			t.Fatal(err)
		}
	}
	n1, n2 := liveNegotiation(t, s), liveNegotiation(t, s)
	var both sync.WaitGroup
	both.Add(2)
	step := func(first, second string, from string) store.Step {
		var once sync.Once
		frame := applyFrame(t, from, `{"type":"message","content":"spend"}`, storetest.T0.Add(time.Second))
		return func(tx store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
			if _, err := tx.GrantSpent("", first); err != nil {
				return negotiation.Outcome{}, err
			}
			once.Do(func() { both.Done(); both.Wait() }) // both hold their first lock
			if _, err := tx.GrantSpent("", second); err != nil {
				return negotiation.Outcome{}, err
			}
			if err := tx.AddGrantSpent("", first, 1); err != nil {
				return negotiation.Outcome{}, err
			}
			return frame(tx, st)
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	wg.Go(func() { _, _, errs[0] = s.Update(ctx, n1.ID, step("g1", "g2", n1.Brand.AgentID)) })
	wg.Go(func() { _, _, errs[1] = s.Update(ctx, n2.ID, step("g2", "g1", n2.Brand.AgentID)) })
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("a deadlocked step was not retried: %v", err)
		}
	}
	grants, err := s.Grants(ctx, "agt_x")
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range grants {
		if g.SpentCents != 1 {
			t.Fatalf("grant %s spent %d, want 1 (each step once)", g.JTI, g.SpentCents)
		}
	}
}

// The columns beside the state follow it: status, last_seq, next_wake_at
// (rounded up to the microsecond, never earlier than the clock).
func TestStateColumns(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	st := liveNegotiation(t, s)
	at := storetest.T0.Add(time.Second + 1) // a nanosecond past: not a whole microsecond
	after, _, err := s.Update(ctx, st.ID, applyFrame(t, st.Brand.AgentID,
		`{"type":"propose_terms","terms":{"amount_usd":10},"ttl_seconds":10}`, at))
	if err != nil {
		t.Fatal(err)
	}
	var status string
	var lastSeq int64
	var wake time.Time
	if err := s.Pool().QueryRow(ctx, `SELECT status, last_seq, next_wake_at FROM negotiations WHERE id = $1`, st.ID).
		Scan(&status, &lastSeq, &wake); err != nil {
		t.Fatal(err)
	}
	exact := after.NextWake()
	if status != "live" || lastSeq != 1 || wake.Before(exact) || wake.Sub(exact) >= time.Microsecond {
		t.Fatalf("columns: %s, %d, %v; state says live, 1, %v", status, lastSeq, wake, exact)
	}
	wakes, err := s.Wakes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(wakes) != 1 || wakes[0].At.Before(exact) {
		t.Fatalf("wakes %+v: want one, not before %v", wakes, exact)
	}
}

func TestMigrateIsIdempotent(t *testing.T) {
	t.Parallel()
	s := newStore(t) // migrated once
	ctx := t.Context()
	applied, err := s.Migrate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(applied) != 0 {
		t.Fatalf("second Migrate applied %v", applied)
	}
	v, err := s.SchemaVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	latest, err := migrations.Latest()
	if err != nil {
		t.Fatal(err)
	}
	if v != latest || v < 1 {
		t.Fatalf("schema version %d, latest migration %d", v, latest)
	}
}

// Errors never show the password of the database URL.
func TestPasswordRedacted(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	const pw = "s3cret-Pa55"
	for _, url := range []string{
		"postgres://venue:" + pw + "@127.0.0.1:1/test?sslmode=disable&connect_timeout=2",
		"postgres://venue@127.0.0.1:1/test?sslmode=disable&connect_timeout=2&password=" + pw,
		"host=127.0.0.1 port=1 user=venue password=" + pw + " dbname=test sslmode=disable connect_timeout=2",
		"postgres://venue:" + pw + "@127.0.0.1:1/test?sslmode=bogus",
	} {
		_, err := postgres.New(ctx, url)
		if err == nil {
			t.Fatalf("New(%s) connected", postgres.RedactURL(url))
		}
		if strings.Contains(err.Error(), pw) {
			t.Errorf("error shows the password: %v", err)
		}
		if r := postgres.RedactURL(url); strings.Contains(r, pw) || !strings.Contains(r, "xxxxx") {
			t.Errorf("RedactURL(%q) = %q", url, r)
		}
	}
}

var fixtureN atomic.Int64

func liveNegotiation(t testing.TB, s *postgres.Store) negotiation.State {
	t.Helper()
	ctx := t.Context()
	id := fmt.Sprint(fixtureN.Add(1))
	brand := store.Agent{ID: "agt_b" + id, Name: "B", Role: negotiation.RoleBrand, KeyHash: "kb" + id, CreatedAt: storetest.T0}
	bouncer := store.Agent{ID: "agt_o" + id, Name: "O", Role: negotiation.RoleBouncer, KeyHash: "ko" + id, CreatedAt: storetest.T0}
	offer := store.Offer{ID: "off_" + id, Brand: brand.ID, Bouncer: bouncer.ID, Body: []byte(`{"title":"t"}`), CreatedAt: storetest.T0}
	for _, err := range []error{s.CreateAgent(ctx, brand), s.CreateAgent(ctx, bouncer), s.CreateOffer(ctx, offer)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	st := negotiation.NewRequest("neg_"+id, offer.ID, offer.Body, brand.Party(), bouncer.Party(), false, storetest.T0)
	if err := s.CreateNegotiation(ctx, st); err != nil {
		t.Fatal(err)
	}
	st, _, err := s.Update(ctx, st.ID, func(_ store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
		return st.Start(storetest.T0)
	})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// applyFrame is a step applying one party frame at now.
func applyFrame(t testing.TB, from, frame string, now time.Time) store.Step {
	t.Helper()
	f, werr := negotiation.DecodeFrame([]byte(frame))
	if werr != nil {
		t.Fatal(werr)
	}
	return func(_ store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
		return st.Apply(from, f, now, nil)
	}
}

// TestStepWritesNoIndex: no index of negotiations holds a column a step
// writes, and the table keeps room on its pages, so a step's UPDATE can be
// a heap-only tuple (migration 00077; ARCHITECTURE.md "One frame's way").
// It failed while next_wake_at, moved by nearly every step, was indexed.
func TestStepWritesNoIndex(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := t.Context()
	rows, err := s.Pool().Query(ctx, `SELECT pg_get_indexdef(indexrelid) FROM pg_index WHERE indrelid = 'negotiations'::regclass`)
	if err != nil {
		t.Fatal(err)
	}
	defs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if len(defs) == 0 {
		t.Fatal("no indexes on negotiations")
	}
	word := regexp.MustCompile(`\b(state|last_seq|next_wake_at|updated_at)\b`)
	for _, d := range defs {
		if m := word.FindString(d); m != "" {
			t.Errorf("index on %s, a column every step writes: %s", m, d)
		}
	}
	var opts []string
	if err := s.Pool().QueryRow(ctx, `SELECT coalesce(reloptions, '{}') FROM pg_class WHERE oid = 'negotiations'::regclass`).Scan(&opts); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(opts, "fillfactor=70") {
		t.Errorf("negotiations options %v, want fillfactor=70", opts)
	}
}
