// Package eventspg is the event log (package events) on Postgres, in the
// venue's schema (migration 00050).
package eventspg

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/venuehq/venue/events"
)

// Store is events.Store on a pool whose search_path is the venue's schema.
type Store struct{ pool *pgxpool.Pool }

// New returns the store on pool.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Append implements events.Store: one transaction; each agent's head row
// is locked (agents in sorted order: no deadlock between two appends) and
// numbers its events.
func (s *Store) Append(ctx context.Context, evs ...events.Event) error {
	if len(evs) == 0 {
		return nil
	}
	byAgent := map[string][]events.Event{}
	var agents []string
	for _, e := range evs {
		if byAgent[e.AgentID] == nil {
			agents = append(agents, e.AgentID)
		}
		byAgent[e.AgentID] = append(byAgent[e.AgentID], e)
	}
	slices.Sort(agents)
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		for _, ag := range agents {
			list := byAgent[ag]
			var last int64
			err := tx.QueryRow(ctx, `INSERT INTO agent_event_heads (agent_id, n) VALUES ($1, $2)
				ON CONFLICT (agent_id) DO UPDATE SET n = agent_event_heads.n + $2 RETURNING n`, ag, len(list)).Scan(&last)
			if err != nil {
				return err
			}
			first := last - int64(len(list)) + 1
			for i, e := range list {
				if _, err := tx.Exec(ctx, `INSERT INTO agent_events (agent_id, n, id, type, negotiation_id, created_at, data)
					VALUES ($1, $2, $3, $4, $5, $6, $7)`, ag, first+int64(i), e.ID, e.Type, e.NegotiationID, e.CreatedAt, string(e.Data)); err != nil {
					return err
				}
			}
		}
		return nil
	})
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
