// Package briefspg is the store of sealed briefs (package briefs) on
// Postgres, in the venue's schema (migration 00040). The brief row is the
// lock of its collection window: a quote or a decline locks it and checks
// that quotes_ready was not sent, and MarkReady sets ready_at once with a
// conditional UPDATE, so no quote lands after the brand was sent the
// quotes and quotes_ready goes out once across the nodes (PROTOCOL.md
// "Sealed briefs").
package briefspg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/venuehq/venue/briefs"
	"github.com/venuehq/venue/internal/pgutil"
)

// Store is briefs.Store on a pool whose search_path is the venue's schema.
type Store struct{ pool *pgxpool.Pool }

// New returns the store on pool.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

var _ briefs.Store = (*Store)(nil)

func notFound(what, id string) error {
	return fmt.Errorf("briefspg: %s %s: %w", what, id, briefs.ErrNotFound)
}

// CreateBrief implements briefs.Store.
func (s *Store) CreateBrief(ctx context.Context, b briefs.Brief) error {
	party, err := json.Marshal(b.Brand)
	if err != nil {
		return err
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO briefs (id, brand, brand_party, offer, arena, created_at, collect_until)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`, b.ID, b.Brand.AgentID, string(party), string(b.Offer), b.Arena, b.CreatedAt, b.CollectUntil); err != nil {
			var pe *pgconn.PgError
			if errors.As(err, &pe) && pe.Code == "23505" {
				return fmt.Errorf("briefspg: brief %s exists: %w", b.ID, briefs.ErrConflict)
			}
			return err
		}
		for i, o := range b.Offers {
			if _, err := tx.Exec(ctx, `INSERT INTO brief_offers (offer_id, brief_id, pos, bouncer) VALUES ($1, $2, $3, $4)`,
				o.OfferID, b.ID, i, o.To); err != nil {
				return err
			}
		}
		return nil
	})
}

const briefCols = `id, brand_party, offer, arena, created_at, collect_until, ready_at, awarded_quote, negotiation_id, awarded_at`

func scanBrief(row pgx.Row) (briefs.Brief, error) {
	var b briefs.Brief
	var party, offer string
	var ready, awarded *time.Time
	if err := row.Scan(&b.ID, &party, &offer, &b.Arena, &b.CreatedAt, &b.CollectUntil, &ready, &b.AwardedQuote, &b.NegotiationID, &awarded); err != nil {
		return b, err
	}
	if err := json.Unmarshal([]byte(party), &b.Brand); err != nil {
		return b, err
	}
	b.Offer = json.RawMessage(offer)
	b.CreatedAt, b.CollectUntil = b.CreatedAt.UTC(), b.CollectUntil.UTC()
	b.ReadyAt, b.AwardedAt = pgutil.UTC(ready), pgutil.UTC(awarded)
	return b, nil
}

// offers fills b's offers in their order.
func (s *Store) offers(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, b *briefs.Brief) error {
	rows, err := q.Query(ctx, `SELECT offer_id, bouncer, declined_at, reason FROM brief_offers WHERE brief_id = $1 ORDER BY pos`, b.ID)
	if err != nil {
		return err
	}
	defer rows.Close()
	b.Offers = b.Offers[:0]
	for rows.Next() {
		var o briefs.Addressed
		var declined *time.Time
		if err := rows.Scan(&o.OfferID, &o.To, &declined, &o.Reason); err != nil {
			return err
		}
		o.DeclinedAt = pgutil.UTC(declined)
		b.Offers = append(b.Offers, o)
	}
	return rows.Err()
}

// Brief implements briefs.Store.
func (s *Store) Brief(ctx context.Context, id string) (briefs.Brief, error) {
	b, err := scanBrief(s.pool.QueryRow(ctx, `SELECT `+briefCols+` FROM briefs WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return briefs.Brief{}, notFound("brief", id)
	} else if err != nil {
		return briefs.Brief{}, err
	}
	return b, s.offers(ctx, s.pool, &b)
}

