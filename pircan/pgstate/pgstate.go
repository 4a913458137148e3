// Package pgstate is pircan.State on PostgreSQL, in the venue's schema
// (tables pircan_channels, pircan_members, pircan_invitations and
// pircan_windows of migration 00005), so the bridge's channels and rate
// limits survive restarts and are shared by every node.
package pgstate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/venuehq/venue/pircan"
)

// State implements pircan.State on a pgx pool (the store's, see
// postgres.Store.Pool). Safe for concurrent use.
type State struct{ pool *pgxpool.Pool }

var _ pircan.State = (*State)(nil)

// New returns the State on pool, whose schema must be migrated.
func New(pool *pgxpool.Pool) *State { return &State{pool: pool} }

func clean(s string) string { return strings.ReplaceAll(s, "\x00", "\uFFFD") }

func noChannel(key string) error {
	return fmt.Errorf("pgstate: channel %s: %w", key, pircan.ErrNoChannel)
}

// PutChannel implements pircan.State.
func (s *State) PutChannel(ctx context.Context, c pircan.Channel, now time.Time) error {
	_, err := s.pool.Exec(ctx, `
		INSERT INTO pircan_channels (key, name, private, topic, created_at) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (key) DO UPDATE SET name = excluded.name, private = excluded.private, topic = excluded.topic`,
		clean(pircan.ChannelKey(c.Name)), clean(c.Name), c.Private, clean(c.Topic), now)
	if err != nil {
		return fmt.Errorf("pgstate: put channel %s: %w", c.Name, err)
	}
	return nil
}

// DeleteChannel implements pircan.State.
func (s *State) DeleteChannel(ctx context.Context, key string) error {
	tag, err := s.pool.Exec(ctx, `DELETE FROM pircan_channels WHERE key = $1`, clean(key))
	if err != nil {
		return fmt.Errorf("pgstate: delete channel %s: %w", key, err)
	}
	if tag.RowsAffected() == 0 {
		return noChannel(key)
	}
	return nil
}

const channelCols = `c.name, c.private, c.topic, (SELECT count(*) FROM pircan_members m WHERE m.channel_key = c.key)`

func scanChannel(row pgx.Row) (pircan.Channel, error) {
	var c pircan.Channel
	err := row.Scan(&c.Name, &c.Private, &c.Topic, &c.Members)
	return c, err
}

// Channel implements pircan.State.
func (s *State) Channel(ctx context.Context, key string) (pircan.Channel, error) {
	c, err := scanChannel(s.pool.QueryRow(ctx, `SELECT `+channelCols+` FROM pircan_channels c WHERE c.key = $1`, clean(key)))
	if errors.Is(err, pgx.ErrNoRows) {
		return pircan.Channel{}, noChannel(key)
	}
	if err != nil {
		return pircan.Channel{}, fmt.Errorf("pgstate: channel %s: %w", key, err)
	}
	return c, nil
}

// Channels implements pircan.State. q matches as Go's strings.ToLower sees
// it, like the memory State (the lower-casing is done here for the needle
// and by Postgres's lower() for the columns, the same for ASCII).
func (s *State) Channels(ctx context.Context, q pircan.ChannelQuery) ([]pircan.Channel, int, error) {
	const where = `
		WHERE ($5 OR NOT c.private OR ($1 <> '' AND (
			EXISTS (SELECT 1 FROM pircan_members m WHERE m.channel_key = c.key AND m.agent_id = $1) OR
			EXISTS (SELECT 1 FROM pircan_invitations i WHERE i.channel_key = c.key AND i.agent_id = $1))))
		  AND ($2 = '' OR strpos(lower(c.name), $2) > 0 OR strpos(lower(c.topic), $2) > 0)`
	agent, needle := clean(q.AgentID), clean(strings.ToLower(q.Q))
	var total int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM pircan_channels c`+strings.ReplaceAll(where, "$5", "$3"), agent, needle, q.All).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("pgstate: count channels: %w", err)
	}
	rows, err := s.pool.Query(ctx, `SELECT `+channelCols+` FROM pircan_channels c`+where+`
		ORDER BY c.key COLLATE "C" LIMIT $3 OFFSET $4`, agent, needle, max(q.Limit, 0), max(q.Offset, 0), q.All)
	if err != nil {
		return nil, 0, fmt.Errorf("pgstate: list channels: %w", err)
	}
	chans, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (pircan.Channel, error) { return scanChannel(r) })
	if err != nil {
		return nil, 0, fmt.Errorf("pgstate: list channels: %w", err)
	}
	return chans, total, nil
}

func (s *State) link(ctx context.Context, table, key, agentID string, now time.Time) error {
	tag, err := s.pool.Exec(ctx, `
		INSERT INTO `+table+` (channel_key, agent_id, `+map[string]string{"pircan_members": "joined_at", "pircan_invitations": "created_at"}[table]+`)
		SELECT key, $2, $3 FROM pircan_channels WHERE key = $1
		ON CONFLICT DO NOTHING`, clean(key), clean(agentID), now)
	if err != nil {
		return fmt.Errorf("pgstate: %s %s: %w", table, key, err)
	}
	if tag.RowsAffected() == 0 {
		// Already linked, or no channel.
		var exists bool
		if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pircan_channels WHERE key = $1)`, clean(key)).Scan(&exists); err != nil {
			return fmt.Errorf("pgstate: %s %s: %w", table, key, err)
		}
		if !exists {
			return noChannel(key)
		}
	}
	return nil
}

