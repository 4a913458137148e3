package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/store/postgres"
	"github.com/venuehq/venue/store/storetest"
	"github.com/venuehq/venue/wire"
)

// faultStore is a migrated store in a fresh schema whose connections carry
// application_name = the schema (so a test can find and kill them), with
// short bounds.
func faultStore(t *testing.T, opts ...postgres.Option) (*postgres.Store, string) {
	t.Helper()
	base := storetest.DatabaseURL(t)
	schema := storetest.Schema(t, base)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("application_name", schema)
	u.RawQuery = q.Encode()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	s, err := postgres.New(ctx, u.String(), append([]postgres.Option{postgres.WithSchema(schema)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return s, schema
}

// outside opens a connection of its own (another client of the database)
// on schema.
func outside(t *testing.T, schema string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), storetest.DatabaseURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	if _, err := conn.Exec(t.Context(), `SET search_path = `+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	return conn
}

func isUnavailable(err error) bool {
	var we *wire.Error
	return errors.Is(err, store.ErrUnavailable) && errors.As(err, &we) && we.Code == wire.CodeUnavailable
}

// A row locked by another client: the frames waiting on it get
// `unavailable` once the lock timeout runs out (not when the caller's
// generous deadline does), nothing of them lands, and another
// negotiation's steps, reads and registrations go on meanwhile.
func TestRowLockedElsewhereIsUnavailable(t *testing.T) {
	t.Parallel()
	s, schema := faultStore(t, postgres.WithMaxConns(4), postgres.WithTimeouts(2*time.Second, 300*time.Millisecond, 5*time.Second))
	stuck, other := liveNegotiation(t, s), liveNegotiation(t, s)
	locker := outside(t, schema)
	tx, err := locker.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if _, err := tx.Exec(t.Context(), `SELECT 1 FROM negotiations WHERE id = $1 FOR UPDATE`, stuck.ID); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // far past the bounds
	defer cancel()
	const blocked = 6 // more than the pool: the waits on the lock are capped, the rest of the store keeps connections
	var wg sync.WaitGroup
	errs := make([]error, blocked)
	for i := range blocked {
		wg.Go(func() {
			_, _, errs[i] = s.Update(ctx, stuck.ID, applyFrame(t, stuck.Brand.AgentID,
				fmt.Sprintf(`{"type":"message","content":"blocked %d"}`, i), storetest.T0.Add(time.Second)))
		})
	}
	// Meanwhile the other negotiation moves, and the rest of the store answers.
	for j := range 5 {
		if _, _, err := s.Update(ctx, other.ID, applyFrame(t, other.Brand.AgentID,
			fmt.Sprintf(`{"type":"message","content":"free %d"}`, j), storetest.T0.Add(time.Second))); err != nil {
			t.Fatalf("a step on another negotiation: %v", err)
		}
	}
	if _, err := s.Negotiation(ctx, other.ID); err != nil {
		t.Fatalf("read another negotiation: %v", err)
	}
	if err := s.CreateAgent(ctx, store.Agent{ID: "agt_new", Name: "N", Role: "brand", KeyHash: "knew", CreatedAt: storetest.T0}); err != nil {
		t.Fatalf("register: %v", err)
	}
	wg.Wait()
	if ctx.Err() != nil {
		t.Fatal("the blocked steps waited for the caller's deadline, not the lock timeout")
	}
	for i, err := range errs {
		if !isUnavailable(err) {
			t.Fatalf("blocked step %d: err = %v, want unavailable", i, err)
		}
	}
	if err := tx.Rollback(t.Context()); err != nil {
		t.Fatal(err)
	}
	got, err := s.Transcript(ctx, stuck.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Fatalf("a refused step left %d transcript rows", len(got))
	}
	// The lock gone, the same negotiation moves again.
	if _, _, err := s.Update(ctx, stuck.ID, applyFrame(t, stuck.Brand.AgentID, `{"type":"message","content":"after"}`, storetest.T0.Add(time.Second))); err != nil {
		t.Fatalf("after the lock went: %v", err)
	}
}

// Every connection of the pool killed by the server (pg_terminate_backend,
// as a failover or an operator would): the store recovers on its own, with
// no step lost or doubled.
func TestConnectionsTerminated(t *testing.T) {
	t.Parallel()
	s, schema := faultStore(t, postgres.WithMaxConns(4))
	n := liveNegotiation(t, s)
	ctx := t.Context()
	admin := outside(t, schema)
	kill := func() int {
		t.Helper()
		var killed int
		if err := admin.QueryRow(ctx, `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid))
			FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()`, schema).Scan(&killed); err != nil {
			t.Fatal(err)
		}
		return killed
	}
	landed := 0
	for round := range 3 {
		// Warm several connections, then kill them all.
		var wg sync.WaitGroup
		for i := range 4 {
			wg.Go(func() {
				if _, err := s.Negotiation(ctx, n.ID); err != nil {
					t.Errorf("read before the kill: %v", err)
				}
				_ = i
			})
		}
		wg.Wait()
		if k := kill(); k == 0 {
			t.Fatalf("round %d: no connection of the store to kill", round)
		}
		// A step right after: the connection it takes may be dead; it is
		// replaced and the step lands once.
		if _, _, err := s.Update(ctx, n.ID, applyFrame(t, n.Brand.AgentID,
			fmt.Sprintf(`{"type":"message","content":"round %d"}`, round), storetest.T0.Add(time.Second))); err != nil {
			if !isUnavailable(err) {
				t.Fatalf("round %d: step after the kill: %v (want success, or unavailable)", round, err)
			}
		} else {
			landed++
		}
		// Within a few tries everything answers again.
		var err error
		for range 5 {
			if _, err = s.Negotiation(ctx, n.ID); err == nil {
				break
			}
			if !isUnavailable(err) {
				t.Fatalf("round %d: read after the kill: %v (want unavailable while recovering)", round, err)
			}
		}
		if err != nil {
			t.Fatalf("round %d: the store did not recover: %v", round, err)
		}
		if _, _, err := s.Update(ctx, n.ID, applyFrame(t, n.Brand.AgentID,
			fmt.Sprintf(`{"type":"message","content":"again %d"}`, round), storetest.T0.Add(time.Second))); err != nil {
			t.Fatalf("round %d: a later step: %v", round, err)
		}
		landed++
	}
	entries, err := s.Transcript(ctx, n.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != landed {
		t.Fatalf("%d transcript rows, %d steps acknowledged", len(entries), landed)
	}
	storetest.VerifyChain(t, entries)
}
