package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/venuehq/venue/internal/pgutil"
	"github.com/venuehq/venue/store"
)

// SaveGrant implements store.Store.
func (s *Store) SaveGrant(parent context.Context, g store.GrantRecord) error {
	return s.SaveGrantCapped(parent, g, 0)
}

// SaveGrantCapped implements store.Store. The cap is counted under a
// transaction-scoped advisory lock on the agent's grants, so two nodes
// taking uploads of one agent at once never both pass it.
func (s *Store) SaveGrantCapped(parent context.Context, g store.GrantRecord, maxActive int) (err error) {
	ctx, cancel := s.bounded(parent)
	defer cancel()
	defer settle(parent, &err)
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if maxActive > 0 {
			var held int
			_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('venue grants ' || $1, 0))`, g.AgentID)
			if err != nil {
				return err
			}
			err = tx.QueryRow(ctx, `
				SELECT count(*) FROM grants
				WHERE agent_id = $1 AND iss = $2 AND revoked_at IS NULL AND exp > $3`,
				g.AgentID, g.Issuer, g.CreatedAt).Scan(&held)
			if err != nil {
				return err
			}
			if held >= maxActive {
				return fmt.Errorf("postgres: grant %s: %d active grants held: %w", g.JTI, held, store.ErrLimit)
			}
		}
		_, err := tx.Exec(ctx, `
			INSERT INTO grants (jti, agent_id, token, iss, iat, nbf, exp, negotiation_id, scope, created_at, revoked_at, spent_cents)
			VALUES ($1, $2, $3, $4, $5, $6, $7, NULLIF($8, ''), $9, $10,
				COALESCE($11, (SELECT revoked_at FROM grant_revocations WHERE iss = $4 AND jti = $1)), $12)`,
			g.JTI, g.AgentID, g.Token, g.Issuer, g.IssuedAt, pgutil.NullTime(g.NotBefore), g.ExpiresAt,
			g.NegotiationID, nullJSON(g.Scope), g.CreatedAt, pgutil.NullTime(g.RevokedAt), g.SpentCents)
		return err
	})
	if isUnique(err) {
		return conflict(err, "grant %s", g.JTI)
	}
	if err != nil && !errors.Is(err, store.ErrLimit) {
		return fmt.Errorf("postgres: save grant %s: %w", g.JTI, err)
	}
	return err
}

// Grants implements store.Store: in upload order.
func (s *Store) Grants(parent context.Context, agentID string) ([]store.GrantRecord, error) {
	return s.grantsPage(parent, agentID, 0, -1)
}

// GrantsPage implements store.Store: a record's Cursor is its row's
// ordinal (the upload order).
func (s *Store) GrantsPage(parent context.Context, agentID string, after int64, limit int) ([]store.GrantRecord, error) {
	return s.grantsPage(parent, agentID, after, max(limit, 1))
}

// grantsPage is GrantsPage; limit < 0: all.
func (s *Store) grantsPage(parent context.Context, agentID string, after int64, limit int) (_ []store.GrantRecord, err error) {
	ctx, cancel := s.bounded(parent)
	defer cancel()
	defer settle(parent, &err)
	if hasNUL(agentID) {
		return nil, nil
	}
	var lim *int
	if limit >= 0 {
		lim = &limit
	}
	rows, err := s.pool.Query(ctx, `
		SELECT jti, agent_id, token, iss, iat, nbf, exp, negotiation_id, scope, created_at, revoked_at, spent_cents, ordinal
		FROM grants WHERE agent_id = $1 AND ordinal > $2 ORDER BY ordinal LIMIT $3`, agentID, after, lim)
	if err != nil {
		return nil, fmt.Errorf("postgres: grants of %s: %w", agentID, err)
	}
	grants, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.GrantRecord, error) {
		var g store.GrantRecord
		var iat, exp, created time.Time
		var nbf, revoked *time.Time
		var negID *string
		var scope []byte
		if err := r.Scan(&g.JTI, &g.AgentID, &g.Token, &g.Issuer, &iat, &nbf, &exp, &negID, &scope,
			&created, &revoked, &g.SpentCents, &g.Cursor); err != nil {
			return g, err
		}
		g.IssuedAt, g.NotBefore, g.ExpiresAt = iat.UTC(), pgutil.UTC(nbf), exp.UTC()
		g.CreatedAt, g.RevokedAt = created.UTC(), pgutil.UTC(revoked)
		if negID != nil {
			g.NegotiationID = *negID
		}
		if len(scope) > 0 {
			g.Scope = scope
		}
		return g, nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: grants of %s: %w", agentID, err)
	}
	return grants, nil
}

// RevokeGrant implements store.Store. Revoking twice keeps the first time.
func (s *Store) RevokeGrant(parent context.Context, agentID, jti string, at time.Time) (err error) {
	ctx, cancel := s.bounded(parent)
	defer cancel()
	defer settle(parent, &err)
	if hasNUL(agentID, jti) {
		return notFound("grant", jti)
	}
	tag, err := s.pool.Exec(ctx, `
		UPDATE grants SET revoked_at = COALESCE(revoked_at, $3) WHERE agent_id = $2 AND jti = $1`, jti, agentID, at)
	if err != nil {
		return fmt.Errorf("postgres: revoke grant %s: %w", jti, err)
	}
	if tag.RowsAffected() == 0 {
		return notFound("grant", jti)
	}
	return nil
}

// RevokeIssuerGrant implements store.Store: the revocation row and the
// grant's mark in one transaction, so an upload racing the revocation is
// either revoked by the UPDATE or reads the row in its INSERT.
func (s *Store) RevokeIssuerGrant(parent context.Context, agentID, iss, jti string, at time.Time) (_ bool, err error) {
	ctx, cancel := s.bounded(parent)
	defer cancel()
	defer settle(parent, &err)
	if hasNUL(agentID, iss, jti) {
		return false, nil
	}
	var marked int64
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `
			INSERT INTO grant_revocations (iss, jti, agent_id, revoked_at) VALUES ($1, $2, $3, $4)
			ON CONFLICT (iss, jti) DO NOTHING`, iss, jti, agentID, at); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `
			UPDATE grants SET revoked_at = COALESCE(revoked_at,
				(SELECT revoked_at FROM grant_revocations WHERE iss = $1 AND jti = $2))
			WHERE iss = $1 AND jti = $2 AND agent_id = $3`, iss, jti, agentID)
		marked = tag.RowsAffected()
		return err
	})
	if err != nil {
		return false, fmt.Errorf("postgres: revoke grant %s of %s: %w", jti, iss, err)
	}
	return marked > 0, nil
}

// VenueKey implements store.Store. The first node to find no key inserts
// the one create() made; a node that loses that race discards its own and
// returns the winner's, so every node signs with the same key.
func (s *Store) VenueKey(ctx context.Context, create func() ([]byte, error)) ([]byte, error) {
	const current = `SELECT pem FROM venue_keys WHERE retired_at IS NULL ORDER BY id DESC LIMIT 1`
	var pem string
	err := s.pool.QueryRow(ctx, current).Scan(&pem)
	if err == nil {
		return []byte(pem), nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("postgres: venue key: %w", err)
	}
	key, err := create()
	if err != nil {
		return nil, fmt.Errorf("postgres: venue key: create: %w", err)
	}
	// Insert if absent (waiting for a concurrent insert to commit), then
	// read what won: each statement of the transaction sees the latest
	// committed row.
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO venue_keys (id, pem) VALUES (1, $1) ON CONFLICT (id) DO NOTHING`, string(key)); err != nil {
			return err
		}
		return tx.QueryRow(ctx, current).Scan(&pem)
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: venue key: store: %w", err)
	}
	return []byte(pem), nil
}

