// Package directory is the venue's one directory of agents: who may
// register and how (PROTOCOL.md "Registration and auth"), API keys and how they are
// checked, profiles, and the search behind browse_bouncers. Every transport
// reaches agents through the Directory interface: the REST handlers and the
// lobby sockets of package venue, and the IRC bridge, so an agent
// registered on one is found on every other.
package directory

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/venuehq/venue/grants"
	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/wire"
)

// APIKeyPrefix starts every api_key (PROTOCOL.md "Registration and auth").
const APIKeyPrefix = "bsk_"

// Limits of a profile (PROTOCOL.md "REST").
const (
	MaxNameChars     = 80
	MaxCategories    = 50
	MaxDescription   = negotiation.MaxContentLen
	MaxCategoryChars = negotiation.MaxCategoryLen
)

// Registration is a new agent: a name (1-80 characters after trimming, no
// control or format characters), a role (brand or bouncer) and optionally
// its principal's public Ed25519 JWK.
type Registration struct {
	Name         string
	Role         string
	PrincipalKey json.RawMessage
}

// Directory is what a transport needs of the agent directory. Errors are
// *wire.Error for bad input (invalid_argument, unauthorized, not_found) and
// wrapped store errors otherwise.
type Directory interface {
	// Register creates an agent and returns it with its api_key, shown
	// this once (only its SHA-256 is kept).
	Register(ctx context.Context, r Registration) (store.Agent, string, error)
	// Authenticate resolves an api_key to its agent. Errors: unauthorized.
	Authenticate(ctx context.Context, apiKey string) (store.Agent, error)
	// Agent returns one agent. Errors: not_found.
	Agent(ctx context.Context, id string) (store.Agent, error)
	// SetProfile checks and replaces an agent's profile and returns the
	// agent as it is now.
	SetProfile(ctx context.Context, id string, p store.Profile) (store.Agent, error)
	// Find lists agents matching q and the total number of matches.
	Find(ctx context.Context, q store.AgentQuery) ([]store.Agent, int, error)
}

// Service is the Directory over a store. Now is injected.
type Service struct {
	Store store.Store
	Now   func() time.Time
}

var _ Directory = (*Service)(nil)

// Register implements Directory. Errors: invalid_argument naming the field.
func (s *Service) Register(ctx context.Context, r Registration) (store.Agent, string, error) {
	name, err := CheckName(r.Name)
	if err != nil {
		return store.Agent{}, "", err
	}
	if r.Role != negotiation.RoleBrand && r.Role != negotiation.RoleBouncer {
		return store.Agent{}, "", wire.Errorf(wire.CodeInvalidArgument, `role must be "brand" or "bouncer"`)
	}
	a := store.Agent{ID: NewID("agt"), Name: name, Role: r.Role, CreatedAt: s.Now().UTC()}
	if len(r.PrincipalKey) > 0 && string(r.PrincipalKey) != "null" {
		jwk, thumb, err := ParsePrincipalKey(r.PrincipalKey)
		if err != nil {
			return store.Agent{}, "", err
		}
		a.PrincipalKey, a.PrincipalThumbprint = jwk, thumb
	}
	key := NewAPIKey()
	a.KeyHash = HashKey(key)
	if err := s.Store.CreateAgent(ctx, a); err != nil {
		return store.Agent{}, "", err
	}
	return a, key, nil
}

// Authenticate implements Directory.
func (s *Service) Authenticate(ctx context.Context, apiKey string) (store.Agent, error) {
	if apiKey == "" {
		return store.Agent{}, wire.Errorf(wire.CodeUnauthorized, "an api_key is required (Authorization: Bearer, or ?token= on sockets)")
	}
	a, err := s.Store.AgentByKeyHash(ctx, HashKey(apiKey))
	if errors.Is(err, store.ErrNotFound) {
		return store.Agent{}, wire.Errorf(wire.CodeUnauthorized, "unknown api_key")
	}
	return a, err
}

// Agent implements Directory.
func (s *Service) Agent(ctx context.Context, id string) (store.Agent, error) {
	a, err := s.Store.Agent(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return a, wire.Errorf(wire.CodeNotFound, "no agent %s", id)
	}
	return a, err
}

// SetProfile implements Directory. Errors: invalid_argument.
func (s *Service) SetProfile(ctx context.Context, id string, p store.Profile) (store.Agent, error) {
	if err := CheckProfile(p); err != nil {
		return store.Agent{}, err
	}
	if err := s.Store.SetProfile(ctx, id, p); err != nil {
		return store.Agent{}, err
	}
	return s.Agent(ctx, id)
}

