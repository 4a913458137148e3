// Package webhookspg is the webhooks' Store (package webhooks) on
// Postgres, in the venue's schema (migration 00060), beside the event log
// it reads (events/eventspg's agent_events and agent_event_heads). The
// nodes share it: feeding and claiming lock rows with SKIP LOCKED, so each
// event is queued once and each delivery attempted by one node at a time.
package webhookspg

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/venuehq/venue/internal/pgutil"
	"github.com/venuehq/venue/webhooks"
)

// feedWebhooks and feedEvents bound one Feed: webhooks fed, events per webhook.
const (
	feedWebhooks = 100
	feedEvents   = 1000
)

// Store is webhooks.Store on a pool whose search_path is the venue's schema.
type Store struct{ pool *pgxpool.Pool }

// New returns the store on pool.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

var _ webhooks.Store = (*Store)(nil)

// Put implements webhooks.Store: the cursor starts at the agent's last
// committed event.
func (s *Store) Put(ctx context.Context, w webhooks.Webhook) error {
	evs := w.Events
	if evs == nil {
		evs = []string{}
	}
	_, err := s.pool.Exec(ctx, `INSERT INTO agent_webhooks (agent_id, url, events, secret, created_at, disabled_at, cursor_n)
		VALUES ($1, $2, $3, $4, $5, NULL, COALESCE((SELECT n FROM agent_event_heads WHERE agent_id = $1), 0))
		ON CONFLICT (agent_id) DO UPDATE SET url = EXCLUDED.url, events = EXCLUDED.events, secret = EXCLUDED.secret,
			created_at = EXCLUDED.created_at, disabled_at = NULL, cursor_n = EXCLUDED.cursor_n`,
		w.AgentID, w.URL, evs, w.Secret, w.CreatedAt)
	return err
}

// Get implements webhooks.Store.
func (s *Store) Get(ctx context.Context, agentID string) (webhooks.Webhook, error) {
	w := webhooks.Webhook{AgentID: agentID}
	var disabled *time.Time
	err := s.pool.QueryRow(ctx, `SELECT url, events, secret, created_at, disabled_at FROM agent_webhooks WHERE agent_id = $1`, agentID).
		Scan(&w.URL, &w.Events, &w.Secret, &w.CreatedAt, &disabled)
	if errors.Is(err, pgx.ErrNoRows) {
		return w, webhooks.ErrNotFound
	}
	w.CreatedAt, w.DisabledAt = w.CreatedAt.UTC(), pgutil.UTC(disabled)
	if len(w.Events) == 0 {
		w.Events = nil
	}
	return w, err
}

