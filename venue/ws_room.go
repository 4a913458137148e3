package venue

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/venuehq/venue/bus"
	"github.com/venuehq/venue/lobby"
	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/wire"
)

// roomSock is one socket on a negotiation: a party's (agent set) or an
// observer's. deliver keeps seq order and fills gaps from the store.
type roomSock struct {
	s        *Server
	c        *conn
	negID    string
	agent    string            // "" for an observer
	st       negotiation.State // as it was at connect: the parties
	mu       sync.Mutex
	lastSeq  int64
	thinking time.Time // last agent_thinking relayed from this socket
}

// handleRoom serves /v1/negotiations/:id/ws (parties) and .../ws/observe.
func (s *Server) handleRoom(observe bool) echo.HandlerFunc {
	return func(c echo.Context) error {
		ctx := c.Request().Context()
		id := c.Param("id")
		var agentID string
		if !observe {
			a, err := s.authenticate(ctx, c.QueryParam("token"))
			if err != nil {
				return err
			}
			agentID = a.ID
		}
		st, err := s.store.Negotiation(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			return wire.Errorf(wire.CodeNotFound, "no negotiation %s", id)
		} else if err != nil {
			return err
		}
		if !observe && !st.IsParty(agentID) {
			return wire.Errorf(wire.CodeForbidden, "only the two parties connect to this socket; observers use /ws/observe")
		}
		if st.Status == negotiation.StatusPending || st.Status == negotiation.StatusDeclined {
			return wire.Errorf(wire.CodeInvalidState, "the negotiation is %s", st.Status)
		}
		since := int64(-1)
		if v := c.QueryParam("since"); v != "" {
			since, err = strconv.ParseInt(v, 10, 64)
			if err != nil || since < 0 {
				return wire.Errorf(wire.CodeInvalidArgument, "since must be a non-negative integer")
			}
		}
		ws, err := s.upgrader.Upgrade(c.Response(), c.Request(), nil)
		if err != nil {
			return nil // the upgrader has answered
		}
		kind := "party"
		if observe {
			kind = "observer"
		}
		log := s.log.With("negotiation_id", id, "agent_id", agentID, "kind", kind)
		rs := &roomSock{s: s, c: newConn(ws, log, s.cfg.Limits), negID: id, agent: agentID, st: st}
		s.track(rs.c)
		defer s.untrack(rs.c)
		metricConnections.WithLabelValues(kind).Inc()
		defer metricConnections.WithLabelValues(kind).Dec()
		log.Info("socket open", "since", since)
		rs.start(ctx, since)
		rs.readLoop(ctx)
		rs.c.finish()
		log.Info("socket closed")
		return nil
	}
}

// start subscribes, then sends negotiation_started and the replay. The
// subscription comes first and delivery waits on rs.mu, so no event falls
// between the replay and live.
func (rs *roomSock) start(ctx context.Context, since int64) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	cancel := rs.s.bus.Subscribe(bus.NegotiationTopic(rs.negID), rs.deliver)
	go func() { <-rs.c.done; cancel() }()
	st, err := rs.s.store.Negotiation(ctx, rs.negID)
	if err != nil {
		rs.c.closeWith(CloseTryAgainLater, "store unavailable")
		return
	}
	rs.c.enqueue(st.StartedFrame())
	rs.lastSeq = st.LastSeq
	if since >= 0 && since < st.LastSeq {
		entries, err := rs.s.store.Transcript(ctx, rs.negID, since)
		if err != nil {
			rs.c.closeWith(CloseTryAgainLater, "store unavailable")
			return
		}
		for _, e := range entries {
			rs.c.enqueue(rs.s.outbound(rs.negID, e.Frame, e.Hash, e.Seq))
		}
		if n := len(entries); n > 0 {
			rs.lastSeq = entries[n-1].Seq
		}
	}
}

