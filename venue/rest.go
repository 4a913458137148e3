package venue

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/venuehq/venue/grants"
	"github.com/venuehq/venue/lobby"
	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/wire"
)

// APIKeyPrefix starts every api_key (VENUE.md §1).
const APIKeyPrefix = "bsk_"

// newID returns prefix_ + 16 random bytes, base32-ish hex: opaque ids.
func newID(prefix string) string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return prefix + "_" + hex.EncodeToString(b)
}

// newAPIKey returns bsk_ + 32 random bytes in base64url.
func newAPIKey() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return APIKeyPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// hashKey is how an api_key is stored: hex SHA-256 (the key is 256 random
// bits, so a fast hash is enough).
func hashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

const agentKey = "agent"

// authenticate resolves an api_key to its agent. Errors: unauthorized.
func (s *Server) authenticate(ctx context.Context, key string) (store.Agent, error) {
	if key == "" {
		return store.Agent{}, wire.Errorf(wire.CodeUnauthorized, "an api_key is required (Authorization: Bearer, or ?token= on sockets)")
	}
	a, err := s.store.AgentByKeyHash(ctx, hashKey(key))
	if errors.Is(err, store.ErrNotFound) {
		return store.Agent{}, wire.Errorf(wire.CodeUnauthorized, "unknown api_key")
	}
	return a, err
}

// requireAgent authenticates Authorization: Bearer <api_key>.
func (s *Server) requireAgent(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Request().Header.Get("Authorization")
		key, ok := strings.CutPrefix(h, "Bearer ")
		if !ok {
			key = ""
		}
		a, err := s.authenticate(c.Request().Context(), strings.TrimSpace(key))
		if err != nil {
			return err
		}
		c.Set(agentKey, a)
		return next(c)
	}
}

func agentOf(c echo.Context) store.Agent { return c.Get(agentKey).(store.Agent) }

// body reads a JSON object body strictly (wire.DecodeObject).
func body(c echo.Context) (map[string]json.RawMessage, error) {
	b, err := io.ReadAll(c.Request().Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, wire.Errorf(wire.CodeTooLarge, "body over %d bytes", MaxBodyBytes)
		}
		return nil, wire.Errorf(wire.CodeInvalidJSON, "cannot read the body")
	}
	if !utf8.Valid(b) {
		return nil, wire.Errorf(wire.CodeInvalidJSON, "the body is not valid UTF-8")
	}
	m, werr := wire.DecodeObject(b)
	if werr != nil {
		return nil, werr
	}
	return m, nil
}

func getString(m map[string]json.RawMessage, key string) (string, bool, *wire.Error) {
	raw, ok := m[key]
	if !ok || string(raw) == "null" {
		return "", false, nil
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", true, wire.Errorf(wire.CodeInvalidArgument, "%s must be a string", key)
	}
	return s, true, nil
}

// handleRegister is POST /v1/register {"name","role","principal_key"?}
// -> 201 {"agent_id","api_key"} (VENUE.md §1).
func (s *Server) handleRegister(c echo.Context) error {
	m, err := body(c)
	if err != nil {
		return err
	}
	name, _, werr := getString(m, "name")
	if werr != nil {
		return werr
	}
	name = strings.TrimSpace(name)
	if n := utf8.RuneCountInString(name); n < 1 || n > 80 {
		return wire.Errorf(wire.CodeInvalidArgument, "name must be 1-80 characters after trimming")
	}
	if strings.IndexFunc(name, func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }) >= 0 {
		return wire.Errorf(wire.CodeInvalidArgument, "name must not contain control or format characters (such as U+202E)")
	}
	role, _, werr := getString(m, "role")
	if werr != nil {
		return werr
	}
	if role != negotiation.RoleBrand && role != negotiation.RoleBouncer {
		return wire.Errorf(wire.CodeInvalidArgument, `role must be "brand" or "bouncer"`)
	}
	a := store.Agent{ID: newID("agt"), Name: name, Role: role, CreatedAt: s.clock.Now().UTC()}
	if raw, ok := m["principal_key"]; ok && string(raw) != "null" {
		jwk, thumb, err := parsePrincipalKey(raw)
		if err != nil {
			return err
		}
		a.PrincipalKey, a.PrincipalThumbprint = jwk, thumb
	}
	key := newAPIKey()
	a.KeyHash = hashKey(key)
	if err := s.store.CreateAgent(c.Request().Context(), a); err != nil {
		return err
	}
	s.log.Info("agent registered", "agent_id", a.ID, "role", role)
	return c.JSON(http.StatusCreated, map[string]string{"agent_id": a.ID, "api_key": key})
}

