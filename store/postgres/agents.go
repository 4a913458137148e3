package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/venuehq/venue/internal/pgutil"
	"github.com/venuehq/venue/store"
)

// agentCols are an agent's columns as scanAgent reads them (Online false).
const agentCols = `id, name, role, key_hash, principal_key, principal_thumbprint, profile, reputation, created_at, key_issued_at,
	irc_account, irc_nick, capabilities, card_url, house, last_seen_at, false`

// agentColsOnline is agentCols with Online judged at $6.
const agentColsOnline = `id, name, role, key_hash, principal_key, principal_thumbprint, profile, reputation, created_at, key_issued_at,
	irc_account, irc_nick, capabilities, card_url, house, last_seen_at,
	EXISTS (SELECT 1 FROM presence p WHERE p.agent_id = agents.id AND p.expires_at > $6)`

// CreateAgent implements store.Store.
func (s *Store) CreateAgent(parent context.Context, a store.Agent) (err error) {
	ctx, cancel := s.bounded(parent)
	defer cancel()
	defer settle(parent, &err)
	profile, err := json.Marshal(a.Profile)
	if err != nil {
		return fmt.Errorf("postgres: create agent %s: profile: %w", a.ID, err)
	}
	name, desc, cats := searchFields(a.Name, a.Profile)
	var ircAccount *string
	ircNick, caps, cardURL := "", []string{}, ""
	if a.IRC != nil {
		acct := clean(a.IRC.Account)
		ircAccount, ircNick, cardURL = &acct, clean(a.IRC.Nick), clean(a.IRC.CardURL)
		for _, c := range a.IRC.Capabilities {
			caps = append(caps, clean(c))
		}
	}
	capSearch := store.CapabilityKeys(a)
	for i := range capSearch {
		capSearch[i] = clean(capSearch[i])
	}
	_, err = s.pool.Exec(ctx, `
		INSERT INTO agents (id, name, role, key_hash, principal_key, principal_thumbprint, profile,
			search_name, search_description, categories, reputation, created_at,
			irc_account, irc_nick, capabilities, card_url, capability_search, house, last_seen_at, key_issued_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19,
			COALESCE($20::timestamptz, $12::timestamptz))`,
		a.ID, a.Name, a.Role, a.KeyHash, nullJSON(a.PrincipalKey), a.PrincipalThumbprint, profile,
		name, desc, cats, a.Reputation, a.CreatedAt, ircAccount, ircNick, caps, cardURL, capSearch,
		a.House, pgutil.NullTime(a.LastSeenAt), pgutil.NullTime(a.KeyIssuedAt))
	if isUnique(err) {
		return conflict(err, "agent %s (id, key or irc account taken)", a.ID)
	}
	if err != nil {
		return fmt.Errorf("postgres: create agent %s: %w", a.ID, err)
	}
	return nil
}

