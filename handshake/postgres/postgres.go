// Package postgres is the handshake.Store on PostgreSQL, on the pool of
// the venue's store (store/postgres.Store.Pool): the tables are created by
// migrations/00006_handshake.sql with the rest of the schema. Atomically
// is one transaction holding a transaction-scoped advisory lock per key,
// so a rule's limit counts and its writes are serialised on every node.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/venuehq/venue/handshake"
	"github.com/venuehq/venue/internal/pgutil"
)

// Store implements handshake.Store on a pgx pool whose search_path names
// the venue's schema.
type Store struct {
	pool *pgxpool.Pool
}

var _ handshake.Store = (*Store)(nil)

// New returns the store on pool (migrated by the venue's store).
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// maxAttempts bounds the re-runs of a transaction that lost a deadlock or
// a serialization race to another.
const maxAttempts = 5

// Atomically implements handshake.Store. A transaction that loses a
// deadlock to another (two expiry sweeps locking rows in different
// orders) is run again, fn included.
func (s *Store) Atomically(ctx context.Context, keys []string, fn func(tx handshake.Tx) error) error {
	keys = slices.Clone(keys)
	slices.Sort(keys)
	keys = slices.Compact(keys)
	var err error
	for range maxAttempts {
		err = s.attempt(ctx, keys, fn)
		if !retryable(err) {
			return err
		}
	}
	return err
}