func parsePrincipalKey(raw json.RawMessage) (json.RawMessage, string, error) {
	jwk, _, err := grants.ParseJWK(raw)
	if err != nil {
		return nil, "", wire.Errorf(wire.CodeInvalidArgument, "principal_key must be a public Ed25519 JWK {\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":...}: %v", err)
	}
	b, _ := json.Marshal(grants.JWK{Kty: jwk.Kty, Crv: jwk.Crv, X: jwk.X})
	return b, grants.Thumbprint(jwk), nil
}

// handleMe is GET /v1/agents/me: the agent's own record.
func (s *Server) handleMe(c echo.Context) error {
	a := agentOf(c)
	p := lobby.PublicProfile(a)
	if len(a.PrincipalKey) > 0 {
		p["principal_key"] = a.PrincipalKey
		p["principal_thumbprint"] = a.PrincipalThumbprint
	} else {
		p["principal_key"] = nil
	}
	p["created_at"] = wire.Time(a.CreatedAt)
	return c.JSON(http.StatusOK, p)
}

// handleSetProfile is PUT /v1/agents/me/profile {description, categories,
// audience}.
func (s *Server) handleSetProfile(c echo.Context) error {
	m, err := body(c)
	if err != nil {
		return err
	}
	var p store.Profile
	desc, _, werr := getString(m, "description")
	if werr != nil {
		return werr
	}
	if utf8.RuneCountInString(desc) > negotiation.MaxContentLen {
		return wire.Errorf(wire.CodeInvalidArgument, "description is longer than %d characters", negotiation.MaxContentLen)
	}
	p.Description = desc
	if raw, ok := m["categories"]; ok && string(raw) != "null" {
		if json.Unmarshal(raw, &p.Categories) != nil {
			return wire.Errorf(wire.CodeInvalidArgument, "categories must be an array of strings")
		}
		if len(p.Categories) > 50 {
			return wire.Errorf(wire.CodeInvalidArgument, "at most 50 categories")
		}
		for _, cat := range p.Categories {
			if cat == "" || utf8.RuneCountInString(cat) > negotiation.MaxCategoryLen {
				return wire.Errorf(wire.CodeInvalidArgument, "each category is 1-%d characters", negotiation.MaxCategoryLen)
			}
		}
	}
	if raw, ok := m["audience"]; ok && string(raw) != "null" {
		if len(raw) == 0 || raw[0] != '{' {
			return wire.Errorf(wire.CodeInvalidArgument, "audience must be an object")
		}
		p.Audience = raw
	}
	a := agentOf(c)
	if err := s.store.SetProfile(c.Request().Context(), a.ID, p); err != nil {
		return err
	}
	a.Profile = p
	return c.JSON(http.StatusOK, lobby.PublicProfile(a))
}

// handleSetPrincipalKey is PUT /v1/agents/me/principal-key with
// {"principal_key": JWK, "proof": JWT} (or the bare JWK the first time). The
// first key is set on the agent's api key alone (trust on first use); to
// replace a key, "proof" must be a key-rotation+jwt signed by the CURRENT
// principal key naming the new key's thumbprint, so an agent cannot swap its
// principal's key for its own. Grants signed by the old key stop applying.
// Errors: 422 invalid_argument (bad JWK), 403 proof_required, token errors
// of the proof (401/403/422).
func (s *Server) handleSetPrincipalKey(c echo.Context) error {
	m, err := body(c)
	if err != nil {
		return err
	}
	raw, _ := json.Marshal(m)
	if pk, ok := m["principal_key"]; ok {
		raw = pk
	}
	jwk, thumb, err := parsePrincipalKey(raw)
	if err != nil {
		return err
	}
	a := agentOf(c)
	if len(a.PrincipalKey) > 0 && thumb != a.PrincipalThumbprint {
		proof, _, werr := getString(m, "proof")
		if werr != nil {
			return werr
		}
		if proof == "" {
			return wire.Errorf(wire.CodeProofRequired, "agent %s already has a principal key: replacing it needs a proof signed by that key (venue rotate-key)", a.ID)
		}
		cur, curThumb, err := principal(a)
		if err != nil {
			return err
		}
		if err := grants.VerifyRotation(proof, cur, curThumb, thumb, grants.VerifyOptions{
			Audience: s.cfg.Audience, Subject: a.ID, Now: s.clock.Now()}); err != nil {
			return asWire(err)
		}
	}
	if err := s.store.SetPrincipalKey(c.Request().Context(), a.ID, jwk, thumb); err != nil {
		return err
	}
	s.log.Info("principal key set", "agent_id", a.ID, "thumbprint", thumb, "rotated", len(a.PrincipalKey) > 0)
	return c.JSON(http.StatusOK, map[string]any{"principal_key": json.RawMessage(jwk), "thumbprint": thumb})
}