// Find implements Directory.
func (s *Service) Find(ctx context.Context, q store.AgentQuery) ([]store.Agent, int, error) {
	return s.Store.Agents(ctx, q)
}

// CheckName trims a name and checks it: 1-80 characters, no control or
// format characters (such as U+202E, which would reorder what others read).
func CheckName(name string) (string, *wire.Error) {
	name = strings.TrimSpace(name)
	if n := utf8.RuneCountInString(name); n < 1 || n > MaxNameChars {
		return "", wire.Errorf(wire.CodeInvalidArgument, "name must be 1-%d characters after trimming", MaxNameChars)
	}
	if strings.IndexFunc(name, func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }) >= 0 {
		return "", wire.Errorf(wire.CodeInvalidArgument, "name must not contain control or format characters (such as U+202E)")
	}
	return name, nil
}

// CheckProfile checks a profile's limits: description at most 4,000
// characters, at most 50 categories of 1-64 characters, audience an object.
func CheckProfile(p store.Profile) *wire.Error {
	if utf8.RuneCountInString(p.Description) > MaxDescription {
		return wire.Errorf(wire.CodeInvalidArgument, "description is longer than %d characters", MaxDescription)
	}
	if wire.HiddenAt(p.Description, true) >= 0 {
		return wire.Errorf(wire.CodeInvalidArgument, "description must not contain control or format characters (such as U+202E or U+200B; line breaks and tabs are fine)")
	}
	if len(p.Categories) > MaxCategories {
		return wire.Errorf(wire.CodeInvalidArgument, "at most %d categories", MaxCategories)
	}
	for _, cat := range p.Categories {
		if cat == "" || utf8.RuneCountInString(cat) > MaxCategoryChars {
			return wire.Errorf(wire.CodeInvalidArgument, "each category is 1-%d characters", MaxCategoryChars)
		}
		if wire.HiddenAt(cat, false) >= 0 {
			return wire.Errorf(wire.CodeInvalidArgument, "a category must not contain control or format characters (such as U+202E or U+200B)")
		}
	}
	if len(p.Audience) > 0 && p.Audience[0] != '{' {
		return wire.Errorf(wire.CodeInvalidArgument, "audience must be an object")
	}
	return nil
}

// ParsePrincipalKey checks a public Ed25519 JWK and returns it in its
// minimal form with its RFC 7638 thumbprint (DELEGATION.md
// "The principal and its key"). Errors: invalid_argument.
func ParsePrincipalKey(raw json.RawMessage) (json.RawMessage, string, error) {
	jwk, _, err := grants.ParseJWK(raw)
	if err != nil {
		return nil, "", wire.Errorf(wire.CodeInvalidArgument, "principal_key must be a public Ed25519 JWK {\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":...}: %v", err)
	}
	b, _ := json.Marshal(grants.JWK{Kty: jwk.Kty, Crv: jwk.Crv, X: jwk.X})
	return b, grants.Thumbprint(jwk), nil
}

// NewID returns prefix + "_" + 24 hex digits (96 random bits): an opaque id.
func NewID(prefix string) string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return prefix + "_" + hex.EncodeToString(b)
}

// NewAPIKey returns bsk_ + 32 random bytes in base64url.
func NewAPIKey() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return APIKeyPrefix + base64.RawURLEncoding.EncodeToString(b)
}

// HashKey is how an api_key is stored: hex SHA-256 (the key is 256 random
// bits, so a fast hash is enough).
func HashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// PublicProfile is the public view of an agent (get_profile, browse, REST
// GET /v1/agents/{id}/profile): no key, no principal.
func PublicProfile(a store.Agent) map[string]any {
	cats := a.Profile.Categories
	if cats == nil {
		cats = []string{}
	}
	p := map[string]any{
		"agent_id": a.ID, "name": a.Name, "role": a.Role, "reputation": a.Reputation,
		"description": a.Profile.Description, "categories": cats,
	}
	if len(a.Profile.Audience) > 0 {
		p["audience"] = a.Profile.Audience
	} else {
		p["audience"] = map[string]any{}
	}
	if a.House {
		p["house"] = true
	}
	if a.LastSeenAt.IsZero() {
		p["last_seen_at"] = nil
	} else {
		p["last_seen_at"] = wire.Time(a.LastSeenAt)
	}
	return p
}