// Delete implements webhooks.Store.
func (s *Store) Delete(ctx context.Context, agentID string) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM agent_webhooks WHERE agent_id = $1`, agentID)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return webhooks.ErrNotFound
		}
		_, err = tx.Exec(ctx, `DELETE FROM webhook_deliveries WHERE agent_id = $1 AND ended_at IS NULL`, agentID)
		return err
	})
}

// SetSecret implements webhooks.Store.
func (s *Store) SetSecret(ctx context.Context, agentID string, key []byte) error {
	tag, err := s.pool.Exec(ctx, `UPDATE agent_webhooks SET secret = $2 WHERE agent_id = $1`, agentID, key)
	if err == nil && tag.RowsAffected() == 0 {
		return webhooks.ErrNotFound
	}
	return err
}

// Feed implements webhooks.Store: the webhooks behind their agent's head
// are locked (skipping those another node feeds), their new events copied
// into deliveries and their cursors moved, in one transaction.
func (s *Store) Feed(ctx context.Context, now time.Time) (int, error) {
	n := 0
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		n = 0
		rows, err := tx.Query(ctx, `SELECT w.agent_id, w.cursor_n, h.n, w.events FROM agent_webhooks w
			JOIN agent_event_heads h ON h.agent_id = w.agent_id
			WHERE w.disabled_at IS NULL AND h.n > w.cursor_n
			ORDER BY w.agent_id LIMIT $1 FOR UPDATE OF w SKIP LOCKED`, feedWebhooks)
		if err != nil {
			return err
		}
		type behind struct {
			agent      string
			from, head int64
			types      []string
		}
		list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (behind, error) {
			var b behind
			err := r.Scan(&b.agent, &b.from, &b.head, &b.types)
			return b, err
		})
		if err != nil {
			return err
		}
		for _, b := range list {
			upto := min(b.head, b.from+feedEvents)
			tag, err := tx.Exec(ctx, `INSERT INTO webhook_deliveries (agent_id, event_id, type, negotiation_id, event_created_at, data, next_at)
				SELECT agent_id, id, type, negotiation_id, created_at, data, $5 FROM agent_events
				WHERE agent_id = $1 AND n > $2 AND n <= $3 AND (cardinality($4::text[]) = 0 OR type = ANY($4::text[]))
				ON CONFLICT DO NOTHING`, b.agent, b.from, upto, b.types, now)
			if err != nil {
				return err
			}
			n += int(tag.RowsAffected())
			if _, err := tx.Exec(ctx, `UPDATE agent_webhooks SET cursor_n = $2 WHERE agent_id = $1`, b.agent, upto); err != nil {
				return err
			}
		}
		return nil
	})
	return n, err
}

// Claim implements webhooks.Store: due rows locked with SKIP LOCKED (and
// their due time checked again once locked), then moved to now+lease.
func (s *Store) Claim(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]webhooks.Delivery, error) {
	rows, err := s.pool.Query(ctx, `WITH due AS (
			SELECT d.agent_id, d.event_id FROM webhook_deliveries d
			JOIN agent_webhooks w ON w.agent_id = d.agent_id AND w.disabled_at IS NULL
			WHERE d.ended_at IS NULL AND d.next_at <= $1
			ORDER BY d.next_at LIMIT $3 FOR UPDATE OF d SKIP LOCKED)
		UPDATE webhook_deliveries d SET next_at = $2, attempts = d.attempts + 1
		FROM due, agent_webhooks w
		WHERE d.agent_id = due.agent_id AND d.event_id = due.event_id AND w.agent_id = d.agent_id
		RETURNING d.agent_id, d.event_id, d.type, d.negotiation_id, d.event_created_at, d.data, d.attempts, w.url, w.secret`,
		now, now.Add(lease), limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (webhooks.Delivery, error) {
		var d webhooks.Delivery
		var data string
		err := r.Scan(&d.AgentID, &d.Event.ID, &d.Event.Type, &d.Event.NegotiationID, &d.Event.CreatedAt, &data, &d.Attempts, &d.URL, &d.Secret)
		d.Event.AgentID, d.Event.CreatedAt, d.Event.Data = d.AgentID, d.Event.CreatedAt.UTC(), json.RawMessage(data)
		return d, err
	})
}

// Record implements webhooks.Store.
func (s *Store) Record(ctx context.Context, a webhooks.Attempt) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var tag interface{ RowsAffected() int64 }
		var err error
		if a.Result == webhooks.ResultRetrying {
			tag, err = tx.Exec(ctx, `UPDATE webhook_deliveries SET next_at = $4
				WHERE agent_id = $1 AND event_id = $2 AND attempts = $3 AND ended_at IS NULL`, a.AgentID, a.EventID, a.N, a.Next)
		} else {
			tag, err = tx.Exec(ctx, `UPDATE webhook_deliveries SET ended_at = $4
				WHERE agent_id = $1 AND event_id = $2 AND attempts = $3 AND ended_at IS NULL`, a.AgentID, a.EventID, a.N, a.At)
		}
		if err != nil || tag.RowsAffected() == 0 {
			return err // a lost claim changes nothing
		}
		if _, err := tx.Exec(ctx, `INSERT INTO webhook_attempts (agent_id, event_id, event_type, n, at, url, status, error, result, next_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
			a.AgentID, a.EventID, a.EventType, a.N, a.At, a.URL, a.Status, a.Error, a.Result, pgutil.NullTime(a.Next)); err != nil {
			return err
		}
		if a.Result != webhooks.ResultDisabled {
			return nil
		}
		if _, err := tx.Exec(ctx, `UPDATE agent_webhooks SET disabled_at = $2 WHERE agent_id = $1`, a.AgentID, a.At); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM webhook_deliveries WHERE agent_id = $1 AND ended_at IS NULL`, a.AgentID)
		return err
	})
}

// Attempts implements webhooks.Store.
func (s *Store) Attempts(ctx context.Context, agentID string, limit int) ([]webhooks.Attempt, error) {
	rows, err := s.pool.Query(ctx, `SELECT event_id, event_type, n, at, url, status, error, result, next_at FROM webhook_attempts
		WHERE agent_id = $1 ORDER BY id DESC LIMIT $2`, agentID, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (webhooks.Attempt, error) {
		a := webhooks.Attempt{AgentID: agentID}
		var next *time.Time
		err := r.Scan(&a.EventID, &a.EventType, &a.N, &a.At, &a.URL, &a.Status, &a.Error, &a.Result, &next)
		a.At, a.Next = a.At.UTC(), pgutil.UTC(next)
		return a, err
	})
}

// Purge implements webhooks.Store.
func (s *Store) Purge(ctx context.Context, before time.Time) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM webhook_attempts WHERE at < $1`, before); err != nil {
		return err
	}
	_, err := s.pool.Exec(ctx, `DELETE FROM webhook_deliveries WHERE ended_at < $1`, before)
	return err
}
