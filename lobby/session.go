package lobby

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/venuehq/venue/admission"
	"github.com/venuehq/venue/briefs"
	"github.com/venuehq/venue/hub"
	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/wire"
)

// Limits of one lobby session (PROTOCOL.md "Limits and close codes"): FramesPerSecond
// requests a second with bursts of FrameBurst; over it a request gets
// rate_limited, and AbuseBurst refusals beyond one a second close the
// session with 1008.
type Limits struct {
	FramesPerSecond float64
	FrameBurst      int
	AbuseBurst      int
	// Now is the clock of the rate limits (nil: the wall clock; the
	// negotiation clocks' fake time in tests does not refill them).
	Now func() time.Time
	// Rate, if set, is the connection's frame rate, shared with its
	// transport (a WebSocket's pings draw on it too); the fields above are
	// then unused.
	Rate *admission.FrameRate
}

// Session is one agent's connection to the lobby over any transport (a
// WebSocket, an IRC line, an MCP call): it answers the agent's requests
// under its rate limit, and sends it its pushes (negotiation_requested,
// _accepted, _declined) with each negotiation_requested sent once, and, for
// a bouncer, the requests still pending when it connects
// (PROTOCOL.md "Lobby socket").
type Session struct {
	svc     *Service
	t       hub.Transport
	agentID string
	agent   store.Agent          // as last read
	rate    *admission.FrameRate // requests in
	cancel  func()

	mu     sync.Mutex
	pushed map[string]bool // negotiation_requested already sent, by negotiation id
}

// Open starts a session of agent on t: it subscribes to the agent's pushes
// first, then replays the pending requests addressed to a bouncer, so none
// falls between and none comes twice. Close ends it.
func (s *Service) Open(ctx context.Context, agent store.Agent, t hub.Transport, lim Limits) *Session {
	if lim.Rate == nil {
		lim.Rate = admission.NewFrameRate(lim.FramesPerSecond, lim.FrameBurst, lim.AbuseBurst, lim.Now)
	}
	ss := &Session{svc: s, t: t, agentID: agent.ID, agent: agent, rate: lim.Rate, pushed: map[string]bool{}}
	ss.cancel = s.Rooms.SubscribeAgent(agent.ID, ss.push)
	if agent.Role == negotiation.RoleBouncer {
		ss.replay(ctx)
	}
	return ss
}

// push is the bus callback: it only de-duplicates and queues.
func (ss *Session) push(b []byte) {
	if len(b) == 0 { // a lost lobby push is not recovered (PROTOCOL.md "Several nodes, one venue")
		return
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if id := requestedID(b) + briefs.ReceivedOffer(b); id != "" {
		if ss.pushed[id] {
			return
		}
		ss.pushed[id] = true
	}
	ss.t.Write(b)
}

// replay sends the requests pending for the bouncer that have not lapsed,
// and the briefs addressed to it that are still collecting.
func (ss *Session) replay(ctx context.Context) {
	pending, err := ss.svc.Store.PendingFor(ctx, ss.agentID)
	if err != nil {
		return // the requests are pushed again when the brand asks anew
	}
	var frames []json.RawMessage
	var offers []string
	if ss.svc.Briefs != nil {
		frames, offers = ss.svc.Briefs.Replay(ctx, ss.agentID)
	}
	now := ss.svc.Now()
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for _, st := range pending {
		if now.Before(st.RequestExpiresAt) && !ss.pushed[st.ID] {
			ss.pushed[st.ID] = true
			ss.t.Write(st.RequestedFrame())
		}
	}
	for i, f := range frames { // briefs still collecting (PROTOCOL.md "Sealed briefs")
		if !ss.pushed[offers[i]] {
			ss.pushed[offers[i]] = true
			ss.t.Write(f)
		}
	}
}

// Receive answers one request of the agent and writes the reply. Over the
// rate limit the reply is rate_limited; sustained abuse closes the
// transport with 1008 and Receive returns false.
func (ss *Session) Receive(ctx context.Context, data []byte) bool {
	if ok, closed := ss.rate.Allow(); !ok {
		if closed {
			ss.t.Close(hub.ClosePolicy, "too many refused frames")
			return false
		}
		ss.t.Write(wire.ErrorFrame(wire.Errorf(wire.CodeRateLimited, "over %v frames a second", ss.rate.PerSecond()), negotiation.ClientID(data)))
		return true
	}
	// The agent's record may have changed (reputation, profile): read it fresh.
	if a, err := ss.svc.Store.Agent(ctx, ss.agentID); err == nil {
		ss.agent = a
	}
	ss.t.Write(ss.svc.Handle(ctx, ss.agent, data))
	return true
}

// Close ends the session's subscription (the transport is the caller's).
func (ss *Session) Close() { ss.cancel() }

var requestedType = []byte(`"type":"` + negotiation.TypeNegotiationRequested + `"`)

// requestedID returns the negotiation id of a negotiation_requested push,
// "" for any other frame.
func requestedID(b []byte) string {
	if !bytes.Contains(b, requestedType) {
		return ""
	}
	var f struct {
		Type string `json:"type"`
		ID   string `json:"negotiation_id"`
	}
	if json.Unmarshal(b, &f) != nil || f.Type != negotiation.TypeNegotiationRequested {
		return ""
	}
	return f.ID
}
