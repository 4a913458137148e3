package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/store"
)

func limitOf(q store.PartyQuery) *int {
	if q.Limit > 0 {
		return &q.Limit
	}
	return nil
}

// NegotiationsOf implements store.Store.
func (s *Store) NegotiationsOf(parent context.Context, q store.PartyQuery) (_ []negotiation.State, _ int, err error) {
	ctx, cancel := s.bounded(parent)
	defer cancel()
	defer settle(parent, &err)
	if hasNUL(q.AgentID) || hasNUL(q.Status) {
		return nil, 0, nil
	}
	const where = `(brand = $1 OR bouncer = $1) AND ($2 = '' OR status = $2)`
	var total int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM negotiations WHERE `+where, q.AgentID, q.Status).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("postgres: negotiations of %s: %w", q.AgentID, err)
	}
	rows, err := s.pool.Query(ctx, `SELECT id, state FROM negotiations WHERE `+where+`
		ORDER BY ordinal DESC LIMIT $3 OFFSET $4`, q.AgentID, q.Status, limitOf(q), q.Offset)
	if err != nil {
		return nil, 0, fmt.Errorf("postgres: negotiations of %s: %w", q.AgentID, err)
	}
	states, err := collectStates(rows)
	return states, total, err
}

// OffersOf implements store.Store.
func (s *Store) OffersOf(parent context.Context, q store.PartyQuery) (_ []store.Offer, _ int, err error) {
	ctx, cancel := s.bounded(parent)
	defer cancel()
	defer settle(parent, &err)
	if hasNUL(q.AgentID) {
		return nil, 0, nil
	}
	var total int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM offers WHERE brand = $1 OR bouncer = $1`, q.AgentID).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("postgres: offers of %s: %w", q.AgentID, err)
	}
	rows, err := s.pool.Query(ctx, `
		SELECT id, brand, bouncer, body, arena, negotiation_id, created_at FROM offers
		WHERE brand = $1 OR bouncer = $1 ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3`,
		q.AgentID, limitOf(q), q.Offset)
	if err != nil {
		return nil, 0, fmt.Errorf("postgres: offers of %s: %w", q.AgentID, err)
	}
	offers, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Offer, error) {
		var o store.Offer
		var body []byte
		var negID *string
		var created time.Time
		if err := r.Scan(&o.ID, &o.Brand, &o.Bouncer, &body, &o.Arena, &negID, &created); err != nil {
			return o, err
		}
		if len(body) > 0 {
			o.Body = body
		}
		if negID != nil {
			o.NegotiationID = *negID
		}
		o.CreatedAt = created.UTC()
		return o, nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("postgres: offers of %s: %w", q.AgentID, err)
	}
	return offers, total, nil
}
