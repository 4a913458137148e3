package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/settlement"
	"github.com/venuehq/venue/store"
)

// Negotiations implements store.Store: newest first (by insertion order),
// filtered by arena and status, paged by Limit and Offset.
func (s *Store) Negotiations(parent context.Context, q store.NegotiationQuery) (_ []negotiation.State, err error) {
	ctx, cancel := s.bounded(parent)
	defer cancel()
	defer settle(parent, &err)
	var limit *int
	if q.Limit > 0 {
		limit = &q.Limit
	}
	var statuses []string
	if len(q.Statuses) > 0 {
		statuses = q.Statuses
	}
	rows, err := s.pool.Query(ctx, `
		SELECT id, state FROM negotiations
		WHERE ($1::boolean IS NULL OR arena = $1) AND ($2::text[] IS NULL OR status = ANY ($2))
			AND ($5 = '' OR brand = $5 OR bouncer = $5)
		ORDER BY ordinal DESC LIMIT $3 OFFSET $4`, q.Arena, statuses, limit, max(q.Offset, 0), q.AgentID)
	if err != nil {
		return nil, fmt.Errorf("postgres: list negotiations: %w", err)
	}
	return collectStates(rows)
}

// ReputationEvents implements store.Store.
func (s *Store) ReputationEvents(parent context.Context, agentID string, limit int) (_ []store.ReputationEvent, err error) {
	ctx, cancel := s.bounded(parent)
	defer cancel()
	defer settle(parent, &err)
	if hasNUL(agentID) {
		return nil, nil
	}
	var lim *int
	if limit > 0 {
		lim = &limit
	}
	rows, err := s.pool.Query(ctx, `
		SELECT agent_id, coalesce(negotiation_id, ''), delta, reason, created_at FROM reputation_events
		WHERE agent_id = $1 ORDER BY id DESC LIMIT $2`, agentID, lim)
	if err != nil {
		return nil, fmt.Errorf("postgres: reputation events of %s: %w", agentID, err)
	}
	evs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.ReputationEvent, error) {
		var e store.ReputationEvent
		err := r.Scan(&e.AgentID, &e.NegotiationID, &e.Delta, &e.Reason, &e.At)
		e.At = e.At.UTC()
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: reputation events of %s: %w", agentID, err)
	}
	return evs, nil
}

// Settlements implements store.Store.
func (s *Store) Settlements(parent context.Context, agentID string) (_ []settlement.Instruction, err error) {
	ctx, cancel := s.bounded(parent)
	defer cancel()
	defer settle(parent, &err)
	if hasNUL(agentID) {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `
		SELECT id, negotiation_id, payer, payee, amount_minor::bigint, status, created_at FROM settlements
		WHERE payer = $1 OR payee = $1 ORDER BY created_at DESC, id DESC`, agentID)
	if err != nil {
		return nil, fmt.Errorf("postgres: settlements of %s: %w", agentID, err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (settlement.Instruction, error) {
		var in settlement.Instruction
		err := r.Scan(&in.ID, &in.NegotiationID, &in.Payer, &in.Payee, &in.AmountMinor, &in.Status, &in.CreatedAt)
		in.CreatedAt = in.CreatedAt.UTC()
		return in, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: settlements of %s: %w", agentID, err)
	}
	return list, nil
}

// SetPresence implements store.Store: the (agent, node) row of presence is
// upserted with expires_at = until, or deleted when until is zero; the
// agent's last_seen_at moves to at (never back).
func (s *Store) SetPresence(parent context.Context, agentID, node string, until, at time.Time) (err error) {
	ctx, cancel := s.bounded(parent)
	defer cancel()
	defer settle(parent, &err)
	if hasNUL(agentID, node) {
		return notFound("agent", agentID)
	}
	b := &pgx.Batch{}
	if until.IsZero() {
		b.Queue(`DELETE FROM presence WHERE agent_id = $1 AND node = $2`, agentID, node)
	} else {
		b.Queue(`
			INSERT INTO presence (agent_id, node, expires_at) VALUES ($1, $2, $3)
			ON CONFLICT (agent_id, node) DO UPDATE SET expires_at = excluded.expires_at`, agentID, node, until)
	}
	b.Queue(`UPDATE agents SET last_seen_at = greatest(coalesce(last_seen_at, $2), $2) WHERE id = $1`, agentID, at)
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("postgres: presence of %s on %s: %w", agentID, node, err)
	}
	return nil
}

// queueSettlement adds the insert of a live deal's settlement instruction
// to Update's batch.
func queueSettlement(b *pgx.Batch, in *settlement.Instruction) {
	b.Queue(`
		INSERT INTO settlements (id, negotiation_id, payer, payee, amount_minor, status, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $7)`,
		in.ID, in.NegotiationID, in.Payer, in.Payee, in.AmountMinor, in.Status, in.CreatedAt)
}
