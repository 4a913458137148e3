package demo

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/venuehq/venue/client"
	"github.com/venuehq/venue/grants"
)

// state is what the demo keeps between runs in Options.StateFile: per
// venue (its URL and grant audience), the agents it registered there, with
// their api keys and principal keys, so a rerun plays the same two agents
// instead of registering two more (the registration limit, PROTOCOL.md
// "Limits and close codes", and the bouncers left in browse).
type state struct {
	path   string
	Venues map[string]map[string]*savedAgent `json:"venues"` // venue -> role -> agent
}

// savedAgent is one agent the demo registered.
type savedAgent struct {
	AgentID string `json:"agent_id"`
	Name    string `json:"name"`
	APIKey  string `json:"api_key"`
	// PrincipalSeed is the principal's Ed25519 seed, base64url.
	PrincipalSeed string `json:"principal_seed"`
}

// loadState reads path; a missing file (or path "") is an empty state.
// A file that is not the demo's state is an error naming it (its keys are
// not thrown away).
func loadState(path string) (*state, error) {
	st := &state{path: path, Venues: map[string]map[string]*savedAgent{}}
	if path == "" {
		return st, nil
	}
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return nil, fmt.Errorf("the demo's state %s: %w", path, err)
	}
	if err := json.Unmarshal(raw, st); err != nil {
		return nil, fmt.Errorf("the demo's state %s is not what the demo writes (%v): move it away or pass another --state", path, err)
	}
	if st.Venues == nil {
		st.Venues = map[string]map[string]*savedAgent{}
	}
	return st, nil
}

// save writes the state (0600: it holds api keys and principal keys) by
// replacing the file whole.
func (s *state) save() error {
	if s.path == "" {
		return nil
	}
	dir := filepath.Dir(s.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("the demo's state: %w", err)
	}
	raw, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".demo-state-*")
	if err != nil {
		return fmt.Errorf("the demo's state: %w", err)
	}
	defer os.Remove(f.Name()) // gone after the rename
	if _, err := f.Write(raw); err != nil {
		f.Close()
		return fmt.Errorf("the demo's state: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("the demo's state: %w", err)
	}
	if err := os.Rename(f.Name(), s.path); err != nil {
		return fmt.Errorf("the demo's state: %w", err)
	}
	return nil
}

// agentSpec is one side the demo plays: its role, the name it registers
// under (with a suffix) and its principal's grant.
type agentSpec struct {
	role, name string
	scope      grants.Scope
}

// demoAgent is one side: its client, id and principal key.
type demoAgent struct {
	role, name string
	c          *client.Client
	id         string
	principal  ed25519.PrivateKey
}

// agent returns the demo's agent of spec on the venue: the one the state
// remembers when the venue still knows it (same role, same principal key),
// else a new one, registered and remembered at once. Either way it has a
// grant of spec.scope, active for at least grantMargin.
func (s *state) agent(ctx context.Context, c *client.Client, venue, aud string, spec agentSpec, out io.Writer) (demoAgent, error) {
	ag, reused, err := s.reuse(ctx, c, venue, spec)
	if err != nil {
		return demoAgent{}, err
	}
	if !reused {
		if ag, err = s.register(ctx, c, venue, spec); err != nil {
			return demoAgent{}, err
		}
	}
	g, err := ag.grant(ctx, aud, spec.scope)
	if err != nil {
		return demoAgent{}, err
	}
	how := "registered"
	if reused {
		how = "reused (" + s.path + ")"
	}
	fmt.Fprintf(out, "%-8s %s (%s), %s\n         principal key thumbprint %s…, grant %s %s\n",
		spec.role, ag.name, ag.id, how, grants.Thumbprint(grants.PublicJWK(ag.principal.Public().(ed25519.PublicKey)))[:12], g.JTI, g.Scope)
	return ag, nil
}

