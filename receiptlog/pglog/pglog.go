// Package pglog keeps the receipt log (PROTOCOL.md "The receipt log") in
// the venue's Postgres schema (migrations/00020_receipt_log.sql): the
// entries, the one head row every append locks, the log keys and the queue
// a trigger on the negotiations table fills in each ending's transaction.
package pglog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/receiptlog"
)

// Store is receiptlog.Store on a pgx pool whose search_path is the venue's
// schema.
type Store struct {
	pool *pgxpool.Pool
}

// New returns the log on pool (migrated by the venue's store).
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

var _ receiptlog.Store = (*Store)(nil)

// Sequence implements receiptlog.Store: one transaction holding the head
// row's lock.
func (s *Store) Sequence(ctx context.Context, fn func(tx receiptlog.Tx) error) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		t := &pgTx{ctx: ctx, tx: tx}
		var cp *string
		if err := tx.QueryRow(ctx, `SELECT size, checkpoint, key_id FROM receipt_log_head FOR UPDATE`).Scan(&t.head.Size, &cp, &t.head.KeyID); err != nil {
			return fmt.Errorf("pglog: lock the head: %w", err)
		}
		if cp != nil {
			t.head.Checkpoint = []byte(*cp)
		}
		return fn(t)
	})
}

// Entries implements receiptlog.Store.
func (s *Store) Entries(ctx context.Context, start, end int64) ([]receiptlog.Entry, error) {
	rows, err := s.pool.Query(ctx, `SELECT idx, negotiation_id, receipt FROM receipt_log WHERE idx >= $1 AND idx < $2 ORDER BY idx`, start, end)
	if err != nil {
		return nil, fmt.Errorf("pglog: entries %d-%d: %w", start, end, err)
	}
	es, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (receiptlog.Entry, error) {
		var e receiptlog.Entry
		err := r.Scan(&e.Index, &e.NegotiationID, &e.Receipt)
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("pglog: entries %d-%d: %w", start, end, err)
	}
	return es, nil
}

// Index implements receiptlog.Store.
func (s *Store) Index(ctx context.Context, id string) (int64, error) {
	var i int64
	err := s.pool.QueryRow(ctx, `SELECT idx FROM receipt_log WHERE negotiation_id = $1`, id).Scan(&i)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("%w: negotiation %s", receiptlog.ErrNotFound, id)
	}
	if err != nil {
		return 0, fmt.Errorf("pglog: index of %s: %w", id, err)
	}
	return i, nil
}

// Head implements receiptlog.Store.
func (s *Store) Head(ctx context.Context) (receiptlog.Head, error) {
	var h receiptlog.Head
	var cp *string
	if err := s.pool.QueryRow(ctx, `SELECT size, checkpoint, key_id FROM receipt_log_head`).Scan(&h.Size, &cp, &h.KeyID); err != nil {
		return h, fmt.Errorf("pglog: head: %w", err)
	}
	if cp != nil {
		h.Checkpoint = []byte(*cp)
	}
	return h, nil
}

// Keys implements receiptlog.Store.
func (s *Store) Keys(ctx context.Context, create func() ([]byte, error)) ([]receiptlog.Key, error) {
	keys, err := s.keys(ctx)
	if err != nil || len(keys) > 0 || create == nil {
		return keys, err
	}
	sealed, err := create()
	if err != nil {
		return nil, fmt.Errorf("pglog: create the log key: %w", err)
	}
	// Whichever node inserts first wins; the others read its key.
	if _, err := s.pool.Exec(ctx, `INSERT INTO receipt_log_keys (id, key, created_at) VALUES (1, $1, now()) ON CONFLICT (id) DO NOTHING`, sealed); err != nil {
		return nil, fmt.Errorf("pglog: create the log key: %w", err)
	}
	return s.keys(ctx)
}