// BriefOfOffer implements briefs.Store.
func (s *Store) BriefOfOffer(ctx context.Context, offerID string) (briefs.Brief, error) {
	var id string
	err := s.pool.QueryRow(ctx, `SELECT brief_id FROM brief_offers WHERE offer_id = $1`, offerID).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return briefs.Brief{}, notFound("offer", offerID)
	} else if err != nil {
		return briefs.Brief{}, err
	}
	return s.Brief(ctx, id)
}

// OpenFor implements briefs.Store.
func (s *Store) OpenFor(ctx context.Context, bouncerID string, now time.Time) ([]briefs.Brief, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+briefCols+` FROM briefs b WHERE ready_at IS NULL AND collect_until > $2
		AND EXISTS (SELECT 1 FROM brief_offers o WHERE o.brief_id = b.id AND o.bouncer = $1 AND o.declined_at IS NULL)
		ORDER BY created_at, id`, bouncerID, now)
	if err != nil {
		return nil, err
	}
	var out []briefs.Brief
	for rows.Next() {
		b, err := scanBrief(rows)
		if err != nil {
			rows.Close()
			return nil, err
		}
		out = append(out, b)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for i := range out {
		if err := s.offers(ctx, s.pool, &out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Counts implements briefs.Store.
func (s *Store) Counts(ctx context.Context, brandID string, since, now time.Time) (recent, open int, err error) {
	err = s.pool.QueryRow(ctx, `SELECT count(*) FILTER (WHERE created_at >= $2),
		count(*) FILTER (WHERE ready_at IS NULL AND collect_until > $3)
		FROM briefs WHERE brand = $1 AND (created_at >= $2 OR collect_until > $3)`, brandID, since, now).Scan(&recent, &open)
	return recent, open, err
}

// collecting locks the brief of offerID in tx and checks that it still
// collects and the offer is not declined.
func collecting(ctx context.Context, tx pgx.Tx, offerID string, now time.Time) (briefID string, err error) {
	var collectUntil time.Time
	var ready, declined *time.Time
	err = tx.QueryRow(ctx, `SELECT b.id, b.collect_until, b.ready_at, o.declined_at
		FROM brief_offers o JOIN briefs b ON b.id = o.brief_id WHERE o.offer_id = $1 FOR UPDATE OF b, o`, offerID).
		Scan(&briefID, &collectUntil, &ready, &declined)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", notFound("offer", offerID)
	} else if err != nil {
		return "", err
	}
	if ready != nil || declined != nil || !now.Before(collectUntil) {
		return "", briefs.ErrClosed
	}
	return briefID, nil
}

// PutQuote implements briefs.Store.
func (s *Store) PutQuote(ctx context.Context, q briefs.Quote, now time.Time) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		briefID, err := collecting(ctx, tx, q.OfferID, now)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO brief_quotes (offer_id, quote_id, brief_id, bouncer, terms, offer_hash, content, at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
			ON CONFLICT (offer_id) DO UPDATE SET quote_id = EXCLUDED.quote_id, terms = EXCLUDED.terms,
				offer_hash = EXCLUDED.offer_hash, content = EXCLUDED.content, at = EXCLUDED.at`,
			q.OfferID, q.ID, briefID, q.From, string(q.Terms), q.OfferHash, q.Content, q.At)
		return err
	})
}

// Decline implements briefs.Store.
func (s *Store) Decline(ctx context.Context, offerID, reason string, now time.Time) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := collecting(ctx, tx, offerID, now); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE brief_offers SET declined_at = $2, reason = $3 WHERE offer_id = $1`, offerID, now, reason); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM brief_quotes WHERE offer_id = $1`, offerID)
		return err
	})
}

const quoteCols = `q.quote_id, q.brief_id, q.offer_id, q.bouncer, q.terms, q.offer_hash, q.content, q.at`

func scanQuote(row pgx.Row) (briefs.Quote, error) {
	var q briefs.Quote
	var terms string
	if err := row.Scan(&q.ID, &q.BriefID, &q.OfferID, &q.From, &terms, &q.OfferHash, &q.Content, &q.At); err != nil {
		return q, err
	}
	q.Terms, q.At = json.RawMessage(terms), q.At.UTC()
	return q, nil
}

// Quote implements briefs.Store.
func (s *Store) Quote(ctx context.Context, id string) (briefs.Quote, error) {
	q, err := scanQuote(s.pool.QueryRow(ctx, `SELECT `+quoteCols+` FROM brief_quotes q WHERE q.quote_id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return briefs.Quote{}, notFound("quote", id)
	}
	return q, err
}

