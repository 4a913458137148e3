// Package delegation is the venue's side of DELEGATION.md: grant upload,
// listing and revocation by the agent, the principal's own channel
// (revoking a grant or the api_key without the agent), escalation
// decisions, and the withdrawal of standing proposals a revocation left
// without authority. Every transport reaches these rules through Service;
// package venue carries them over HTTP.
//
// Rules take `now`; they never read the clock. Token errors are
// *grants.TokenError (their HTTP status is TokenError.HTTPStatus); every
// other refusal is a *wire.Error: no_principal_key, duplicate_jti,
// too_many_grants, escalation_closed, grant_negotiation, not_found,
// invalid_argument, conflict (DELEGATION.md "When a frame is refused").
package delegation

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/venuehq/venue/directory"
	"github.com/venuehq/venue/grants"
	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/wire"
)

// Agents finds an agent by id (directory.Service has it): an error wrapping
// store.ErrNotFound or a *wire.Error not_found when there is none.
type Agents interface {
	Agent(ctx context.Context, id string) (store.Agent, error)
}

// Rooms runs a step on a negotiation under its lock and publishes what it
// changed (hub.Hub has it).
type Rooms interface {
	Update(ctx context.Context, id string, step store.Step) (negotiation.State, negotiation.Outcome, error)
}

// DefaultMaxActiveGrants is the default cap on the active grants (neither
// revoked nor expired, of the agent's current principal key) an agent may
// hold (serve --max-active-grants; DELEGATION.md "Uploading, listing,
// revoking").
const DefaultMaxActiveGrants = 100

// GrantsPageLimit is the most grants one GET /v1/grants answer lists, and
// its default.
const GrantsPageLimit = 100

// Service is delegation's rules over a Store. Store, Agents, Rooms and
// Audience are required; OnKeyReplaced (no sockets closed when nil) and Log
// are optional.
type Service struct {
	Store  store.Store
	Agents Agents
	Rooms  Rooms
	// Audience is the `aud` every token must carry (Config.Audience).
	Audience string
	// MaxActiveGrants caps the active grants an agent holds (an upload past
	// it is refused with too_many_grants); 0 or less: no cap. Grants a
	// principal's escalation decision creates are not refused by it.
	MaxActiveGrants int
	// OnKeyReplaced is called after a principal revoked an agent's api_key
	// (or replaced it): the sockets opened with a key issued before `before`
	// must close (PROTOCOL.md "Registration and auth").
	OnKeyReplaced func(ctx context.Context, agentID string, before time.Time, reason string)
	Log           *slog.Logger
}

func (s *Service) log() *slog.Logger {
	if s.Log == nil {
		return slog.Default()
	}
	return s.Log
}

// Principal returns the agent's principal public key and its thumbprint.
// Errors: no_principal_key when the agent has none.
func Principal(a store.Agent) (ed25519.PublicKey, string, error) {
	if len(a.PrincipalKey) == 0 {
		return nil, "", wire.Errorf(wire.CodeNoPrincipalKey, "agent %s has no principal key: PUT /v1/agents/me/principal-key first", a.ID)
	}
	_, pub, err := grants.ParseJWK(a.PrincipalKey)
	if err != nil {
		return nil, "", fmt.Errorf("stored principal key of %s: %w", a.ID, err)
	}
	return pub, a.PrincipalThumbprint, nil
}

func (s *Service) opts(agentID string, now time.Time) grants.VerifyOptions {
	return grants.VerifyOptions{Audience: s.Audience, Subject: agentID, Now: now}
}

// Upload verifies a grant JWT signed by a's principal and stores it
// (POST /v1/grants, DELEGATION.md "The checks"). It returns the grant as the
// store keeps it (revoked already if the principal revoked it before the
// upload). Errors: no_principal_key, token errors, grant_negotiation (the
// grant names a negotiation a is not a party of), duplicate_jti,
// too_many_grants (a holds MaxActiveGrants active grants already).
func (s *Service) Upload(ctx context.Context, a store.Agent, token string, now time.Time) (store.GrantRecord, error) {
	pub, thumb, err := Principal(a)
	if err != nil {
		return store.GrantRecord{}, err
	}
	g, err := grants.Verify(token, pub, thumb, s.opts(a.ID, now))
	if err != nil {
		return store.GrantRecord{}, err
	}
	if id := g.Scope.NegotiationID; id != "" {
		st, err := s.Store.Negotiation(ctx, id)
		if err != nil || !st.IsParty(a.ID) {
			return store.GrantRecord{}, wire.Errorf(wire.CodeGrantNegotiation, "the grant names negotiation %s, which is not one of yours", id)
		}
	}
	rec, err := grants.RecordOf(g, a.ID, now)
	if err != nil {
		return store.GrantRecord{}, err
	}
	limit := s.MaxActiveGrants
	err = s.Store.SaveGrantCapped(ctx, rec, limit)
	switch {
	case errors.Is(err, store.ErrConflict):
		return store.GrantRecord{}, wire.Errorf(wire.CodeDuplicateJTI, "a grant with jti %s was already uploaded; every grant needs a fresh jti", g.JTI)
	case errors.Is(err, store.ErrLimit):
		return store.GrantRecord{}, wire.Errorf(wire.CodeTooManyGrants, "you hold %d active grants, the most this venue allows: revoke one (DELETE /v1/grants/{jti}) or let one expire", limit)
	case err != nil:
		return store.GrantRecord{}, err
	}
	s.log().Info("grant uploaded", "agent_id", a.ID, "jti", g.JTI, "exp", wire.Time(g.ExpiresAt))
	return s.stored(ctx, rec), nil
}

