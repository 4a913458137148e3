package postgres_test

import (
	"context"
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/venuehq/venue/chaos/faultproxy"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/store/postgres"
	"github.com/venuehq/venue/store/storetest"
	"github.com/venuehq/venue/wire"
)

// proxiedStore is a migrated store in a fresh schema whose every
// connection goes through a Postgres-reading fault proxy.
func proxiedStore(t *testing.T, opts ...postgres.Option) (*postgres.Store, *faultproxy.Proxy) {
	t.Helper()
	base := storetest.DatabaseURL(t)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	p, err := faultproxy.Listen("127.0.0.1:0", u.Host, faultproxy.Postgres)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	u.Host = p.Addr()
	q := u.Query()
	q.Set("sslmode", "disable")
	u.RawQuery = q.Encode()
	schema := storetest.Schema(t, base)
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
	return s, p
}

func commitModes() map[string][]postgres.Option {
	return map[string][]postgres.Option{
		"group commit": nil,
		"alone":        {postgres.WithGroupCommit(0, 1, 0)},
	}
}

// A COMMIT that reaches Postgres and whose answer is lost: the step is
// resolved by asking the database, and Update returns the committed result
// (the ack) instead of an error.
func TestLostCommitAnswerThatLandedIsTheAck(t *testing.T) {
	t.Parallel()
	for name, opts := range commitModes() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, p := proxiedStore(t, opts...)
			live := liveNegotiation(t, s)
			p.DropCommitReply(1, "INSERT INTO transcript", false)
			st, out, err := s.Update(t.Context(), live.ID, applyFrame(t, live.Brand.AgentID,
				`{"type":"message","id":"m1","content":"hello"}`, storetest.T0.Add(time.Second)))
			if err != nil {
				t.Fatalf("Update after a lost COMMIT answer: %v", err)
			}
			if p.Dropped() != 1 {
				t.Fatalf("the proxy dropped %d COMMIT answers, want 1", p.Dropped())
			}
			if out.Ack == nil || len(out.Entries) != 1 || st.LastSeq != live.LastSeq+1 {
				t.Fatalf("result: ack %s, %d entries, last seq %d (was %d)", out.Ack, len(out.Entries), st.LastSeq, live.LastSeq)
			}
			entries, err := s.Transcript(t.Context(), live.ID, live.LastSeq)
			if err != nil || len(entries) != 1 || entries[0].Hash != out.Entries[0].Hash {
				t.Fatalf("stored transcript after the step: %v, %v", entries, err)
			}
		})
	}
}

// A COMMIT whose answer is lost while the database cannot be reached at
// all: outcome_unknown, never "nothing changed"; once it can be reached, a
// resend with the same id answers with the truth (the original ack).
func TestLostCommitAnswerUnreachableIsOutcomeUnknown(t *testing.T) {
	t.Parallel()
	for name, opts := range commitModes() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, p := proxiedStore(t, append(opts, postgres.WithResolveWindow(300*time.Millisecond))...)
			live := liveNegotiation(t, s)
			frame := `{"type":"message","id":"m1","content":"hello"}`
			p.DropCommitReply(1, "INSERT INTO transcript", true)
			_, _, err := s.Update(t.Context(), live.ID, applyFrame(t, live.Brand.AgentID, frame, storetest.T0.Add(time.Second)))
			var we *wire.Error
			if !errors.Is(err, store.ErrOutcomeUnknown) || !errors.As(err, &we) || we.Code != wire.CodeOutcomeUnknown {
				t.Fatalf("err = %v, want outcome_unknown", err)
			}
			if errors.Is(err, store.ErrUnavailable) {
				t.Fatalf("an unknown outcome must not say unavailable (nothing changed): %v", err)
			}
			p.Cut(false)
			st, out, err := s.Update(t.Context(), live.ID, applyFrame(t, live.Brand.AgentID, frame, storetest.T0.Add(2*time.Second)))
			if err != nil || !out.Replay || out.Ack == nil {
				t.Fatalf("resend: replay %v ack %s err %v; want the original ack", out.Replay, out.Ack, err)
			}
			if st.LastSeq != live.LastSeq+1 {
				t.Fatalf("last seq %d, want %d: the frame landed exactly once", st.LastSeq, live.LastSeq+1)
			}
		})
	}
}

// resolve tells committed from aborted transactions by their id.
func TestResolveTransactionStatus(t *testing.T) {
	t.Parallel()
	s, _ := faultStore(t)
	conn, err := pgx.Connect(t.Context(), storetest.DatabaseURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	xidOf := func(commit bool) string {
		tx, err := conn.Begin(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		var xid string
		if err := tx.QueryRow(t.Context(), `SELECT pg_current_xact_id()::text`).Scan(&xid); err != nil {
			t.Fatal(err)
		}
		if commit {
			err = tx.Commit(t.Context())
		} else {
			err = tx.Rollback(t.Context())
		}
		if err != nil {
			t.Fatal(err)
		}
		return xid
	}
	if got := s.ResolveXID(xidOf(true)); got != "committed" {
		t.Fatalf("committed transaction resolved %s", got)
	}
	if got := s.ResolveXID(xidOf(false)); got != "aborted" {
		t.Fatalf("rolled back transaction resolved %s", got)
	}
	if got := s.ResolveXID(""); got != "unknown" {
		t.Fatalf("no transaction id resolved %s", got)
	}
}
