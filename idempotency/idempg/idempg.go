// Package idempg is the idempotency key store on Postgres, in the venue's
// schema (migration 00051): one row per agent and key, shared by the nodes.
package idempg

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/venuehq/venue/idempotency"
)

// Store is idempotency.Store on a pool whose search_path is the venue's schema.
type Store struct{ pool *pgxpool.Pool }

// New returns the store on pool.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Begin implements idempotency.Store: the insert (or the take-over of an
// expired row) decides, atomically, which request has the key.
func (s *Store) Begin(ctx context.Context, agentID, key, fp string, now time.Time) (idempotency.State, idempotency.Answer, error) {
	var taken bool
	err := s.pool.QueryRow(ctx, `INSERT INTO idempotency_keys (agent_id, key, fingerprint, created_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (agent_id, key) DO UPDATE SET fingerprint = $3, created_at = $4, done = false, status = 0, content_type = '', body = ''
		WHERE idempotency_keys.created_at <= $4 - make_interval(secs => $5)
		RETURNING true`, agentID, key, fp, now, idempotency.Retention.Seconds()).Scan(&taken)
	if err == nil && taken {
		return idempotency.New, idempotency.Answer{}, nil
	}
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return 0, idempotency.Answer{}, err
	}
	var storedFP string
	var done bool
	var a idempotency.Answer
	err = s.pool.QueryRow(ctx, `SELECT fingerprint, done, status, content_type, body FROM idempotency_keys WHERE agent_id = $1 AND key = $2`,
		agentID, key).Scan(&storedFP, &done, &a.Status, &a.ContentType, &a.Body)
	if errors.Is(err, pgx.ErrNoRows) { // released meanwhile: try again
		return s.Begin(ctx, agentID, key, fp, now)
	}
	if err != nil {
		return 0, idempotency.Answer{}, err
	}
	switch {
	case storedFP != fp:
		return idempotency.Conflict, idempotency.Answer{}, nil
	case done:
		return idempotency.Replay, a, nil
	}
	return idempotency.InFlight, idempotency.Answer{}, nil
}

// Finish implements idempotency.Store.
func (s *Store) Finish(ctx context.Context, agentID, key string, a idempotency.Answer) error {
	_, err := s.pool.Exec(ctx, `UPDATE idempotency_keys SET done = true, status = $3, content_type = $4, body = $5 WHERE agent_id = $1 AND key = $2`,
		agentID, key, a.Status, a.ContentType, a.Body)
	return err
}

// Release implements idempotency.Store.
func (s *Store) Release(ctx context.Context, agentID, key string) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM idempotency_keys WHERE agent_id = $1 AND key = $2 AND NOT done`, agentID, key)
	return err
}
