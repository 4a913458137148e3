package hub

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/venuehq/venue/bus"
	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/receipt"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/wire"
)

// Close codes a Transport is closed with (RFC 6455 section 7.4; a
// transport that is not a WebSocket maps them to its own way of ending).
const (
	ClosePolicy        = 1008 // sustained abuse
	CloseTryAgainLater = 1013 // the venue cannot serve it now: reconnect (with ?since=)
)

// Transport is one connection as the hub and the lobby see it: Write queues
// a frame for the peer without ever waiting (false: not queued, the
// connection is going away) and Close ends the connection with a close code
// and a reason. Both are safe from any goroutine.
type Transport interface {
	Write(frame []byte) bool
	Close(code int, reason string)
}

// Pacer is an optional ability of a Transport: WriteWait queues a frame,
// waiting for room while ctx lasts (false: the connection ended or ctx is
// done). A subscription sends what it reads from the store (the replay of
// ?since= and the catch-up after a gap) through it, from its own goroutine,
// so a long replay is paced by the client's reading instead of overflowing
// its send queue; live frames still go through Write.
type Pacer interface {
	WriteWait(ctx context.Context, frame []byte) bool
}

// paced writes a frame read from the store: WriteWait where the transport
// has it, else Write.
func (s *Subscription) paced(frame []byte) bool {
	if p, ok := s.t.(Pacer); ok {
		return p.WriteWait(s.ctx, frame)
	}
	return s.t.Write(frame)
}

// maxMailbox is how many bus messages a subscription holds before it drops
// them and catches up from the store instead.
const maxMailbox = 4096

// Subscription is one socket's place in a room: a party's (Agent set) or an
// observer's. It delivers transcript frames in seq order, reading any gap
// from the store, private frames to their party, agent_thinking to all but
// its sender. The bus callback only appends to a mailbox; a goroutine of
// the subscription's own, running only while there is mail, does the rest,
// so a slow store read stalls this subscription alone.
type Subscription struct {
	h              *Hub
	negID, agent   string
	brand, bouncer string
	t              Transport
	ctx            context.Context // cancelled by Close: pending work is abandoned
	stop           context.CancelFunc
	unsubscribe    func()

	mu         sync.Mutex
	mailbox    [][]byte
	running    bool // a drain goroutine owns delivery (or Subscribe still does)
	closed     bool
	submitting bool // a Submit of this party is under way (until its reply): mail waits

	// order is held by Submit from before its commit until its reply is
	// written, and by the drain goroutine around each message it delivers,
	// so that nothing committed after the party's frame (the other party's
	// answer, which it may have read from the store before the frame was
	// published) reaches the socket before the frame's message_ack
	// (PROTOCOL.md "What the sender gets back": the ack is sent before
	// the events the frame causes).
	order sync.Mutex

	lastSeq  int64     // owned by whoever has running
	thinking time.Time // last agent_thinking relayed: the reading goroutine's
}

// Subscribe joins negotiation negID for a socket: agent is the party's
// agent id, "" for an observer; since >= 0 replays the transcript after
// that seq (PROTOCOL.md "Replay with since"). It subscribes first, then writes
// negotiation_started and the replay to t, and only then lets live frames
// through, so none falls between the replay and live and none comes twice.
// A store failure closes t with 1013. st is the negotiation as the caller
// read it (its parties).
func (h *Hub) Subscribe(negID string, st *negotiation.State, agent string, since int64, t Transport) *Subscription {
	ctx, stop := context.WithCancel(context.Background())
	s := &Subscription{h: h, negID: negID, agent: agent, brand: st.Brand.AgentID, bouncer: st.Bouncer.AgentID,
		t: t, ctx: ctx, stop: stop, running: true}
	s.unsubscribe = h.bus.Subscribe(bus.NegotiationTopic(negID), s.enqueue)
	h.track(s)
	s.start(since)
	s.release()
	return s
}

// Close leaves the room: no more delivery, pending store reads abandoned.
func (s *Subscription) Close() {
	s.mu.Lock()
	already := s.closed
	s.closed, s.mailbox = true, nil
	s.mu.Unlock()
	if !already {
		s.stop()
		s.unsubscribe()
		s.h.untrack(s)
	}
}