// deliver is the bus callback: entries in seq order (gaps read from the
// store), private frames to their agent, thinking to everyone else.
func (rs *roomSock) deliver(data []byte) {
	if len(data) == 0 { // the bus may have lost messages: catch up from the store
		rs.catchUp()
		return
	}
	env, ok := decodeEnvelope(data)
	if !ok {
		return
	}
	switch env.Kind {
	case "p":
		if rs.agent != "" && env.To == rs.agent {
			rs.c.enqueue(env.Frame)
		}
		return
	case "t":
		if env.From != rs.agent {
			rs.c.enqueue(env.Frame)
		}
		return
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if env.Seq <= rs.lastSeq {
		return
	}
	if env.Seq > rs.lastSeq+1 {
		entries, err := rs.s.store.Transcript(context.Background(), rs.negID, rs.lastSeq)
		if err != nil {
			rs.c.closeWith(CloseTryAgainLater, "store unavailable: reconnect with ?since=")
			return
		}
		for _, e := range entries {
			if e.Seq > env.Seq {
				break
			}
			rs.emit(e.Seq, e.Hash, e.Frame, fromOf(e.Frame))
		}
		return
	}
	rs.emit(env.Seq, env.Hash, env.Frame, env.From)
}

// catchUp delivers every transcript frame after lastSeq from the store.
func (rs *roomSock) catchUp() {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	entries, err := rs.s.store.Transcript(context.Background(), rs.negID, rs.lastSeq)
	if err != nil {
		rs.c.closeWith(CloseTryAgainLater, "store unavailable: reconnect with ?since=")
		return
	}
	for _, e := range entries {
		rs.emit(e.Seq, e.Hash, e.Frame, fromOf(e.Frame))
	}
}

// emit sends one transcript frame, except a party's own negotiation_message
// (it had the message_ack), and advances lastSeq.
func (rs *roomSock) emit(seq int64, hash string, frame json.RawMessage, from string) {
	rs.lastSeq = seq
	if rs.agent != "" && from == rs.agent {
		return
	}
	rs.c.enqueue(rs.s.outbound(rs.negID, frame, hash, seq))
}

func fromOf(frame json.RawMessage) string {
	var h struct {
		Type string `json:"type"`
		From string `json:"from"`
	}
	_ = json.Unmarshal(frame, &h)
	if h.Type != negotiation.TypeNegotiationMessage {
		return ""
	}
	return h.From
}

// outbound is a transcript frame as sent: the stored frame plus its chain
// hash and, on negotiation_ended, the receipt (VENUE.md §8). Hashes and JWTs
// need no JSON escaping, so the members are appended as bytes.
func (s *Server) outbound(negID string, frame json.RawMessage, hash string, seq int64) []byte {
	b := bytes.TrimRight(frame, " \n")
	var receipt string
	if isEnded(b) {
		receipt = s.receiptOf(negID)
	}
	out := make([]byte, 0, len(b)+len(hash)+len(receipt)+24)
	out = append(out, b[:len(b)-1]...)
	out = append(out, `,"hash":"`...)
	out = append(out, hash...)
	out = append(out, '"')
	if receipt != "" {
		out = append(out, `,"receipt":"`...)
		out = append(out, receipt...)
		out = append(out, '"')
	}
	return append(out, '}')
}

func (rs *roomSock) readLoop(ctx context.Context) {
	for {
		data, ok := rs.c.read()
		if !ok {
			return
		}
		if rs.agent == "" { // observers are read-only: ignored, repeated sending closes
			if rs.c.refused() {
				return
			}
			continue
		}
		if ok, closed := rs.c.allow(); !ok {
			if closed {
				return
			}
			rs.c.enqueue(lobby.ErrorFrame(wire.Errorf(wire.CodeRateLimited, "over %v frames a second", rs.s.cfg.Limits.FramesPerSecond), negotiation.ClientID(data)))
			continue
		}
		rs.handle(ctx, data)
	}
}

// handle runs one party frame through the room.
func (rs *roomSock) handle(ctx context.Context, data []byte) {
	s := rs.s
	f, werr := negotiation.DecodeFrame(data)
	if werr != nil {
		metricFramesIn.WithLabelValues("invalid").Inc()
		rs.c.enqueue(lobby.ErrorFrame(werr, negotiation.ClientID(data)))
		return
	}
	metricFramesIn.WithLabelValues(f.Type).Inc()
	if f.Type == negotiation.TypeThinking {
		rs.think(ctx, f)
		return
	}
	step := func(_ store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
		return st.Apply(rs.agent, f, s.clock.Now(), nil)
	}
	if f.Binding() {
		au, err := s.loadAuthority(ctx, rs.st.Brand.AgentID, rs.st.Bouncer.AgentID)
		if err != nil {
			rs.reply(f, negotiation.Outcome{}, err)
			return
		}
		step = func(tx store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
			return s.bindingStep(au, rs.agent, f, s.clock.Now())(tx, st)
		}
	}
	_, _, _ = s.engine.apply(ctx, rs.negID, step, func(out negotiation.Outcome, err error) { rs.reply(f, out, err) })
}

// reply answers the sender of a frame: message_ack, scope_block or error.
func (rs *roomSock) reply(f negotiation.Frame, out negotiation.Outcome, err error) {
	s := rs.s
	var sb *negotiation.ScopeBlock
	var we *wire.Error
	switch {
	case errors.As(err, &sb):
		for _, fl := range sb.Checks {
			metricScopeBlocks.WithLabelValues(fl.Check).Inc()
		}
		b, _ := json.Marshal(sb)
		rs.c.enqueue(b)
	case errors.As(err, &we):
		rs.c.enqueue(lobby.ErrorFrame(we, f.ID))
	case err != nil:
		s.log.Error("room step", "negotiation_id", rs.negID, "agent_id", rs.agent, "err", err)
		rs.c.enqueue(lobby.ErrorFrame(wire.Errorf(wire.CodeInternal, "the venue could not take that frame; nothing changed"), f.ID))
	case out.Ack != nil:
		rs.c.enqueue(out.Ack)
	}
}

// think relays agent_thinking at most once a second per sender socket.
func (rs *roomSock) think(ctx context.Context, f negotiation.Frame) {
	now := rs.s.clock.Now()
	if now.Sub(rs.thinking) < time.Second {
		return
	}
	st, err := rs.s.store.Negotiation(ctx, rs.negID)
	if err != nil {
		return
	}
	frame, werr := st.Thinking(rs.agent, now)
	if werr != nil {
		rs.c.enqueue(lobby.ErrorFrame(werr, f.ID))
		return
	}
	rs.thinking = now
	_ = rs.s.bus.Publish(ctx, bus.NegotiationTopic(rs.negID), envelope{Kind: "t", From: rs.agent, Frame: frame}.encode())
}