// reuse is the remembered agent of spec's role, if the venue still knows
// it as that role with that principal key.
func (s *state) reuse(ctx context.Context, c *client.Client, venue string, spec agentSpec) (demoAgent, bool, error) {
	sa := s.Venues[venue][spec.role]
	if sa == nil {
		return demoAgent{}, false, nil
	}
	seed, err := base64.RawURLEncoding.DecodeString(sa.PrincipalSeed)
	if err != nil || len(seed) != ed25519.SeedSize {
		return demoAgent{}, false, nil
	}
	ag := demoAgent{role: spec.role, name: sa.Name, c: c.WithKey(sa.APIKey), id: sa.AgentID, principal: ed25519.NewKeyFromSeed(seed)}
	me, err := ag.c.Me(ctx)
	switch {
	case client.IsCode(err, "unauthorized") || client.IsCode(err, "not_found"):
		return demoAgent{}, false, nil // a venue that forgot it (a memory store restarted) or a key replaced
	case err != nil:
		return demoAgent{}, false, fmt.Errorf("the %s of the last run (GET /v1/agents/me): %w", spec.role, err)
	}
	thumb := grants.Thumbprint(grants.PublicJWK(ag.principal.Public().(ed25519.PublicKey)))
	if me.AgentID != sa.AgentID || me.Role != spec.role || me.PrincipalThumbprint != thumb {
		return demoAgent{}, false, nil
	}
	return ag, true, nil
}

// register registers a new agent of spec with a new principal key and
// remembers it before anything else can fail.
func (s *state) register(ctx context.Context, c *client.Client, venue string, spec agentSpec) (demoAgent, error) {
	pub, priv, err := grants.GenerateKey()
	if err != nil {
		return demoAgent{}, err
	}
	name := fmt.Sprintf("%s %04x", spec.name, time.Now().UnixNano()&0xffff)
	jwk := grants.PublicJWK(pub)
	a, err := c.Register(ctx, name, spec.role, &jwk)
	if err != nil {
		return demoAgent{}, fmt.Errorf("register the %s: %w", spec.role, err)
	}
	if s.Venues[venue] == nil {
		s.Venues[venue] = map[string]*savedAgent{}
	}
	s.Venues[venue][spec.role] = &savedAgent{AgentID: a.ID, Name: name, APIKey: a.APIKey,
		PrincipalSeed: base64.RawURLEncoding.EncodeToString(priv.Seed())}
	if err := s.save(); err != nil {
		return demoAgent{}, err
	}
	return demoAgent{role: spec.role, name: name, c: c.WithKey(a.APIKey), id: a.ID, principal: priv}, nil
}

// grantMargin is how long a grant the demo reuses must still run; a new
// grant runs grantLife.
const (
	grantMargin = 15 * time.Minute
	grantLife   = time.Hour
)

// grant returns an active grant of scope with at least grantMargin left,
// uploading a new one the principal signs when there is none.
func (a demoAgent) grant(ctx context.Context, aud string, scope grants.Scope) (client.Grant, error) {
	list, err := a.c.Grants(ctx)
	if err != nil {
		return client.Grant{}, fmt.Errorf("the %s's grants: %w", a.role, err)
	}
	want, err := json.Marshal(scope)
	if err != nil {
		return client.Grant{}, err
	}
	now := time.Now()
	for _, g := range list {
		exp, err := time.Parse(time.RFC3339Nano, g.ExpiresAt)
		if g.Status == "active" && err == nil && exp.After(now.Add(grantMargin)) && sameScope(g.Scope, want) {
			return g, nil
		}
	}
	tok, err := grants.SignGrant(a.principal, grants.GrantClaims{
		Subject: a.id, Audience: aud, IssuedAt: now, ExpiresAt: now.Add(grantLife), Scope: scope,
	})
	if err != nil {
		return client.Grant{}, err
	}
	g, err := a.c.UploadGrant(ctx, tok)
	if err != nil {
		return client.Grant{}, fmt.Errorf("the %s's grant: %w", a.role, err)
	}
	if g.Status != "active" {
		return client.Grant{}, fmt.Errorf("the %s's grant is %s, not active", a.role, g.Status)
	}
	return g, nil
}

// sameScope reports whether the scope a grant view shows is want (both
// as grants.Scope renders them).
func sameScope(shown json.RawMessage, want []byte) bool {
	var s grants.Scope
	if json.Unmarshal(shown, &s) != nil {
		return false
	}
	got, err := json.Marshal(s)
	return err == nil && string(got) == string(want)
}