func (s *Subscription) start(since int64) {
	st, err := s.h.store.Negotiation(s.ctx, s.negID)
	if err != nil {
		s.unavailable("read the negotiation to join it", err)
		return
	}
	s.t.Write(st.StartedFrame())
	s.lastSeq = st.LastSeq
	if since >= 0 && since < st.LastSeq {
		entries, err := s.h.store.Transcript(s.ctx, s.negID, since)
		if err != nil {
			s.unavailable("read the transcript to replay it", err)
			return
		}
		for _, e := range entries {
			if !s.paced(s.outbound(e.Frame, e.Hash)) {
				return
			}
			s.lastSeq = e.Seq
		}
	}
}

// enqueue is the bus callback: it never blocks and never reads the store.
func (s *Subscription) enqueue(data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if !s.running && !s.submitting && s.deliverNow(data) {
		return
	}
	if len(s.mailbox) >= maxMailbox {
		// Too far behind: what is queued is in the store; catch up from there.
		s.mailbox = append(s.mailbox[:0], nil)
	} else {
		s.mailbox = append(s.mailbox, data)
	}
	if !s.running && !s.submitting { // a Submit starts the drain once it has replied
		s.running = true
		go s.drain()
	}
}

// deliverNow delivers a bus message on the bus's goroutine, with mu held
// and no drain goroutine running (so nothing is queued before it and it
// owns lastSeq), when that takes no store read: the next transcript frame
// in seq order (a negotiation_ended excepted: its receipt may need the
// store), a private frame, agent_thinking, a message already seen. Writes
// to the transport never wait. It reports false for the rest (a loss, a
// gap, a sync ahead, an ending), which a drain goroutine takes. Most frames
// go this way: one goroutine hand-off per receiver fewer.
func (s *Subscription) deliverNow(data []byte) bool {
	if len(data) == 0 {
		return false
	}
	env, ok := decodeEnvelope(data)
	if !ok {
		return true // deliver drops it too
	}
	switch env.Kind {
	case KindPrivate:
		if s.agent != "" && env.To == s.agent {
			s.t.Write(env.Frame)
		}
		return true
	case KindThinking:
		if env.From != s.agent {
			s.t.Write(env.Frame)
		}
		return true
	case KindSync:
		return env.Seq <= s.lastSeq
	}
	switch {
	case env.Seq <= s.lastSeq:
		return true
	case env.Seq > s.lastSeq+1 || isEnded(env.Frame):
		return false
	}
	s.emit(env.Seq, env.Hash, env.Frame, env.From)
	return true
}

// release hands delivery to a drain goroutine if mail is waiting.
func (s *Subscription) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.mailbox) > 0 && !s.closed {
		go s.drain()
		return
	}
	s.running = false
}

// drain delivers the mailbox until it is empty, then ends.
func (s *Subscription) drain() {
	for {
		s.mu.Lock()
		if len(s.mailbox) == 0 || s.closed {
			s.running = false
			s.mu.Unlock()
			return
		}
		batch := s.mailbox
		s.mailbox = nil
		s.mu.Unlock()
		for _, data := range batch {
			s.order.Lock()
			s.deliver(data)
			s.order.Unlock()
		}
	}
}

// deliver handles one bus message; a zero-length one means the bus may have
// lost messages: catch up from the store.
func (s *Subscription) deliver(data []byte) {
	if len(data) == 0 {
		s.catchUp(-1)
		return
	}
	env, ok := decodeEnvelope(data)
	if !ok {
		return
	}
	switch env.Kind {
	case KindPrivate:
		if s.agent != "" && env.To == s.agent {
			s.t.Write(env.Frame)
		}
		return
	case KindThinking:
		if env.From != s.agent {
			s.t.Write(env.Frame)
		}
		return
	case KindSync:
		if env.Seq > s.lastSeq {
			s.catchUp(env.Seq)
		}
		return
	}
	switch {
	case env.Seq <= s.lastSeq:
	case env.Seq > s.lastSeq+1:
		s.catchUp(env.Seq)
	default:
		s.emit(env.Seq, env.Hash, env.Frame, env.From)
	}
}

