package venue

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/venuehq/venue/directory"
	"github.com/venuehq/venue/internal/httpapi"
	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/spectate"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/wire"
)

// APIKeyPrefix starts every api_key (PROTOCOL.md "Registration and auth").
const APIKeyPrefix = directory.APIKeyPrefix

// jwkMembers are the members a bare public JWK may carry (RFC 7517 section 4).
var jwkMembers = []string{"kty", "crv", "x", "kid", "alg", "use", "key_ops", "x5u", "x5c", "x5t", "x5t#S256"}

// requireAgent authenticates Authorization: Bearer <api_key>.
func (s *Server) requireAgent(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		a, err := s.authenticate(c.Request())
		if err != nil {
			return err
		}
		httpapi.SetAgent(c, a)
		return next(c)
	}
}

func agentOf(c echo.Context) store.Agent {
	a, _ := httpapi.Agent(c)
	return a
}

// body reads a JSON object body strictly (httpapi.Body).
func body(c echo.Context) (map[string]json.RawMessage, error) { return httpapi.Body(c) }

// handleRegister is POST /v1/register {"name","role","principal_key"?}
// -> 201 {"agent_id","api_key"} (PROTOCOL.md "Registration and auth").
func (s *Server) handleRegister(c echo.Context) error {
	m, err := body(c)
	if err != nil {
		return err
	}
	f := wire.NewFields(m)
	f.Only("name", "role", "principal_key")
	name := f.String("name", false)
	if f.Err != nil {
		return f.Err
	}
	if _, werr := directory.CheckName(name); werr != nil {
		return werr
	}
	role := f.String("role", false)
	if f.Err != nil {
		return f.Err
	}
	a, key, err := s.dir.Register(c.Request().Context(), directory.Registration{Name: name, Role: role, PrincipalKey: m["principal_key"]})
	if err != nil {
		return err
	}
	s.log.Info("agent registered", "agent_id", a.ID, "role", role)
	return c.JSON(http.StatusCreated, map[string]string{"agent_id": a.ID, "api_key": key})
}

// handleMe is GET /v1/agents/me: the agent's own record.
func (s *Server) handleMe(c echo.Context) error {
	a := agentOf(c)
	p := directory.PublicProfile(a)
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
	f := wire.NewFields(m)
	f.Only("description", "categories", "audience")
	p := store.Profile{Description: f.String("description", false)}
	if f.Err != nil {
		return f.Err
	}
	// Checked in the order of the body's fields, so one bad input gets the
	// same answer whatever else is wrong.
	if werr := directory.CheckProfile(p); werr != nil {
		return werr
	}
	if f.Has("categories") && json.Unmarshal(m["categories"], &p.Categories) != nil {
		return wire.Errorf(wire.CodeInvalidArgument, "categories must be an array of strings")
	}
	if werr := directory.CheckProfile(p); werr != nil {
		return werr
	}
	if f.Has("audience") {
		p.Audience = m["audience"]
		if p.Audience[0] != '{' {
			return wire.Errorf(wire.CodeInvalidArgument, "audience must be an object")
		}
	}
	a, err := s.dir.SetProfile(c.Request().Context(), agentOf(c).ID, p)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, directory.PublicProfile(a))
}

// handleSetPrincipalKey is PUT /v1/agents/me/principal-key with
// {"principal_key": JWK, "proof": JWT} (or the bare JWK the first time):
// delegation.Service.SetPrincipalKey.
func (s *Server) handleSetPrincipalKey(c echo.Context) error {
	m, err := body(c)
	if err != nil {
		return err
	}
	raw, _ := json.Marshal(m)
	allowed := jwkMembers
	if pk, ok := m["principal_key"]; ok {
		raw, allowed = pk, []string{"principal_key", "proof"}
	}
	if f := wire.NewFields(m); f.Only(allowed...) != nil {
		return f.Err
	}
	proof := func() (string, error) {
		f := wire.NewFields(m)
		p := f.String("proof", false)
		if f.Err != nil {
			return "", f.Err
		}
		return p, nil
	}
	jwk, thumb, err := s.delegation.SetPrincipalKey(c.Request().Context(), agentOf(c), raw, proof, s.clock.Now())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"principal_key": json.RawMessage(jwk), "thumbprint": thumb})
}

// handleProfile is GET /v1/agents/:id/profile (public).
func (s *Server) handleProfile(c echo.Context) error {
	a, err := s.dir.Agent(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, directory.PublicProfile(a))
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
	if cut, ok := s.spectatorCutoff(c, &st); ok {
		return s.delayedView(c, st, cut)
	}
	return c.JSON(http.StatusOK, st.View())
}

// handleTranscript is GET /v1/negotiations/:id/transcript: every transcript
// frame with its seq and chain hash (PROTOCOL.md "Transcript, offer hash and chain hash").
func (s *Server) handleTranscript(c echo.Context) error {
	st, err := s.negotiation(c)
	if err != nil {
		return err
	}
	entries, err := s.store.Transcript(c.Request().Context(), st.ID, 0)
	if err != nil {
		return err
	}
	if cut, ok := s.spectatorCutoff(c, &st); ok {
		entries = spectate.Entries(entries, cut)
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