func (s *Store) attempt(ctx context.Context, keys []string, fn func(tx handshake.Tx) error) error {
	ptx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("postgres: begin: %w", err)
	}
	defer func() { _ = ptx.Rollback(context.WithoutCancel(ctx)) }()
	if len(keys) > 0 {
		// One round trip; unnest yields the keys in array order (sorted
		// above), so every transaction takes its locks in the same order.
		if _, err := ptx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('handshake ' || k, 7))
			FROM unnest($1::text[]) AS k`, keys); err != nil {
			return fmt.Errorf("postgres: lock %v: %w", keys, err)
		}
	}
	t := &tx{ctx: ctx, tx: ptx}
	if err := fn(t); err != nil {
		return err
	}
	if err := ptx.Commit(ctx); err != nil {
		return fmt.Errorf("postgres: commit: %w", err)
	}
	return nil
}

func retryable(err error) bool { return pgutil.Retryable(err) }

// tx implements handshake.Tx on one pgx transaction.
type tx struct {
	ctx context.Context
	tx  pgx.Tx
}

func notFound(kind, id string) error {
	return fmt.Errorf("postgres: %s %s: %w", kind, id, handshake.ErrNotFound)
}

// since is the lower bound of a window: -infinity for the zero time.
func since(t time.Time) any {
	if t.IsZero() {
		return pgtypeNegInf
	}
	return t
}

var pgtypeNegInf = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)

func (t *tx) exec(what, sql string, args ...any) error {
	if _, err := t.tx.Exec(t.ctx, sql, args...); err != nil {
		return fmt.Errorf("postgres: %s: %w", what, err)
	}
	return nil
}

// count runs a count(*) query.
func (t *tx) count(what, sql string, args ...any) (int, error) {
	var n int
	if err := t.tx.QueryRow(t.ctx, sql, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("postgres: count %s: %w", what, err)
	}
	return n, nil
}

// Expire implements handshake.Tx: one statement for both tables.
func (t *tx) Expire(now time.Time) error {
	return t.exec("expire", `WITH r AS (
			UPDATE contact_requests SET status = 'expired', decided_at = expires_at, decided_by = 'expiry'
			WHERE status = 'pending' AND expires_at <= $1 RETURNING 1)
		UPDATE agreements SET status = 'expired', ended_at = expires_at, ended_by = 'expiry'
		WHERE status = 'active' AND expires_at <= $1`, now)
}

// Policy implements handshake.Tx.
func (t *tx) Policy(agentID string) (handshake.PolicyRecord, error) {
	p := handshake.PolicyRecord{AgentID: agentID}
	err := t.tx.QueryRow(t.ctx, `SELECT policy, owner_set, updated_at FROM handshake_policies WHERE agent_id = $1`, agentID).
		Scan(&p.Policy, &p.OwnerSet, &p.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return p, notFound("policy", agentID)
	}
	p.UpdatedAt = p.UpdatedAt.UTC()
	return p, err
}

// SetPolicy implements handshake.Tx.
func (t *tx) SetPolicy(p handshake.PolicyRecord) error {
	return t.exec("set policy", `INSERT INTO handshake_policies (agent_id, policy, owner_set, updated_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (agent_id) DO UPDATE SET policy = $2, owner_set = $3, updated_at = $4`, p.AgentID, p.Policy, p.OwnerSet, p.UpdatedAt)
}

// Owner implements handshake.Tx.
func (t *tx) Owner(agentID string) (handshake.Owner, error) {
	o := handshake.Owner{AgentID: agentID}
	var confirmed *time.Time
	err := t.tx.QueryRow(t.ctx, `SELECT account, named_at, confirmed_at FROM agent_owners WHERE agent_id = $1`, agentID).
		Scan(&o.Account, &o.NamedAt, &confirmed)
	if errors.Is(err, pgx.ErrNoRows) {
		return o, notFound("owner", agentID)
	}
	o.NamedAt = o.NamedAt.UTC()
	if confirmed != nil {
		o.ConfirmedAt = confirmed.UTC()
	}
	return o, err
}

// SetOwner implements handshake.Tx.
func (t *tx) SetOwner(o handshake.Owner) error {
	var confirmed any
	if o.Confirmed() {
		confirmed = o.ConfirmedAt
	}
	return t.exec("set owner", `INSERT INTO agent_owners (agent_id, account, named_at, confirmed_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (agent_id) DO UPDATE SET account = $2, named_at = $3, confirmed_at = $4`, o.AgentID, o.Account, o.NamedAt, confirmed)
}

// DeleteOwner implements handshake.Tx.
func (t *tx) DeleteOwner(agentID string) error {
	return t.exec("delete owner", `DELETE FROM agent_owners WHERE agent_id = $1`, agentID)
}

// OwnedBy implements handshake.Tx.
func (t *tx) OwnedBy(account string) ([]string, error) {
	rows, err := t.tx.Query(t.ctx, `SELECT agent_id FROM agent_owners WHERE account = $1 AND confirmed_at IS NOT NULL ORDER BY agent_id`, account)
	if err != nil {
		return nil, fmt.Errorf("handshake: owned by: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("handshake: owned by: %w", err)
	}
	if ids == nil {
		ids = []string{}
	}
	return ids, nil
}

// Audit implements handshake.Tx.
func (t *tx) Audit(e handshake.AuditEntry) error {
	return t.exec("audit", `INSERT INTO audit_log (at, actor, action, subject, detail) VALUES ($1, $2, $3, $4, $5)`,
		e.At, e.Actor, e.Action, e.Subject, e.Detail)
}

// AuditLog implements handshake.Tx.
func (t *tx) AuditLog(from time.Time, limit int) ([]handshake.AuditEntry, error) {
	rows, err := t.tx.Query(t.ctx, `SELECT id, at, actor, action, subject, detail FROM audit_log WHERE at > $1 ORDER BY id LIMIT $2`, since(from), limit)
	if err != nil {
		return nil, fmt.Errorf("postgres: audit log: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (handshake.AuditEntry, error) {
		var e handshake.AuditEntry
		err := r.Scan(&e.ID, &e.At, &e.Actor, &e.Action, &e.Subject, &e.Detail)
		e.At = e.At.UTC()
		return e, err
	})
}

// AddEvent implements handshake.Tx.
func (t *tx) AddEvent(e handshake.Event) error {
	return t.exec("add event", `WITH old AS (DELETE FROM notification_events WHERE at < $4 RETURNING 1)
		INSERT INTO notification_events (agent_id, type, at) VALUES ($1, $2, $3)`, e.AgentID, e.Type, e.At, e.At.Add(-handshake.NotifyWindow))
}

// TakeEvents implements handshake.Tx.
func (t *tx) TakeEvents(agentID string, from time.Time) ([]handshake.Event, error) {
	rows, err := t.tx.Query(t.ctx, `DELETE FROM notification_events WHERE agent_id = $1 RETURNING id, type, at`, agentID)
	if err != nil {
		return nil, fmt.Errorf("postgres: take events: %w", err)
	}
	type row struct {
		id int64
		ev handshake.Event
	}
	all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
		x := row{ev: handshake.Event{AgentID: agentID}}
		err := r.Scan(&x.id, &x.ev.Type, &x.ev.At)
		x.ev.At = x.ev.At.UTC()
		return x, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: take events: %w", err)
	}
	slices.SortFunc(all, func(a, b row) int { return int(a.id - b.id) })
	var out []handshake.Event
	for _, x := range all {
		if from.IsZero() || x.ev.At.After(from) {
			out = append(out, x.ev)
		}
	}
	return out, nil
}

// Hit implements handshake.Tx.
func (t *tx) Hit(kind, key string, at time.Time) error {
	return t.exec("hit", `WITH old AS (DELETE FROM limit_hits WHERE kind = $1 AND key = $2 AND at < $4 RETURNING 1)
		INSERT INTO limit_hits (kind, key, at) VALUES ($1, $2, $3)`, kind, key, at, at.Add(-time.Hour))
}

// Hits implements handshake.Tx.
func (t *tx) Hits(kind, key string, from time.Time) (int, error) {
	return t.count("hits", `SELECT count(*) FROM limit_hits WHERE kind = $1 AND key = $2 AND at > $3`, kind, key, since(from))
}

// purges are Tx.Purge's deletes: each takes the cutoff ($1) and the limit
// ($2), and deletes the oldest rows first.
var purges = []struct {
	what, sql string
	count     func(*handshake.Purged) *int
	cut       func(handshake.PurgeBefore) time.Time
}{
	{"sign-ins", `DELETE FROM owner_sign_ins WHERE secret_hash IN (
		SELECT secret_hash FROM owner_sign_ins WHERE created_at < $1 ORDER BY created_at LIMIT $2)`,
		func(p *handshake.Purged) *int { return &p.SignIns }, func(b handshake.PurgeBefore) time.Time { return b.SignIns }},
	{"audit log", `DELETE FROM audit_log WHERE id IN (SELECT id FROM audit_log WHERE at < $1 ORDER BY at LIMIT $2)`,
		func(p *handshake.Purged) *int { return &p.Audit }, func(b handshake.PurgeBefore) time.Time { return b.Audit }},
	{"messages", `DELETE FROM direct_messages WHERE id IN (SELECT id FROM direct_messages WHERE at < $1 ORDER BY at LIMIT $2)`,
		func(p *handshake.Purged) *int { return &p.Messages }, func(b handshake.PurgeBefore) time.Time { return b.Messages }},
	{"requests", `DELETE FROM contact_requests WHERE id IN (
		SELECT id FROM contact_requests WHERE status <> 'pending' AND COALESCE(decided_at, expires_at) < $1
		ORDER BY COALESCE(decided_at, expires_at) LIMIT $2)`,
		func(p *handshake.Purged) *int { return &p.Requests }, func(b handshake.PurgeBefore) time.Time { return b.Requests }},
	{"tasks", `DELETE FROM agent_tasks WHERE id IN (
		SELECT id FROM agent_tasks WHERE status <> 'open' AND completed_at < $1 ORDER BY completed_at LIMIT $2)`,
		func(p *handshake.Purged) *int { return &p.Tasks }, func(b handshake.PurgeBefore) time.Time { return b.Tasks }},
}

// Purge implements handshake.Tx (indexes of migration 00070 serve it).
func (t *tx) Purge(b handshake.PurgeBefore, limit int) (handshake.Purged, error) {
	var p handshake.Purged
	for _, q := range purges {
		cut := q.cut(b)
		if cut.IsZero() {
			continue
		}
		tag, err := t.tx.Exec(t.ctx, q.sql, cut, limit)
		if err != nil {
			return p, fmt.Errorf("postgres: purge %s: %w", q.what, err)
		}
		*q.count(&p) = int(tag.RowsAffected())
	}
	return p, nil
}