func quotesOf(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, briefID string) ([]briefs.Quote, error) {
	rows, err := q.Query(ctx, `SELECT `+quoteCols+` FROM brief_quotes q JOIN brief_offers o ON o.offer_id = q.offer_id
		WHERE q.brief_id = $1 ORDER BY o.pos`, briefID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []briefs.Quote
	for rows.Next() {
		qu, err := scanQuote(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, qu)
	}
	return out, rows.Err()
}

// Quotes implements briefs.Store.
func (s *Store) Quotes(ctx context.Context, briefID string) ([]briefs.Quote, error) {
	var one int
	if err := s.pool.QueryRow(ctx, `SELECT 1 FROM briefs WHERE id = $1`, briefID).Scan(&one); errors.Is(err, pgx.ErrNoRows) {
		return nil, notFound("brief", briefID)
	} else if err != nil {
		return nil, err
	}
	return quotesOf(ctx, s.pool, briefID)
}

// MarkReady implements briefs.Store: the conditional UPDATE takes the
// brief's row lock, so the quotes read after it in the same transaction
// are the final ones.
func (s *Store) MarkReady(ctx context.Context, briefID string, at time.Time) (quotes []briefs.Quote, won bool, err error) {
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE briefs SET ready_at = $2 WHERE id = $1 AND ready_at IS NULL`, briefID, at)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			var one int
			if err := tx.QueryRow(ctx, `SELECT 1 FROM briefs WHERE id = $1`, briefID).Scan(&one); errors.Is(err, pgx.ErrNoRows) {
				return notFound("brief", briefID)
			}
			return nil
		}
		won = true
		quotes, err = quotesOf(ctx, tx, briefID)
		return err
	})
	if err != nil || !won {
		return nil, false, err
	}
	return quotes, true, nil
}

// Award implements briefs.Store.
func (s *Store) Award(ctx context.Context, briefID, quoteID, negID string, at time.Time) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE briefs SET awarded_quote = $2, negotiation_id = $3, awarded_at = $4
		WHERE id = $1 AND awarded_quote = ''`, briefID, quoteID, negID, at)
	if err != nil {
		return false, err
	}
	if tag.RowsAffected() == 0 {
		if _, err := s.Brief(ctx, briefID); err != nil {
			return false, err
		}
		return false, nil
	}
	return true, nil
}

// Unaward implements briefs.Store.
func (s *Store) Unaward(ctx context.Context, briefID, quoteID string) error {
	_, err := s.pool.Exec(ctx, `UPDATE briefs SET awarded_quote = '', negotiation_id = '', awarded_at = NULL
		WHERE id = $1 AND awarded_quote = $2`, briefID, quoteID)
	return err
}

// Unready implements briefs.Store.
func (s *Store) Unready(ctx context.Context, before time.Time, limit int) ([]briefs.Due, error) {
	q := `SELECT id, collect_until FROM briefs WHERE ready_at IS NULL AND ($1::timestamptz IS NULL OR collect_until < $1)
		ORDER BY collect_until`
	args := []any{pgutil.NullTime(before)}
	if limit > 0 {
		q += ` LIMIT $2`
		args = append(args, limit)
	}
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []briefs.Due
	for rows.Next() {
		var d briefs.Due
		if err := rows.Scan(&d.ID, &d.At); err != nil {
			return nil, err
		}
		d.At = d.At.UTC()
		out = append(out, d)
	}
	return out, rows.Err()
}
