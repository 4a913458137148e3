// Package room is a party's or an observer's side of one negotiation over
// any transport (a WebSocket, an IRC line, an MCP call, a REST request):
// a [Session] decodes the party's frames, applies the connection's frame
// rate, submits them to the room through the hub, answers the sender
// (message_ack, scope_block or error) and delivers the room's frames
// (PROTOCOL.md "Negotiation socket", "Observe socket"). It is to a room
// what lobby.Session is to the lobby; the transport only carries bytes.
package room

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"

	"github.com/venuehq/venue/admission"
	"github.com/venuehq/venue/hub"
	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/wire"
)

// Join checks that agentID may join negotiation st: "" (an observer) always
// may, a party only if it is one of the two; and only once the negotiation
// was accepted. Errors: forbidden, invalid_state (PROTOCOL.md "Negotiation
// socket").
func Join(st *negotiation.State, agentID string) *wire.Error {
	if agentID != "" && !st.IsParty(agentID) {
		return wire.Errorf(wire.CodeForbidden, "only the two parties connect to this socket; observers use /ws/observe")
	}
	if st.Status == negotiation.StatusPending || st.Status == negotiation.StatusDeclined {
		return wire.Errorf(wire.CodeInvalidState, "the negotiation is %s", st.Status)
	}
	return nil
}

// Options are a session's limits and hooks; every field is optional.
type Options struct {
	// Rate is the connection's frame rate (nil: admission's defaults of 10
	// a second, bursts of 20). An observer's frames are all refusals.
	Rate *admission.FrameRate
	// Shared, if set, counts one party frame against the budget every
	// node's sockets of this agent in this negotiation share; false refuses
	// the frame like the connection's own rate.
	Shared func(ctx context.Context) bool
	// Count, if set, is told the type of every frame received
	// ("invalid": undecodable), for the metrics.
	Count func(frameType string)
	// Log gets the venue's own failures (default slog.Default()).
	Log *slog.Logger
}

// Session is one connection's place in a room.
type Session struct {
	sub *hub.Subscription
	t   hub.Transport
	opt Options
}

// Open joins negotiation st (as Join allowed) on transport t: agentID is the
// party, "" an observer; since >= 0 replays the transcript after that seq
// (PROTOCOL.md "Replay with since"). From then on the room's frames are
// written to t; Close leaves.
func Open(h *hub.Hub, st *negotiation.State, agentID string, since int64, t hub.Transport, opt Options) *Session {
	if opt.Rate == nil {
		opt.Rate = admission.NewFrameRate(10, 20, 0, nil)
	}
	if opt.Log == nil {
		opt.Log = slog.Default()
	}
	return &Session{sub: h.Subscribe(st.ID, st, agentID, since, t), t: t, opt: opt}
}

// Close leaves the room (the transport is the caller's).
func (s *Session) Close() { s.sub.Close() }

// Receive takes one frame the connection sent and writes its answer to the
// transport: an observer's is refused silently, a party's goes through the
// room (or is answered rate_limited). It returns false once the transport
// was closed for sustained refusals (1008): stop reading. The answer to a
// submitted frame is written once it is committed, before what it caused
// is delivered; nothing else runs on the caller's goroutine after it.
func (s *Session) Receive(ctx context.Context, data []byte) bool {
	if s.sub.Agent() == "" { // observers are read-only
		return !s.refuse()
	}
	ok, closed := s.opt.Rate.Allow()
	if ok && s.opt.Shared != nil && !s.opt.Shared(ctx) {
		ok, closed = false, s.opt.Rate.Refuse()
	}
	switch {
	case closed:
		s.t.Close(hub.ClosePolicy, "too many refused frames")
		return false
	case !ok:
		s.t.Write(wire.ErrorFrame(wire.Errorf(wire.CodeRateLimited, "over %v frames a second", s.opt.Rate.PerSecond()), negotiation.ClientID(data)))
		return true
	}
	s.frame(ctx, data)
	return true
}

// refuse counts a frame the connection may not send; sustained, it closes
// the transport with 1008 and reports true.
func (s *Session) refuse() bool {
	if s.opt.Rate.Refuse() {
		s.t.Close(hub.ClosePolicy, "too many refused frames")
		return true
	}
	return false
}

// frame runs one party frame through the room and answers its sender.
func (s *Session) frame(ctx context.Context, data []byte) {
	f, werr := negotiation.DecodeFrame(data)
	if werr != nil {
		s.count("invalid")
		s.t.Write(wire.ErrorFrame(werr, negotiation.ClientID(data)))
		return
	}
	s.count(f.Type)
	if f.Type == negotiation.TypeThinking {
		if werr := s.sub.Think(ctx); werr != nil {
			s.t.Write(wire.ErrorFrame(werr, f.ID))
		}
		return
	}
	s.sub.Submit(ctx, f, func(out negotiation.Outcome, err error) {
		if b := s.reply(f, out, err); b != nil {
			s.t.Write(b)
		}
	})
}

// Answer runs one frame of party agentID in negotiation st (as Join
// allowed) without a session, as a REST call does, and returns what its
// socket would have answered: message_ack, scope_block or error; nil for
// a thinking frame, which has no answer. The frame rate is the caller's
// (opt.Rate and opt.Shared are not used).
func Answer(ctx context.Context, h *hub.Hub, st *negotiation.State, agentID string, data []byte, opt Options) []byte {
	if opt.Log == nil {
		opt.Log = slog.Default()
	}
	s := &Session{opt: opt}
	f, werr := negotiation.DecodeFrame(data)
	if werr != nil {
		s.count("invalid")
		return wire.ErrorFrame(werr, negotiation.ClientID(data))
	}
	s.count(f.Type)
	if f.Type == negotiation.TypeThinking {
		if _, werr := h.Think(ctx, st.ID, agentID); werr != nil {
			return wire.ErrorFrame(werr, f.ID)
		}
		return nil
	}
	var answer []byte
	h.Submit(ctx, st.ID, st.Brand.AgentID, st.Bouncer.AgentID, agentID, f, func(out negotiation.Outcome, err error) {
		answer = s.replyAs(st.ID, agentID, f, out, err)
	})
	return answer
}

func (s *Session) count(typ string) {
	if s.opt.Count != nil {
		s.opt.Count(typ)
	}
}

// reply is the answer to the sender of frame f given the room's outcome or
// refusal: message_ack, scope_block (DELEGATION.md "scope_block") or error
// (a failure of the venue's own is logged and answered internal). It is nil
// when the step gave no ack.
func (s *Session) reply(f negotiation.Frame, out negotiation.Outcome, err error) []byte {
	return s.replyAs(s.sub.NegotiationID(), s.sub.Agent(), f, out, err)
}

func (s *Session) replyAs(negID, agentID string, f negotiation.Frame, out negotiation.Outcome, err error) []byte {
	var sb *negotiation.ScopeBlock
	var we *wire.Error
	switch {
	case errors.As(err, &sb):
		b, _ := json.Marshal(sb)
		return b
	case errors.As(err, &we):
		return wire.ErrorFrame(we, f.ID)
	case err != nil:
		s.opt.Log.Error("room step", "negotiation_id", negID, "agent_id", agentID, "err", err)
		return wire.ErrorFrame(wire.Errorf(wire.CodeInternal, "the venue could not take that frame; nothing changed"), f.ID)
	}
	return out.Ack
}