// Agent implements store.Store.
func (s *Store) Agent(parent context.Context, id string) (_ store.Agent, err error) {
	ctx, cancel := s.bounded(parent)
	defer cancel()
	defer settle(parent, &err)
	if hasNUL(id) {
		return store.Agent{}, notFound("agent", id)
	}
	a, err := scanAgent(s.pool.QueryRow(ctx, `SELECT `+agentCols+` FROM agents WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Agent{}, notFound("agent", id)
	}
	if err != nil {
		return store.Agent{}, fmt.Errorf("postgres: agent %s: %w", id, err)
	}
	return a, nil
}

// AgentByKeyHash implements store.Store.
func (s *Store) AgentByKeyHash(parent context.Context, keyHash string) (_ store.Agent, err error) {
	ctx, cancel := s.bounded(parent)
	defer cancel()
	defer settle(parent, &err)
	if hasNUL(keyHash) {
		return store.Agent{}, fmt.Errorf("postgres: agent by key: %w", store.ErrNotFound)
	}
	a, err := scanAgent(s.pool.QueryRow(ctx, `SELECT `+agentCols+` FROM agents WHERE key_hash = $1`, keyHash))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Agent{}, fmt.Errorf("postgres: agent by key: %w", store.ErrNotFound)
	}
	if err != nil {
		return store.Agent{}, fmt.Errorf("postgres: agent by key: %w", err)
	}
	return a, nil
}

// AgentByIRCAccount implements store.Store.
func (s *Store) AgentByIRCAccount(parent context.Context, account string) (_ store.Agent, err error) {
	ctx, cancel := s.bounded(parent)
	defer cancel()
	defer settle(parent, &err)
	if hasNUL(account) {
		return store.Agent{}, fmt.Errorf("postgres: agent by irc account: %w", store.ErrNotFound)
	}
	a, err := scanAgent(s.pool.QueryRow(ctx, `SELECT `+agentCols+` FROM agents WHERE irc_account = $1`, account))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Agent{}, fmt.Errorf("postgres: agent by irc account: %w", store.ErrNotFound)
	}
	if err != nil {
		return store.Agent{}, fmt.Errorf("postgres: agent by irc account: %w", err)
	}
	return a, nil
}

// SetIRCNick implements store.Store.
func (s *Store) SetIRCNick(parent context.Context, id, nick string) (err error) {
	ctx, cancel := s.bounded(parent)
	defer cancel()
	defer settle(parent, &err)
	if hasNUL(id) {
		return notFound("irc agent", id)
	}
	tag, err := s.pool.Exec(ctx, `UPDATE agents SET irc_nick = $2 WHERE id = $1 AND irc_account IS NOT NULL`, id, clean(nick))
	if err != nil {
		return fmt.Errorf("postgres: set irc nick of %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return notFound("irc agent", id)
	}
	return nil
}

// SetProfile implements store.Store.
func (s *Store) SetProfile(parent context.Context, id string, p store.Profile) (err error) {
	ctx, cancel := s.bounded(parent)
	defer cancel()
	defer settle(parent, &err)
	if hasNUL(id) {
		return notFound("agent", id)
	}
	profile, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("postgres: set profile of %s: %w", id, err)
	}
	// search_name comes from the name, which a profile does not change.
	_, desc, cats := searchFields("", p)
	tag, err := s.pool.Exec(ctx, `
		UPDATE agents SET profile = $2, search_description = $3, categories = $4 WHERE id = $1`,
		id, profile, desc, cats)
	if err != nil {
		return fmt.Errorf("postgres: set profile of %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return notFound("agent", id)
	}
	return nil
}

// SetPrincipalKey implements store.Store.
func (s *Store) SetPrincipalKey(parent context.Context, id string, jwk json.RawMessage, thumbprint string) (err error) {
	ctx, cancel := s.bounded(parent)
	defer cancel()
	defer settle(parent, &err)
	if hasNUL(id) {
		return notFound("agent", id)
	}
	tag, err := s.pool.Exec(ctx, `UPDATE agents SET principal_key = $2, principal_thumbprint = $3 WHERE id = $1`,
		id, nullJSON(jwk), thumbprint)
	if err != nil {
		return fmt.Errorf("postgres: set principal key of %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return notFound("agent", id)
	}
	return nil
}

// Agents implements store.Store. The name and description match q as Go's
// strings.ToLower sees them (precomputed columns), the same as store/memory
// whatever the database's locale; names order bytewise (COLLATE "C").
func (s *Store) Agents(parent context.Context, q store.AgentQuery) (_ []store.Agent, _ int, err error) {
	ctx, cancel := s.bounded(parent)
	defer cancel()
	defer settle(parent, &err)
	if hasNUL(q.Role, q.Category, q.Q, q.Capability) {
		return nil, 0, nil
	}
	// $4 OnlineOnly, $5 ActiveSince (NULL: any), $6 Now, $7 capability.
	const where = `
		WHERE ($1 = '' OR role = $1)
		  AND ($2 = '' OR $2 = ANY (categories))
		  AND ($3 = '' OR strpos(search_name, $3) > 0 OR strpos(search_description, $3) > 0)
		  AND (NOT $4 OR EXISTS (SELECT 1 FROM presence p WHERE p.agent_id = agents.id AND p.expires_at > $6))
		  AND ($5::timestamptz IS NULL OR coalesce(last_seen_at, created_at) >= $5)
		  AND ($7 = '' OR capability_search @> ARRAY[$7])`
	needle, capability := strings.ToLower(q.Q), strings.ToLower(q.Capability)
	now := q.Now
	if now.IsZero() {
		now = time.Now()
	}
	args := []any{q.Role, q.Category, needle, q.OnlineOnly, pgutil.NullTime(q.ActiveSince), now, capability}
	var total int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM agents`+where, args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("postgres: count agents: %w", err)
	}
	limit := max(q.Limit, 0)
	rows, err := s.pool.Query(ctx, `SELECT `+agentColsOnline+` FROM agents`+where+`
		ORDER BY reputation DESC, name COLLATE "C", id COLLATE "C"
		LIMIT $8 OFFSET $9`, append(args, limit, max(q.Offset, 0))...)
	if err != nil {
		return nil, 0, fmt.Errorf("postgres: list agents: %w", err)
	}
	agents, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.Agent, error) { return scanAgent(r) })
	if err != nil {
		return nil, 0, fmt.Errorf("postgres: list agents: %w", err)
	}
	return agents, total, nil
}