func (s *Store) keys(ctx context.Context) ([]receiptlog.Key, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, key, created_at, retired_at, retired_size FROM receipt_log_keys ORDER BY id DESC`)
	if err != nil {
		return nil, fmt.Errorf("pglog: log keys: %w", err)
	}
	keys, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (receiptlog.Key, error) {
		var k receiptlog.Key
		var retired *time.Time
		var size *int64
		err := r.Scan(&k.ID, &k.Sealed, &k.CreatedAt, &retired, &size)
		if retired != nil {
			k.RetiredAt = *retired
		}
		if size != nil {
			k.RetiredSize = *size
		}
		return k, err
	})
	if err != nil {
		return nil, fmt.Errorf("pglog: log keys: %w", err)
	}
	return keys, nil
}

// RotateKey implements receiptlog.Store.
func (s *Store) RotateKey(ctx context.Context, sealed []byte, now time.Time) (receiptlog.Key, error) {
	k := receiptlog.Key{Sealed: sealed, CreatedAt: now}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var size, keyID int64
		if err := tx.QueryRow(ctx, `SELECT size, key_id FROM receipt_log_head FOR UPDATE`).Scan(&size, &keyID); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(id), 0) + 1 FROM receipt_log_keys`).Scan(&k.ID); err != nil {
			return err
		}
		// The retiring key signed up to the head's size if it signed the
		// latest checkpoint; otherwise nothing new since it took over.
		if _, err := tx.Exec(ctx, `
			UPDATE receipt_log_keys SET retired_at = $1,
				retired_size = CASE WHEN id = $3 THEN $2 ELSE 0 END
			WHERE retired_at IS NULL`, now, size, keyID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO receipt_log_keys (id, key, created_at) VALUES ($1, $2, $3)`, k.ID, sealed, now)
		return err
	})
	if err != nil {
		return receiptlog.Key{}, fmt.Errorf("pglog: rotate the log key: %w", err)
	}
	return k, nil
}

// Enqueue implements receiptlog.Store: the trigger on negotiations queues
// every ending in its own transaction; this adds the ids again, harmless
// (an id already logged is dropped from the queue when its turn comes).
func (s *Store) Enqueue(ctx context.Context, ids ...string) error {
	if len(ids) == 0 {
		return nil
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO receipt_log_queue (negotiation_id) SELECT unnest($1::text[]) ON CONFLICT DO NOTHING`, ids); err != nil {
		return fmt.Errorf("pglog: enqueue: %w", err)
	}
	return nil
}

type pgTx struct {
	ctx  context.Context
	tx   pgx.Tx
	head receiptlog.Head
	done bool
}

func (t *pgTx) Head() receiptlog.Head { return t.head }

func (t *pgTx) Queued(limit int) ([]receiptlog.Queued, error) {
	rows, err := t.tx.Query(t.ctx, `
		SELECT q.negotiation_id, n.state FROM receipt_log_queue q
		LEFT JOIN negotiations n ON n.id = q.negotiation_id
		ORDER BY q.id LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("pglog: queue: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (receiptlog.Queued, error) {
		var q receiptlog.Queued
		var raw []byte
		if err := r.Scan(&q.NegotiationID, &raw); err != nil {
			return q, err
		}
		if raw != nil {
			var st negotiation.State
			if err := json.Unmarshal(raw, &st); err != nil {
				return q, fmt.Errorf("negotiation %s: decode state: %w", q.NegotiationID, err)
			}
			q.State = &st
		}
		return q, nil
	})
	if err != nil {
		return nil, fmt.Errorf("pglog: queue: %w", err)
	}
	return out, nil
}

func (t *pgTx) Logged(ids []string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := t.tx.Query(t.ctx, `SELECT negotiation_id FROM receipt_log WHERE negotiation_id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("pglog: logged: %w", err)
	}
	done, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("pglog: logged: %w", err)
	}
	for _, id := range done {
		out[id] = true
	}
	return out, nil
}

func (t *pgTx) Commit(entries []receiptlog.Entry, done []string, head receiptlog.Head) error {
	if t.done {
		return errors.New("pglog: commit called twice")
	}
	t.done = true
	if len(entries) > 0 {
		idx := make([]int64, len(entries))
		ids := make([]string, len(entries))
		toks := make([]string, len(entries))
		for i, e := range entries {
			if e.Index != t.head.Size+int64(i) {
				return fmt.Errorf("pglog: entry %d does not follow the log's size %d", e.Index, t.head.Size)
			}
			idx[i], ids[i], toks[i] = e.Index, e.NegotiationID, e.Receipt
		}
		if _, err := t.tx.Exec(t.ctx, `
			INSERT INTO receipt_log (idx, negotiation_id, receipt)
			SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[])`, idx, ids, toks); err != nil {
			return fmt.Errorf("pglog: append %d entries at %d: %w", len(entries), t.head.Size, err)
		}
	}
	if len(done) > 0 {
		if _, err := t.tx.Exec(t.ctx, `DELETE FROM receipt_log_queue WHERE negotiation_id = ANY($1)`, done); err != nil {
			return fmt.Errorf("pglog: dequeue: %w", err)
		}
	}
	if _, err := t.tx.Exec(t.ctx, `UPDATE receipt_log_head SET size = $1, checkpoint = $2, key_id = $3`, head.Size, string(head.Checkpoint), head.KeyID); err != nil {
		return fmt.Errorf("pglog: head: %w", err)
	}
	return nil
}