// unavailable closes the socket with 1013 (PROTOCOL.md "Limits and close
// codes") after a store read for what failed, and logs err as a warning.
func (s *Subscription) unavailable(what string, err error) {
	s.h.log.Warn("store unavailable: closing the socket with 1013", "negotiation_id", s.negID, "agent_id", s.agent, "while", what, "err", err)
	s.t.Close(CloseTryAgainLater, "store unavailable: reconnect with ?since=")
}

// catchUp delivers the transcript after lastSeq from the store, up to seq
// upTo (-1: all of it).
func (s *Subscription) catchUp(upTo int64) {
	entries, err := s.h.store.Transcript(s.ctx, s.negID, s.lastSeq)
	if err != nil {
		if s.ctx.Err() == nil {
			s.unavailable("read the transcript to catch up", err)
		}
		return
	}
	for _, e := range entries {
		if upTo >= 0 && e.Seq > upTo {
			break
		}
		if !s.emitWith(s.paced, e.Seq, e.Hash, e.Frame, fromOf(e.Frame)) {
			return
		}
	}
}

// emit sends one transcript frame, except a party's own negotiation_message
// (it had the message_ack), and advances lastSeq.
func (s *Subscription) emit(seq int64, hash string, frame json.RawMessage, from string) {
	s.emitWith(s.t.Write, seq, hash, frame, from)
}

// emitWith is emit through write; false when write could not queue.
func (s *Subscription) emitWith(write func([]byte) bool, seq int64, hash string, frame json.RawMessage, from string) bool {
	s.lastSeq = seq
	if s.agent != "" && from == s.agent {
		return true
	}
	return write(s.outbound(frame, hash))
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
// hash and, on negotiation_ended, the receipt (DELEGATION.md "Receipts").
// Hashes and JWTs need no JSON escaping, so the members are appended as
// bytes.
func (s *Subscription) outbound(frame json.RawMessage, hash string) []byte {
	return s.h.Outbound(s.ctx, s.negID, frame, hash)
}

// Outbound is a transcript frame of negotiation negID as a party's or an
// observer's socket carries it: the stored frame plus its chain hash and,
// on negotiation_ended, the receipt (DELEGATION.md "Receipts"). It may read
// the store (the receipt).
func (h *Hub) Outbound(ctx context.Context, negID string, frame json.RawMessage, hash string) []byte {
	var tok string
	if isEnded(frame) {
		tok = h.receiptByID(ctx, negID)
	}
	return outbound(frame, hash, tok)
}

// OutboundOf is Outbound for a caller that holds the negotiation's state
// after the step that made the frame (the store's transaction, before it
// commits): the receipt is signed from st, nothing is read, and nothing is
// kept (receipt.Cache.Sign): the transaction may not land, and another
// step may end the negotiation over another head.
func (h *Hub) OutboundOf(st *negotiation.State, frame json.RawMessage, hash string) []byte {
	var tok string
	if c := h.Receipts(); c != nil && isEnded(frame) && receipt.Signs(st) {
		var err error
		if tok, err = c.Sign(st); err != nil {
			h.log.Error("sign receipt", "negotiation_id", st.ID, "err", err)
		}
	}
	return outbound(frame, hash, tok)
}

// outbound appends the hash and the receipt token (if any) to a frame.
func outbound(frame json.RawMessage, hash, tok string) []byte {
	b := bytes.TrimRight(frame, " \n")
	out := make([]byte, 0, len(b)+len(hash)+len(tok)+24)
	out = append(out, b[:len(b)-1]...)
	out = append(out, `,"hash":"`...)
	out = append(out, hash...)
	out = append(out, '"')
	if tok != "" {
		out = append(out, `,"receipt":"`...)
		out = append(out, tok...)
		out = append(out, '"')
	}
	return append(out, '}')
}

// endedValue is in every stored negotiation_ended frame (its type member
// is written `"type":"negotiation_ended"`). It starts with a colon, not a
// quote: bytes.Index looks for a pattern's first byte and then compares,
// and a JSON frame has a quote every few bytes, colons only between a key
// and its value (BenchmarkIsEnded).
var endedValue = []byte(`:"` + negotiation.TypeNegotiationEnded + `"`)

// isEnded reports whether a transcript frame is negotiation_ended: a byte
// search first (cheap, almost always false), then the type itself, since
// opaque terms may contain the same bytes.
func isEnded(frame json.RawMessage) bool {
	if !bytes.Contains(frame, endedValue) {
		return false
	}
	var h struct {
		Type string `json:"type"`
	}
	return json.Unmarshal(frame, &h) == nil && h.Type == negotiation.TypeNegotiationEnded
}

// Submit runs one party frame through the room (PROTOCOL.md "The
// eleven frames"): binding frames through the grant check of both parties'
// authority (DELEGATION.md "The checks"), then one store step. reply gets
// the outcome (its Ack) or the refusal (*negotiation.ScopeBlock, *wire.Error,
// or another error: the venue failed) after the commit and before anything
// the frame caused is published. Only a party's subscription submits.
func (s *Subscription) Submit(ctx context.Context, f negotiation.Frame, reply func(negotiation.Outcome, error)) {
	// Delivery to this socket pauses from before the commit until the
	// reply is written: mail that comes meanwhile waits in the mailbox
	// (no drain starts, none is delivered on the bus's goroutine), and a
	// drain already running finishes the message it holds first (order).
	s.order.Lock()
	s.mu.Lock()
	s.submitting = true
	s.mu.Unlock()
	defer s.resume()
	defer s.order.Unlock()
	s.h.Submit(ctx, s.negID, s.brand, s.bouncer, s.agent, f, reply)
}

// resume ends a Submit's pause: mail that came meanwhile is delivered.
func (s *Subscription) resume() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.submitting = false
	if !s.running && len(s.mailbox) > 0 && !s.closed {
		s.running = true
		go s.drain()
	}
}