func scanAgent(row pgx.Row) (store.Agent, error) {
	var a store.Agent
	var principalKey, profile []byte
	var created, keyIssued time.Time
	var ircAccount *string
	var irc store.IRCBinding
	var seen *time.Time
	if err := row.Scan(&a.ID, &a.Name, &a.Role, &a.KeyHash, &principalKey, &a.PrincipalThumbprint,
		&profile, &a.Reputation, &created, &keyIssued, &ircAccount, &irc.Nick, &irc.Capabilities, &irc.CardURL,
		&a.House, &seen, &a.Online); err != nil {
		return store.Agent{}, err
	}
	if ircAccount != nil {
		irc.Account = *ircAccount
		a.IRC = &irc
	}
	if seen != nil {
		a.LastSeenAt = seen.UTC()
	}
	if len(principalKey) > 0 {
		a.PrincipalKey = principalKey
	}
	if err := json.Unmarshal(profile, &a.Profile); err != nil {
		return store.Agent{}, fmt.Errorf("profile of %s: %w", a.ID, err)
	}
	a.CreatedAt, a.KeyIssuedAt = created.UTC(), keyIssued.UTC()
	return a, nil
}

// ReplaceKey implements store.Store: one conditional UPDATE, so two
// concurrent replacements cannot both pass the `before` test.
func (s *Store) ReplaceKey(parent context.Context, id, newHash string, before, at time.Time) (_ bool, err error) {
	ctx, cancel := s.bounded(parent)
	defer cancel()
	defer settle(parent, &err)
	if hasNUL(id, newHash) {
		return false, notFound("agent", id)
	}
	if newHash == "" {
		newHash = store.DisabledKeyHash(id, at)
	}
	tag, err := s.pool.Exec(ctx, `
		UPDATE agents SET key_hash = $2, key_issued_at = $3
		WHERE id = $1 AND ($4::timestamptz IS NULL OR key_issued_at < $4)`, id, newHash, at, pgutil.NullTime(before))
	if isUnique(err) {
		return false, conflict(err, "agent %s key", id)
	}
	if err != nil {
		return false, fmt.Errorf("postgres: replace key of %s: %w", id, err)
	}
	if tag.RowsAffected() == 1 {
		return true, nil
	}
	if _, err := s.Agent(ctx, id); err != nil {
		return false, err
	}
	return false, nil
}

// searchFields are the derived columns of browse: lower-cased name and
// description, the categories; NUL (which text cannot hold) becomes U+FFFD.
func searchFields(name string, p store.Profile) (string, string, []string) {
	cats := make([]string, 0, len(p.Categories)) // never nil: the column is NOT NULL
	for _, c := range p.Categories {
		cats = append(cats, clean(c))
	}
	return clean(strings.ToLower(name)), clean(strings.ToLower(p.Description)), cats
}

// clean replaces NUL, which text cannot hold, with U+FFFD.
func clean(s string) string { return strings.ReplaceAll(s, "\x00", "\uFFFD") }

// nullJSON is NULL for an absent JSON value, the bytes otherwise.
func nullJSON(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return []byte(b)
}

// CreateOffer implements store.Store.
func (s *Store) CreateOffer(parent context.Context, o store.Offer) (err error) {
	ctx, cancel := s.bounded(parent)
	defer cancel()
	defer settle(parent, &err)
	_, err = s.pool.Exec(ctx, `
		INSERT INTO offers (id, brand, bouncer, body, arena, negotiation_id, created_at)
		VALUES ($1, $2, $3, $4, $5, NULLIF($6, ''), $7)`,
		o.ID, o.Brand, o.Bouncer, nullJSON(o.Body), o.Arena, o.NegotiationID, o.CreatedAt)
	if isUnique(err) {
		return conflict(err, "offer %s", o.ID)
	}
	if err != nil {
		return fmt.Errorf("postgres: create offer %s: %w", o.ID, err)
	}
	return nil
}

// Offer implements store.Store.
func (s *Store) Offer(parent context.Context, id string) (_ store.Offer, err error) {
	ctx, cancel := s.bounded(parent)
	defer cancel()
	defer settle(parent, &err)
	if hasNUL(id) {
		return store.Offer{}, notFound("offer", id)
	}
	var o store.Offer
	var body []byte
	var negID *string
	var created time.Time
	err = s.pool.QueryRow(ctx, `
		SELECT id, brand, bouncer, body, arena, negotiation_id, created_at FROM offers WHERE id = $1`, id).
		Scan(&o.ID, &o.Brand, &o.Bouncer, &body, &o.Arena, &negID, &created)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Offer{}, notFound("offer", id)
	}
	if err != nil {
		return store.Offer{}, fmt.Errorf("postgres: offer %s: %w", id, err)
	}
	if len(body) > 0 {
		o.Body = body
	}
	if negID != nil {
		o.NegotiationID = *negID
	}
	o.CreatedAt = created.UTC()
	return o, nil
}