// VenueKeys implements store.Store.
func (s *Store) VenueKeys(parent context.Context) (_ []store.VenueKey, err error) {
	ctx, cancel := s.bounded(parent)
	defer cancel()
	defer settle(parent, &err)
	rows, err := s.pool.Query(ctx, `
		SELECT id, pem, created_at, retired_at FROM venue_keys
		ORDER BY (retired_at IS NULL) DESC, id DESC`)
	if err != nil {
		return nil, fmt.Errorf("postgres: venue keys: %w", err)
	}
	keys, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.VenueKey, error) {
		var k store.VenueKey
		var pem string
		var created time.Time
		var retired *time.Time
		if err := r.Scan(&k.ID, &pem, &created, &retired); err != nil {
			return k, err
		}
		k.Key, k.CreatedAt, k.RetiredAt = []byte(pem), created.UTC(), pgutil.UTC(retired)
		return k, nil
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: venue keys: %w", err)
	}
	return keys, nil
}

// RotateVenueKey implements store.Store: the table is locked for the
// rotation, so two rotations at once leave one current key.
func (s *Store) RotateVenueKey(parent context.Context, key []byte, at time.Time) (err error) {
	ctx, cancel := s.bounded(parent)
	defer cancel()
	defer settle(parent, &err)
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `LOCK TABLE venue_keys IN SHARE ROW EXCLUSIVE MODE`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE venue_keys SET retired_at = $1 WHERE retired_at IS NULL`, at); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `
			INSERT INTO venue_keys (id, pem, created_at)
			VALUES ((SELECT COALESCE(max(id), 0) + 1 FROM venue_keys), $1, $2)`, string(key), at)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: rotate venue key: %w", err)
	}
	return nil
}