// AddMember implements pircan.State.
func (s *State) AddMember(ctx context.Context, key, agentID string, now time.Time) error {
	return s.link(ctx, "pircan_members", key, agentID, now)
}

// Invite implements pircan.State.
func (s *State) Invite(ctx context.Context, key, agentID string, now time.Time) error {
	return s.link(ctx, "pircan_invitations", key, agentID, now)
}

// Invited implements pircan.State.
func (s *State) Invited(ctx context.Context, key, agentID string) (bool, error) {
	var ok bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pircan_invitations WHERE channel_key = $1 AND agent_id = $2)`,
		clean(key), clean(agentID)).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("pgstate: invited %s: %w", key, err)
	}
	return ok, nil
}

// Hit implements pircan.State with one atomic upsert.
func (s *State) Hit(ctx context.Context, key string, start time.Time) (int, error) {
	return s.Charge(ctx, key, start, 1)
}

// Charge implements pircan.State with one atomic upsert.
func (s *State) Charge(ctx context.Context, key string, start time.Time, hits int) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `
		INSERT INTO pircan_windows (key, window_start, hits) VALUES ($1, $2, $3)
		ON CONFLICT (key) DO UPDATE SET
			hits = CASE WHEN excluded.window_start > pircan_windows.window_start THEN excluded.hits ELSE pircan_windows.hits + excluded.hits END,
			window_start = GREATEST(pircan_windows.window_start, excluded.window_start)
		RETURNING hits`, clean(key), start, max(hits, 1)).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("pgstate: hit %s: %w", key, err)
	}
	return n, nil
}

// PruneWindows implements pircan.State.
func (s *State) PruneWindows(ctx context.Context, before time.Time) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM pircan_windows WHERE window_start < $1`, before); err != nil {
		return fmt.Errorf("pgstate: prune windows: %w", err)
	}
	return nil
}

// ClaimName implements pircan.State (table pircan_names, migration 00071).
func (s *State) ClaimName(ctx context.Context, key, agentID string, now time.Time) (string, error) {
	var holder string
	err := s.pool.QueryRow(ctx, `
		WITH ins AS (
			INSERT INTO pircan_names (key, agent_id, created_at) VALUES ($1, $2, $3)
			ON CONFLICT (key) DO NOTHING RETURNING agent_id)
		SELECT agent_id FROM ins UNION ALL SELECT agent_id FROM pircan_names WHERE key = $1 LIMIT 1`,
		clean(key), agentID, now).Scan(&holder)
	if err != nil {
		return "", fmt.Errorf("pgstate: claim name: %w", err)
	}
	return holder, nil
}

// NameHolder implements pircan.State.
func (s *State) NameHolder(ctx context.Context, key string) (string, error) {
	var holder string
	err := s.pool.QueryRow(ctx, `SELECT agent_id FROM pircan_names WHERE key = $1`, clean(key)).Scan(&holder)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("pgstate: name holder: %w", err)
	}
	return holder, nil
}

// CheckAccount implements pircan.State (table pircan_accounts, migration
// 00076): the first id is kept; another is recorded as pending.
func (s *State) CheckAccount(ctx context.Context, account, id string, now time.Time) (bool, error) {
	var kept string
	err := s.pool.QueryRow(ctx, `
		INSERT INTO pircan_accounts (account, account_id, first_seen) VALUES ($1, $2, $3)
		ON CONFLICT (account) DO UPDATE SET
			pending_id = CASE WHEN pircan_accounts.account_id = $2 THEN pircan_accounts.pending_id ELSE $2 END,
			pending_since = CASE WHEN pircan_accounts.account_id = $2 THEN pircan_accounts.pending_since ELSE $3 END
		RETURNING account_id`, clean(account), clean(id), now).Scan(&kept)
	if err != nil {
		return false, fmt.Errorf("pgstate: check account: %w", err)
	}
	return kept == clean(id), nil
}

// ConfirmAccount implements pircan.State.
func (s *State) ConfirmAccount(ctx context.Context, account string, now time.Time) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE pircan_accounts SET account_id = pending_id, first_seen = $2, pending_id = NULL, pending_since = NULL
		WHERE account = $1 AND pending_id IS NOT NULL`, clean(account), now)
	if err != nil {
		return false, fmt.Errorf("pgstate: confirm account: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}
