// Package deliverypg is the deals' records (package deliveries) on
// Postgres, in the venue's schema (migration 00045): the row of
// deal_records is the lock every node honours, and a settlement's status
// is written to settlements.status in the same transaction.
package deliverypg

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/venuehq/venue/deliveries"
)

// Store is deliveries.Store on a pool whose search_path is the venue's schema.
type Store struct{ pool *pgxpool.Pool }

// New returns the store on pool.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

const deliveryCols = `id, negotiation_id, url, note, sha256, status, submitted_at, due_at, answered_at, answered_by, reason`

func scanDelivery(row pgx.CollectableRow) (deliveries.Delivery, error) {
	var d deliveries.Delivery
	var answered *time.Time
	err := row.Scan(&d.ID, &d.NegotiationID, &d.URL, &d.Note, &d.SHA256, &d.Status, &d.SubmittedAt, &d.DueAt, &answered, &d.AnsweredBy, &d.Reason)
	d.SubmittedAt, d.DueAt = d.SubmittedAt.UTC(), d.DueAt.UTC()
	if answered != nil {
		d.AnsweredAt = answered.UTC()
	}
	return d, err
}

func readDeliveries(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, negIDs []string) (map[string][]deliveries.Delivery, error) {
	rows, err := q.Query(ctx, `SELECT `+deliveryCols+` FROM deliveries WHERE negotiation_id = ANY($1) ORDER BY negotiation_id, n`, negIDs)
	if err != nil {
		return nil, err
	}
	list, err := pgx.CollectRows(rows, scanDelivery)
	if err != nil {
		return nil, err
	}
	out := map[string][]deliveries.Delivery{}
	for _, d := range list {
		out[d.NegotiationID] = append(out[d.NegotiationID], d)
	}
	return out, nil
}

// Update implements deliveries.Store: one transaction holding the deal's
// row of deal_records (created on first use) FOR UPDATE.
func (s *Store) Update(ctx context.Context, negID string, fn func(r *deliveries.Record) error) (deliveries.Record, error) {
	var out deliveries.Record
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO deal_records (negotiation_id) VALUES ($1) ON CONFLICT DO NOTHING`, negID); err != nil {
			return err
		}
		r := deliveries.Record{NegotiationID: negID}
		if err := tx.QueryRow(ctx, `SELECT settlement_status FROM deal_records WHERE negotiation_id = $1 FOR UPDATE`, negID).Scan(&r.Settlement); err != nil {
			return err
		}
		dls, err := readDeliveries(ctx, tx, []string{negID})
		if err != nil {
			return err
		}
		r.Deliveries = dls[negID]
		before := len(r.Deliveries)
		prev := append([]deliveries.Delivery(nil), r.Deliveries...)
		prevStatus := r.Settlement
		if err := fn(&r); err != nil {
			return err
		}
		b := &pgx.Batch{}
		for i, d := range r.Deliveries {
			var answered *time.Time
			if !d.AnsweredAt.IsZero() {
				answered = &d.AnsweredAt
			}
			switch {
			case i >= before:
				b.Queue(`INSERT INTO deliveries (`+deliveryCols+`, n) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12)`,
					d.ID, negID, d.URL, d.Note, d.SHA256, d.Status, d.SubmittedAt, d.DueAt, answered, d.AnsweredBy, d.Reason, i+1)
			case d != prev[i]:
				b.Queue(`UPDATE deliveries SET status = $2, answered_at = $3, answered_by = $4, reason = $5 WHERE id = $1`,
					d.ID, d.Status, answered, d.AnsweredBy, d.Reason)
			}
		}
		if r.Settlement != prevStatus {
			b.Queue(`UPDATE deal_records SET settlement_status = $2, updated_at = now() WHERE negotiation_id = $1`, negID, r.Settlement)
			b.Queue(`UPDATE settlements SET status = $2, updated_at = now() WHERE negotiation_id = $1`, negID, r.Settlement)
		}
		if b.Len() > 0 {
			if err := tx.SendBatch(ctx, b).Close(); err != nil {
				return err
			}
		}
		out = r
		return nil
	})
	if err != nil {
		return deliveries.Record{}, err
	}
	return out, nil
}

// Records implements deliveries.Store.
func (s *Store) Records(ctx context.Context, negIDs []string) (map[string]deliveries.Record, error) {
	out := map[string]deliveries.Record{}
	if len(negIDs) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT negotiation_id, settlement_status FROM deal_records WHERE negotiation_id = ANY($1)`, negIDs)
	if err != nil {
		return nil, err
	}
	recs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (deliveries.Record, error) {
		var r deliveries.Record
		return r, row.Scan(&r.NegotiationID, &r.Settlement)
	})
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return out, nil
	}
	dls, err := readDeliveries(ctx, s.pool, negIDs)
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		r.Deliveries = dls[r.NegotiationID]
		out[r.NegotiationID] = r
	}
	return out, nil
}

// Due implements deliveries.Store (index deliveries_due).
func (s *Store) Due(ctx context.Context, now time.Time, limit int) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT negotiation_id FROM deliveries WHERE status = 'submitted' AND due_at <= $1
		ORDER BY due_at, negotiation_id LIMIT $2`, now, limit)
	if err != nil {
		return nil, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return ids, err
}
