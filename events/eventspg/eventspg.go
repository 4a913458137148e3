// Package eventspg is the event log (package events) on Postgres, in the
// venue's schema (migration 00050).
package eventspg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/venuehq/venue/events"
	"github.com/venuehq/venue/internal/pgjoin"
)

// Store is events.Store on a pool whose search_path is the venue's schema.
type Store struct{ pool *pgxpool.Pool }

// New returns the store on pool.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Append implements events.Store: one transaction of one statement
// (Queue).
func (s *Store) Append(ctx context.Context, evs ...events.Event) error {
	if len(evs) == 0 {
		return nil
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		if err := Queue(b, evs); err != nil {
			return err
		}
		return tx.SendBatch(ctx, b).Close()
	})
}

// Queue adds to b the one statement that appends evs (any agents') inside
// the transaction b runs in: each agent's head row is advanced by its
// number of events (agents in sorted order: no deadlock between two
// appends) and numbers them, in the order of evs. The store's group commit
// queues it beside a batch's frames, so a committed frame's events commit
// with it. Nothing is queued for no events. The events' data go joined,
// one parameter (internal/pgjoin); Queue returns pgjoin.ErrSeparator
// (wrapped), queueing nothing, for data that holds its separator (never
// JSON).
func Queue(b *pgx.Batch, evs []events.Event) error {
	if len(evs) == 0 {
		return nil
	}
	counts := map[string]int64{}
	for _, e := range evs {
		counts[e.AgentID]++
	}
	agents := make([]string, 0, len(counts))
	for a := range counts {
		agents = append(agents, a)
	}
	slices.Sort(agents)
	cnts := make([]int64, len(agents))
	for i, a := range agents {
		cnts[i] = counts[a]
	}
	n := len(evs)
	ags, ids, types, negs := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	raws := make([][]byte, n)
	ks, ecnts := make([]int64, n), make([]int64, n)
	ats := make([]time.Time, n)
	seen := make(map[string]int64, len(agents))
	for i, e := range evs {
		seen[e.AgentID]++
		ags[i], ks[i], ecnts[i] = e.AgentID, seen[e.AgentID], counts[e.AgentID]
		ids[i], types[i], negs[i], ats[i], raws[i] = e.ID, e.Type, e.NegotiationID, e.CreatedAt, e.Data
	}
	data, err := pgjoin.Join(raws)
	if err != nil {
		return fmt.Errorf("eventspg: event data: %w", err)
	}
	b.Queue(`WITH h AS (
			INSERT INTO agent_event_heads AS hd (agent_id, n)
			SELECT * FROM unnest($1::text[], $2::bigint[]) ORDER BY 1
			ON CONFLICT (agent_id) DO UPDATE SET n = hd.n + excluded.n
			RETURNING agent_id, n)
		INSERT INTO agent_events (agent_id, n, id, type, negotiation_id, created_at, data)
		SELECT e.agent_id, h.n - e.cnt + e.k, e.id, e.type, e.neg, e.at, e.data
		FROM unnest($3::text[], $4::bigint[], $5::bigint[], $6::text[], $7::text[], $8::text[], $9::timestamptz[], `+pgjoin.Split(10)+`)
			AS e(agent_id, k, cnt, id, type, neg, at, data)
		JOIN h USING (agent_id)`, agents, cnts, ags, ks, ecnts, ids, types, negs, ats, data)
	return nil
}

// After implements events.Store.
func (s *Store) After(ctx context.Context, agentID, afterID string, limit int) ([]events.Event, error) {
	var from int64
	if afterID != "" {
		err := s.pool.QueryRow(ctx, `SELECT n FROM agent_events WHERE id = $1 AND agent_id = $2`, afterID, agentID).Scan(&from)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, events.ErrUnknownAfter
		}
		if err != nil {
			return nil, err
		}
	}
	rows, err := s.pool.Query(ctx, `SELECT id, type, negotiation_id, created_at, data FROM agent_events
		WHERE agent_id = $1 AND n > $2 ORDER BY n LIMIT $3`, agentID, from, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (events.Event, error) {
		e := events.Event{AgentID: agentID}
		var data string
		err := r.Scan(&e.ID, &e.Type, &e.NegotiationID, &e.CreatedAt, &data)
		e.CreatedAt = e.CreatedAt.UTC()
		e.Data = json.RawMessage(data)
		return e, err
	})
}

// Purge implements events.Store.
func (s *Store) Purge(ctx context.Context, before time.Time) (int, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM agent_events WHERE created_at < $1`, before)
	return int(tag.RowsAffected()), err
}