// stored is rec as the store keeps it after SaveGrant; rec itself if it
// cannot be read back.
func (s *Service) stored(ctx context.Context, rec store.GrantRecord) store.GrantRecord {
	recs, err := s.Store.Grants(ctx, rec.AgentID)
	if err != nil {
		return rec
	}
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].Issuer == rec.Issuer && recs[i].JTI == rec.JTI {
			return recs[i]
		}
	}
	return rec
}

// View is a grant as GET /v1/grants shows it, with its status at now for
// an agent whose principal key has thumbprint thumb (DELEGATION.md
// "Uploading, listing, revoking"): jti, iss, exp, grant (the scope), status,
// uploaded_at, spent_usd, and iat, negotiation_id, revoked_at when set.
func View(r store.GrantRecord, now time.Time, thumb string) map[string]any {
	v := map[string]any{
		"jti": r.JTI, "iss": r.Issuer, "exp": wire.Time(r.ExpiresAt), "grant": r.Scope,
		"status": r.Status(now, thumb), "uploaded_at": wire.Time(r.CreatedAt), "spent_usd": grants.FormatUSD(r.SpentCents),
	}
	if !r.IssuedAt.IsZero() {
		v["iat"] = wire.Time(r.IssuedAt)
	}
	if r.NegotiationID != "" {
		v["negotiation_id"] = r.NegotiationID
	}
	if !r.RevokedAt.IsZero() {
		v["revoked_at"] = wire.Time(r.RevokedAt)
	}
	return v
}

// List is one page of a's grants as View shows them at now (GET
// /v1/grants?after=&limit=), in upload order: up to limit (query text,
// 1-GrantsPageLimit, default GrantsPageLimit) uploaded after the cursor
// `after` ("": from the first). next is the cursor to pass as `after` for
// the following page, "" when this page ends the list. Cursors are opaque
// to the client. Errors: invalid_argument (a bad after or limit).
func (s *Service) List(ctx context.Context, a store.Agent, now time.Time, after, limit string) (items []map[string]any, next string, err error) {
	cursor, n := int64(0), GrantsPageLimit
	if after != "" {
		if cursor, err = strconv.ParseInt(after, 10, 64); err != nil || cursor < 1 {
			return nil, "", wire.Errorf(wire.CodeInvalidArgument, "after must be the next cursor of a previous answer")
		}
	}
	if limit != "" {
		if n, err = strconv.Atoi(limit); err != nil || n < 1 || n > GrantsPageLimit {
			return nil, "", wire.Errorf(wire.CodeInvalidArgument, "limit must be 1-%d", GrantsPageLimit)
		}
	}
	recs, err := s.Store.GrantsPage(ctx, a.ID, cursor, n+1)
	if err != nil {
		return nil, "", err
	}
	if len(recs) > n {
		recs = recs[:n]
		next = strconv.FormatInt(recs[n-1].Cursor, 10)
	}
	items = make([]map[string]any, 0, len(recs))
	for _, r := range recs {
		items = append(items, View(r, now, a.PrincipalThumbprint))
	}
	return items, next, nil
}

// Revoke is the agent's own revocation of its grant jti (DELETE
// /v1/grants/{jti}): it stops applying from the next binding frame; a
// standing proposal stays (DELEGATION.md "Uploading, listing, revoking").
// Errors: not_found when the agent has no such grant.
func (s *Service) Revoke(ctx context.Context, agentID, jti string, now time.Time) error {
	err := s.Store.RevokeGrant(ctx, agentID, jti, now)
	if errors.Is(err, store.ErrNotFound) {
		return wire.Errorf(wire.CodeNotFound, "you have no grant %s", jti)
	} else if err != nil {
		return err
	}
	s.log().Info("grant revoked", "agent_id", agentID, "jti", jti)
	return nil
}

// SetPrincipalKey sets a's principal key to the public JWK raw (PUT
// /v1/agents/me/principal-key, DELEGATION.md "The principal and its key"). The first
// key is set on the agent's api key alone (trust on first use); replacing a
// key needs proof(), a key-rotation+jwt signed by the CURRENT principal key
// naming the new key's thumbprint, so an agent cannot swap its principal's
// key for its own. Grants signed by the old key stop applying. It returns
// the key as stored and its thumbprint. Errors: invalid_argument (bad JWK),
// proof_required, the proof's token errors.
func (s *Service) SetPrincipalKey(ctx context.Context, a store.Agent, raw json.RawMessage, proof func() (string, error), now time.Time) (json.RawMessage, string, error) {
	jwk, thumb, err := directory.ParsePrincipalKey(raw)
	if err != nil {
		return nil, "", err
	}
	if len(a.PrincipalKey) > 0 && thumb != a.PrincipalThumbprint {
		p, err := proof()
		if err != nil {
			return nil, "", err
		}
		if p == "" {
			return nil, "", wire.Errorf(wire.CodeProofRequired, "agent %s already has a principal key: replacing it needs a proof signed by that key (venue rotate-key)", a.ID)
		}
		cur, curThumb, err := Principal(a)
		if err != nil {
			return nil, "", err
		}
		if err := grants.VerifyRotation(p, cur, curThumb, thumb, s.opts(a.ID, now)); err != nil {
			return nil, "", err
		}
	}
	if err := s.Store.SetPrincipalKey(ctx, a.ID, jwk, thumb); err != nil {
		return nil, "", err
	}
	s.log().Info("principal key set", "agent_id", a.ID, "thumbprint", thumb, "rotated", len(a.PrincipalKey) > 0)
	return jwk, thumb, nil
}