// Submit is Subscription.Submit for a party that holds no subscription (a
// REST call): agent of negotiation negID between brand and bouncer sends f.
func (h *Hub) Submit(ctx context.Context, negID, brand, bouncer, agent string, f negotiation.Frame, reply func(negotiation.Outcome, error)) {
	step := func(_ store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
		return st.Apply(agent, f, h.stepNow(st), nil)
	}
	if f.Binding() {
		au, err := LoadAuthority(ctx, h.store, brand, bouncer)
		if err != nil {
			reply(negotiation.Outcome{}, err)
			return
		}
		step = func(tx store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
			return bindingStep(au, agent, f, h.stepNow(st))(tx, st)
		}
	}
	_, _, _ = h.apply(ctx, negID, step, func(out negotiation.Outcome, err error) {
		var sb *negotiation.ScopeBlock
		if errors.As(err, &sb) {
			for _, fl := range sb.Checks {
				h.m.scopeBlocks.WithLabelValues(fl.Check).Inc()
			}
		}
		reply(out, err)
	})
}

// Think relays a party's thinking as agent_thinking to everyone else in the
// room, at most once a second per subscription; more often is dropped
// silently. Errors: forbidden, invalid_state (not live).
func (s *Subscription) Think(ctx context.Context) *wire.Error {
	now := s.h.clock.Now()
	if now.Sub(s.thinking) < time.Second {
		return nil
	}
	relayed, werr := s.h.Think(ctx, s.negID, s.agent)
	if relayed {
		s.thinking = now
	}
	return werr
}

// Think relays agent's thinking in negotiation negID as agent_thinking to
// everyone else in the room, unthrottled (the caller limits it); relayed
// reports whether it was. Errors: forbidden, invalid_state (not live).
func (h *Hub) Think(ctx context.Context, negID, agent string) (relayed bool, werr *wire.Error) {
	now := h.clock.Now()
	st, err := h.store.Negotiation(ctx, negID)
	if err != nil {
		return false, nil
	}
	frame, werr := st.Thinking(agent, now)
	if werr != nil {
		return false, werr
	}
	_ = h.bus.Publish(ctx, bus.NegotiationTopic(negID), envelope{Kind: KindThinking, From: agent, Frame: frame}.encode())
	return true, nil
}

// NegotiationID is the room's negotiation.
func (s *Subscription) NegotiationID() string { return s.negID }

// Agent is the party's agent id, "" for an observer.
func (s *Subscription) Agent() string { return s.agent }