// handleProfile is GET /v1/agents/:id/profile (public).
func (s *Server) handleProfile(c echo.Context) error {
	a, err := s.store.Agent(c.Request().Context(), c.Param("id"))
	if errors.Is(err, store.ErrNotFound) {
		return wire.Errorf(wire.CodeNotFound, "no agent %s", c.Param("id"))
	} else if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, lobby.PublicProfile(a))
}

// NegotiationView is the public view of a negotiation (what observers may
// know): no escalation contents, no idempotency keys.
func NegotiationView(st negotiation.State) map[string]any {
	v := map[string]any{
		"negotiation_id": st.ID, "offer_id": st.OfferID, "offer": st.Offer, "status": st.Status,
		"brand": st.Brand, "bouncer": st.Bouncer, "arena": st.Arena,
		"created_at": wire.Time(st.CreatedAt), "last_seq": st.LastSeq, "head_hash": st.HeadHash,
	}
	if !st.StartedAt.IsZero() {
		v["started_at"], v["deadline_at"] = wire.Time(st.StartedAt), wire.Time(st.DeadlineAt)
	}
	var started map[string]any
	_ = json.Unmarshal(st.StartedFrame(), &started)
	if ctx, ok := started["context"].(map[string]any); ok {
		v["turn"], v["turn_deadline_at"], v["standing"] = ctx["turn"], ctx["turn_deadline_at"], ctx["standing"]
		if p, ok := ctx["turn_paused"]; ok {
			v["turn_paused"] = p
		}
	}
	if st.Status == negotiation.StatusPending {
		v["request_expires_at"] = wire.Time(st.RequestExpiresAt)
	}
	if !st.EndedAt.IsZero() {
		v["ended_at"] = wire.Time(st.EndedAt)
		if st.EndedBy != "" {
			v["ended_by"] = st.EndedBy
		}
		if st.Reason != "" {
			v["reason"] = st.Reason
		}
	}
	if st.Status == negotiation.StatusDeal {
		v["terms"], v["offer_hash"] = st.DealTerms, st.DealOfferHash
	}
	return v
}

func (s *Server) negotiation(c echo.Context) (negotiation.State, error) {
	st, err := s.store.Negotiation(c.Request().Context(), c.Param("id"))
	if errors.Is(err, store.ErrNotFound) {
		return st, wire.Errorf(wire.CodeNotFound, "no negotiation %s", c.Param("id"))
	}
	return st, err
}

// handleNegotiation is GET /v1/negotiations/:id (public view).
func (s *Server) handleNegotiation(c echo.Context) error {
	st, err := s.negotiation(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, NegotiationView(st))
}

// handleTranscript is GET /v1/negotiations/:id/transcript: every transcript
// frame with its seq and chain hash (VENUE.md §8).
func (s *Server) handleTranscript(c echo.Context) error {
	st, err := s.negotiation(c)
	if err != nil {
		return err
	}
	entries, err := s.store.Transcript(c.Request().Context(), st.ID, 0)
	if err != nil {
		return err
	}
	if entries == nil {
		entries = []negotiation.Entry{}
	}
	head := ""
	var last int64
	if n := len(entries); n > 0 {
		head, last = entries[n-1].Hash, entries[n-1].Seq
	}
	return c.JSON(http.StatusOK, map[string]any{
		"negotiation_id": st.ID, "entries": entries, "last_seq": last, "head_hash": head,
		"hash_algorithm": `sha256(prev_hash || JCS(frame)), prev_hash "" for seq 1`,
	})
}
