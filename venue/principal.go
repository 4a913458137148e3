package venue

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/venuehq/venue/directory"
	"github.com/venuehq/venue/internal/httpapi"
	"github.com/venuehq/venue/internal/wsconn"
	"github.com/venuehq/venue/store"
)

// socketKey is the api_key of a socket upgrade: Authorization: Bearer (kept
// out of proxy logs), else ?token= (browsers cannot set the header)
// (PROTOCOL.md "Registration and auth"). Errors: unauthorized for two
// Authorization headers (httpapi.BearerKey).
func socketKey(c echo.Context) (string, error) {
	key, err := httpapi.BearerKey(c.Request())
	if key != "" || err != nil {
		return key, err
	}
	return c.QueryParam("token"), nil
}

// authenticate is the agent of a REST request's Authorization: Bearer
// api_key. Errors: unauthorized (no key, a bad one, two headers).
func (s *Server) authenticate(r *http.Request) (store.Agent, error) {
	key, err := httpapi.BearerKey(r)
	if err != nil {
		return store.Agent{}, err
	}
	return s.dir.Authenticate(r.Context(), key)
}

// handleRotateKey is POST /v1/agents/me/api-key: a fresh api_key, the old
// one dead at once (its sockets are closed). 201 {"agent_id","api_key"}.
func (s *Server) handleRotateKey(c echo.Context) error {
	a := agentOf(c)
	key := directory.NewAPIKey()
	now := s.clock.Now()
	if _, err := s.store.ReplaceKey(c.Request().Context(), a.ID, directory.HashKey(key), time.Time{}, now); err != nil {
		return err
	}
	s.announceKeyReplaced(c.Request().Context(), a.ID, now, "the api_key was replaced")
	s.log.Info("api key rotated", "agent_id", a.ID)
	return c.JSON(http.StatusCreated, map[string]string{"agent_id": a.ID, "api_key": key})
}

// closeAgentSockets closes (1008) this node's sockets of agentID that were
// opened with a key issued before `before` (other nodes hear of it on
// keysTopic, see announceKeyReplaced).
func (s *Server) closeAgentSockets(agentID string, before time.Time, reason string) {
	s.sockets.CloseAgent(agentID, before, reason)
}

// recheckKey closes cn (1008) if its agent's key was replaced after cn
// authenticated: a revocation that ran between the check and Track saw
// no socket to close. Call it right after s.sockets.Track.
func (s *Server) recheckKey(ctx context.Context, cn *wsconn.Conn) {
	if cn.AgentID == "" {
		return
	}
	a, err := s.store.Agent(ctx, cn.AgentID)
	if err == nil && !a.KeyIssuedAt.Equal(cn.KeyAt) {
		cn.Close(ClosePolicy, "the api_key was replaced")
	}
}

// keysTopic carries key replacements to every node, so each closes the
// sockets it holds for the old key (PROTOCOL.md "Registration and auth").
const keysTopic = "keys"

// keyReplaced is a keysTopic message.
type keyReplaced struct {
	AgentID string    `json:"agent_id"`
	Before  time.Time `json:"before"`
}

// announceKeyReplaced closes this node's sockets of agentID opened with a
// key issued before `before`, and tells the other nodes to do the same (a
// lost message leaves their sockets open until they reconnect; the old key
// opens nothing new).
func (s *Server) announceKeyReplaced(ctx context.Context, agentID string, before time.Time, reason string) {
	s.closeAgentSockets(agentID, before, reason)
	b, _ := json.Marshal(keyReplaced{AgentID: agentID, Before: before})
	if err := s.bus.Publish(ctx, keysTopic, b); err != nil {
		s.log.Warn("announce a replaced key", "agent_id", agentID, "err", err)
	}
}

// watchKeys subscribes to keysTopic; the returned function unsubscribes.
func (s *Server) watchKeys() func() {
	return s.bus.Subscribe(keysTopic, func(data []byte) {
		var m keyReplaced
		if len(data) == 0 || json.Unmarshal(data, &m) != nil || m.AgentID == "" {
			return
		}
		s.closeAgentSockets(m.AgentID, m.Before, "the api_key was replaced")
	})
}
