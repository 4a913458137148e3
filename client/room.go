package client

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// NoReplay as RoomOptions.Since joins live: no transcript frame from before
// the connection is delivered.
const NoReplay = -1

// Reconnect defaults.
const (
	DefaultMaxReconnects = 8
	DefaultBackoffBase   = 100 * time.Millisecond
	DefaultBackoffMax    = 5 * time.Second
)

// RoomOptions configure DialRoom. The zero value joins as a party and
// replays the whole transcript.
type RoomOptions struct {
	// Observe joins read-only on /ws/observe; no api_key is needed and the
	// sends of Room refuse.
	Observe bool
	// Since replays, on the first connection, every transcript frame after
	// this seq: 0 (the default) the whole transcript, NoReplay none.
	Since int64
	// MaxReconnects is how many redials in a row may fail before the Room
	// gives up (default DefaultMaxReconnects; negative: never reconnect).
	MaxReconnects int
	// BackoffBase and BackoffMax bound the wait before redial n (from 0):
	// a uniformly random duration in [0, min(BackoffMax, BackoffBase*2^n)]
	// ("full jitter"). Defaults DefaultBackoffBase, DefaultBackoffMax.
	BackoffBase time.Duration
	BackoffMax  time.Duration
	// AgentID is the party's own agent id, which tells its own frames apart
	// in a replay. Empty: DialRoom asks the venue (GET /v1/agents/me).
	// Observers need none.
	AgentID string
	// IncludeOwn delivers the party's own negotiation_message frames that
	// a replay carries (the initial Since, or a reconnect after an ack was
	// lost) on Events, with Event.Own set. By default they are not
	// delivered: the send's ack stood for them, and a naive agent must not
	// answer itself as if the other side had spoken.
	IncludeOwn bool
}

// Room is a socket on one negotiation: a party's (send frames, receive
// events) or an observer's (receive only). Safe for concurrent use.
//
// Each frame sent carries a client `id` unique to this Room; the send
// returns the venue's reply to it: the message_ack, or a *ScopeBlock or
// *Error as the error. Everything else the venue sends arrives on Events.
//
// When the socket drops, the Room redials with ?since=<the last seq it has
// seen with nothing missing before it>, waiting with exponential backoff and
// full jitter between attempts. Transcript frames are delivered once, by
// seq, however often they are replayed; a repeated negotiation_started is
// not delivered. Frames whose reply never came are resent with the same id,
// in the order they were first sent: the venue treats the id as an
// idempotency key and answers a frame it already took with the original ack,
// so a resent frame acts once. One thing cannot be replayed: a private
// escalation_resolved sent while the socket was down is lost (the
// negotiation_started of the new connection shows the clock as it is).
//
// Own frames: live, the venue answers a party's frame with the message_ack
// and does not echo it; a replay (the initial Since, or a reconnect after an
// ack was lost) does include the party's own negotiation_message frames.
// They are not delivered on Events unless RoomOptions.IncludeOwn, and then
// with Event.Own set.
type Room struct {
	c       *Client
	me      string // the party's agent id ("" for an observer)
	negID   string
	path    string
	opts    RoomOptions
	prefix  string
	n       atomic.Uint64
	writeMu sync.Mutex // one writer; held across a reconnect's resend

	mu         sync.Mutex
	ws         *websocket.Conn // nil while redialing
	pending    map[string]*pendingSend
	order      uint64
	closing    bool
	finished   bool
	err        error
	started    bool  // negotiation_started delivered
	ended      bool  // negotiation_ended delivered
	watermark  int64 // every seq up to it was seen; -1 until known (NoReplay)
	seen       map[int64]bool
	reconnects int

	events *queue[Event]
	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	done   chan struct{}
	wg     sync.WaitGroup
	once   sync.Once
}

type pendingSend struct {
	id    string
	order uint64
	frame []byte
	reply chan sendReply
}

type sendReply struct {
	ack *Ack
	err error
}

// DialRoom joins negotiation negotiationID: as a party with the client's key,
// or as an observer with opts.Observe. ctx bounds the dial only; the Room
// lives until Close, or until its connection ends for good.
func (c *Client) DialRoom(ctx context.Context, negotiationID string, opts RoomOptions) (*Room, error) {
	path := "/v1/negotiations/" + url.PathEscape(negotiationID) + "/ws"
	if opts.Observe {
		path += "/observe"
	} else if c.key == "" {
		return nil, errors.New("client: a party's socket needs an api_key (Client.WithKey), or RoomOptions.Observe")
	}
	if opts.MaxReconnects == 0 {
		opts.MaxReconnects = DefaultMaxReconnects
	}
	if opts.BackoffBase <= 0 {
		opts.BackoffBase = DefaultBackoffBase
	}
	if opts.BackoffMax <= 0 {
		opts.BackoffMax = DefaultBackoffMax
	}
	if opts.Since < NoReplay {
		return nil, fmt.Errorf("client: RoomOptions.Since %d: want a seq >= 0, or NoReplay", opts.Since)
	}
	if !opts.Observe && opts.AgentID == "" {
		me, err := c.Me(ctx)
		if err != nil {
			return nil, fmt.Errorf("client: who am I (for the room of %s): %w", negotiationID, err)
		}
		opts.AgentID = me.AgentID
	}
	r := &Room{
		c: c, me: opts.AgentID, negID: negotiationID, path: path, opts: opts, prefix: "c" + randomHex(6) + "-",
		pending: map[string]*pendingSend{}, watermark: opts.Since, seen: map[int64]bool{},
		events: newQueue[Event](), done: make(chan struct{}),
	}
	ws, err := c.dial(ctx, path, r.query(opts.Since))
	if err != nil {
		return nil, err
	}
	keepAlive(ws)
	r.ws = ws
	r.ctx, r.cancel = context.WithCancel(context.Background())
	r.wg.Add(2)
	go func() { defer r.wg.Done(); r.events.run(r.ctx.Done()) }()
	go func() { defer r.wg.Done(); r.run(ws) }()
	return r, nil
}

// NegotiationID returns the negotiation's id.
func (r *Room) NegotiationID() string { return r.negID }

// Events delivers what the venue sends, in order (see Event). It is closed
// after negotiation_ended, when the Room is closed, or when it gives up
// reconnecting (Err says why).
func (r *Room) Events() <-chan Event { return r.events.out }

// Done is closed when the Room's connection has ended for good: Close, the
// socket dropping after negotiation_ended, or reconnecting given up.
func (r *Room) Done() <-chan struct{} { return r.done }

// Err returns why the Room stopped: nil while it runs, after Close and after
// a negotiation that ended.
func (r *Room) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// Reconnects returns how many times the Room has redialed successfully.
func (r *Room) Reconnects() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reconnects
}

// LastSeq returns the highest seq up to which the Room has seen every
// transcript frame (its ?since= on a reconnect).
func (r *Room) LastSeq() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return max(r.watermark, 0)
}

// Close leaves the socket (a normal close; it does not send the `close`
// frame of the protocol, see Leave) and waits for the Room's goroutines.
// Pending sends fail with ErrClosed. Idempotent.
func (r *Room) Close() error {
	r.once.Do(func() {
		r.mu.Lock()
		r.closing = true
		ws := r.ws
		r.mu.Unlock()
		r.cancel()
		if ws != nil {
			_ = ws.WriteControl(websocket.CloseMessage,
				websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
			_ = ws.Close()
		}
	})
	r.wg.Wait()
	return nil
}

func (r *Room) query(since int64) url.Values {
	q := url.Values{}
	if !r.opts.Observe {
		q.Set("token", r.c.key)
	}
	if since >= 0 {
		q.Set("since", strconv.FormatInt(since, 10))
	}
	return q
}

// run is the Room's one reader: it reads the current socket and, when it
// drops, redials.
func (r *Room) run(ws *websocket.Conn) {
	var cause error
	defer func() { r.finish(cause) }()
	for {
		err := r.readLoop(ws)
		_ = ws.Close()
		r.mu.Lock()
		r.ws = nil
		closing, ended := r.closing, r.ended
		r.mu.Unlock()
		if closing || ended {
			return
		}
		r.c.notify(ConnEvent{Socket: "negotiation", ID: r.negID, Err: err})
		if permanentClose(err) || r.opts.MaxReconnects < 0 {
			cause = fmt.Errorf("client: negotiation socket ended: %w", err)
			return
		}
		ws, err = r.redial()
		if err != nil {
			cause = err
			return
		}
	}
}

// finish fails what is pending and closes Events.
func (r *Room) finish(cause error) {
	r.mu.Lock()
	r.finished = true
	if !r.closing && cause != nil {
		r.err = cause
	}
	pend := r.pending
	r.pending = map[string]*pendingSend{}
	r.mu.Unlock()
	for _, p := range pend {
		p.reply <- sendReply{err: r.closedErr()}
	}
	r.events.close()
	close(r.done)
}

func (r *Room) closedErr() error {
	if err := r.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrClosed, err)
	}
	return ErrClosed
}

func (r *Room) readLoop(ws *websocket.Conn) error {
	for {
		_ = ws.SetReadDeadline(time.Now().Add(readWait))
		_, data, err := ws.ReadMessage()
		if err != nil {
			return err
		}
		r.handle(data)
	}
}

// permanentClose reports whether the venue closed the socket for a reason
// a reconnect cannot cure (a frame too big, invalid UTF-8, abuse).
func permanentClose(err error) bool {
	return websocket.IsCloseError(err, websocket.CloseProtocolError, websocket.CloseUnsupportedData,
		websocket.CloseInvalidFramePayloadData, websocket.ClosePolicyViolation, websocket.CloseMessageTooBig,
		websocket.CloseMandatoryExtension)
}

// redial reconnects with ?since= and resends what is pending. It returns
// the new socket, or why it gave up.
func (r *Room) redial() (*websocket.Conn, error) {
	b := Backoff{MaxReconnects: r.opts.MaxReconnects, Base: r.opts.BackoffBase, Max: r.opts.BackoffMax}
	ws, err := r.c.redial(r.ctx, b, "negotiation", r.negID, r.path, func() url.Values {
		r.mu.Lock()
		since := r.watermark // -1 (NoReplay, nothing seen yet): join live again
		r.mu.Unlock()
		return r.query(since)
	})
	if err != nil {
		return nil, err
	}
	if !r.install(ws) {
		_ = ws.Close()
		return nil, ErrClosed
	}
	r.mu.Lock()
	n := r.reconnects
	r.mu.Unlock()
	r.c.notify(ConnEvent{Socket: "negotiation", ID: r.negID, Up: true, Reconnects: n})
	return ws, nil
}

// install makes ws the current socket and resends, in their first order,
// the frames whose reply never came. The write lock is held throughout, so
// a send that starts meanwhile goes out after them.
func (r *Room) install(ws *websocket.Conn) bool {
	r.writeMu.Lock()
	defer r.writeMu.Unlock()
	r.mu.Lock()
	if r.closing {
		r.mu.Unlock()
		return false
	}
	r.ws = ws
	r.reconnects++
	resend := make([]*pendingSend, 0, len(r.pending))
	for _, p := range r.pending {
		resend = append(resend, p)
	}
	r.mu.Unlock()
	slices.SortFunc(resend, func(a, b *pendingSend) int { return cmp.Compare(a.order, b.order) })
	for _, p := range resend {
		_ = ws.SetWriteDeadline(time.Now().Add(writeWait))
		if ws.WriteMessage(websocket.TextMessage, p.frame) != nil {
			break // the reader will see the socket fail, and redial again
		}
	}
	return true
}

// markSeen records seq; it reports false for a seq seen before.
func (r *Room) markSeen(seq int64) bool {
	if r.watermark < 0 {
		r.watermark = 0
	}
	if seq <= r.watermark || r.seen[seq] {
		return false
	}
	r.seen[seq] = true
	for r.seen[r.watermark+1] {
		delete(r.seen, r.watermark+1)
		r.watermark++
	}
	return true
}

// handle routes one frame: a reply to its pending send, or an event.
func (r *Room) handle(data []byte) {
	var ev Event
	if err := json.Unmarshal(data, &ev); err != nil {
		return
	}
	ev.Raw = data
	switch ev.Type {
	case TypeMessageAck:
		var ack Ack
		if json.Unmarshal(data, &ack) != nil {
			return
		}
		ack.Raw = data
		r.mu.Lock()
		if ack.Seq > 0 {
			r.markSeen(ack.Seq)
		}
		r.mu.Unlock()
		r.resolve(ack.Re, sendReply{ack: &ack})
		return
	case TypeScopeBlock:
		sb := &ScopeBlock{Raw: data}
		_ = json.Unmarshal(data, sb)
		if r.resolve(sb.Re, sendReply{err: sb}) {
			return
		}
	case TypeError:
		if r.resolve(ev.Re, sendReply{err: &Error{Code: ev.Code, Message: ev.Message}}) {
			return
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case ev.Type == TypeNegotiationStarted:
		if r.started {
			return
		}
		r.started = true
		if r.watermark < 0 && ev.Context != nil {
			r.watermark = ev.Context.LastSeq
		}
	case ev.Seq > 0:
		if !r.markSeen(ev.Seq) {
			return
		}
	}
	if ev.Type == TypeNegotiationMessage && r.me != "" && ev.From == r.me {
		if !r.opts.IncludeOwn {
			return
		}
		ev.Own = true
	}
	if r.ended {
		return
	}
	r.events.push(ev)
	if ev.Type == TypeNegotiationEnded {
		r.ended = true
		r.events.close()
	}
}

// resolve hands a reply to the send waiting for id; false if none waits.
func (r *Room) resolve(id string, rep sendReply) bool {
	if id == "" {
		return false
	}
	r.mu.Lock()
	p, ok := r.pending[id]
	delete(r.pending, id)
	r.mu.Unlock()
	if ok {
		p.reply <- rep
	}
	return ok
}

// Frame is a frame a party sends. The Room adds the client `id`. Terms is
// anything that marshals to a JSON object ([Terms], a map, json.RawMessage).
type Frame struct {
	Type       string `json:"type"`
	Content    string `json:"content,omitempty"`
	Terms      any    `json:"terms,omitempty"`
	TTLSeconds int    `json:"ttl_seconds,omitempty"`
	OfferHash  string `json:"offer_hash,omitempty"`
	ProposalID string `json:"proposal_id,omitempty"`
}

// Send sends f with a fresh client id and waits for the venue's reply: the
// message_ack, or a *ScopeBlock or *Error. If ctx ends first the frame may
// still land; its ack is then dropped.
func (r *Room) Send(ctx context.Context, f Frame) (*Ack, error) {
	if r.opts.Observe {
		return nil, errors.New("client: an observer cannot send")
	}
	if f.Type == FrameThinking {
		return nil, r.Thinking(ctx)
	}
	id := r.prefix + strconv.FormatUint(r.n.Add(1), 10)
	b, err := marshalFrame(f, id)
	if err != nil {
		return nil, err
	}
	p := &pendingSend{id: id, frame: b, reply: make(chan sendReply, 1)}
	r.mu.Lock()
	if r.finished || r.closing {
		r.mu.Unlock()
		return nil, r.closedErr()
	}
	r.order++
	p.order = r.order
	r.pending[id] = p
	ws := r.ws
	r.mu.Unlock()
	if ws != nil {
		// A failed write is not an error here: the reader sees the socket
		// fail and the reconnect resends the frame.
		_ = writeFrame(ws, &r.writeMu, b)
	}
	select {
	case rep := <-p.reply:
		return rep.ack, rep.err
	case <-ctx.Done():
		r.mu.Lock()
		delete(r.pending, id)
		r.mu.Unlock()
		return nil, ctx.Err()
	}
}

func marshalFrame(f Frame, id string) ([]byte, error) {
	b, err := json.Marshal(struct {
		Frame
		ID string `json:"id"`
	}{f, id})
	if err != nil {
		return nil, fmt.Errorf("client: encode %s: %w", f.Type, err)
	}
	return b, nil
}

// Thinking sends a typing indicator: no id, no reply, not stored; the venue
// relays it at most once a second. It is dropped while the Room redials.
func (r *Room) Thinking(ctx context.Context) error {
	if r.opts.Observe {
		return errors.New("client: an observer cannot send")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	r.mu.Lock()
	ws, finished := r.ws, r.finished || r.closing
	r.mu.Unlock()
	if finished {
		return r.closedErr()
	}
	if ws == nil {
		return nil
	}
	_ = writeFrame(ws, &r.writeMu, []byte(`{"type":"thinking"}`))
	return nil
}

// Message says something: free text that binds nobody.
func (r *Room) Message(ctx context.Context, content string) (*Ack, error) {
	return r.Send(ctx, Frame{Type: FrameMessage, Content: content})
}

// Research says what the agent is looking up.
func (r *Room) Research(ctx context.Context, content string) (*Ack, error) {
	return r.Send(ctx, Frame{Type: FrameResearch, Content: content})
}

// Propose puts terms on the table (propose_terms): the table must be empty
// or hold this party's own proposal. ttl 0 lets them stand until replaced;
// otherwise the venue clamps it to 10 s - 5 min. The ack carries
// ProposalID, OfferHash and ExpiresAt. Binding: checked against the grant.
func (r *Room) Propose(ctx context.Context, terms any, ttl time.Duration, content string) (*Ack, error) {
	return r.Send(ctx, Frame{Type: FrameProposeTerms, Terms: terms, TTLSeconds: ttlSeconds(ttl), Content: content})
}

// Counter replaces the other side's standing proposal (counter_terms).
// Binding.
func (r *Room) Counter(ctx context.Context, terms any, ttl time.Duration, content string) (*Ack, error) {
	return r.Send(ctx, Frame{Type: FrameCounterTerms, Terms: terms, TTLSeconds: ttlSeconds(ttl), Content: content})
}

func ttlSeconds(ttl time.Duration) int {
	if ttl <= 0 {
		return 0
	}
	return int((ttl + time.Second - 1) / time.Second)
}

// AcceptOpts name what an accept takes. All empty (a bare accept) takes
// whatever stands, which is safest; whichever is set must match the
// standing proposal, else a *ScopeBlock failing offer_hash.
type AcceptOpts struct {
	OfferHash  string
	ProposalID string
	Terms      any
	Content    string
}

// Accept takes the other side's standing proposal: a deal. Binding.
func (r *Room) Accept(ctx context.Context, o AcceptOpts) (*Ack, error) {
	return r.Send(ctx, Frame{Type: FrameAccept, OfferHash: o.OfferHash, ProposalID: o.ProposalID, Terms: o.Terms, Content: o.Content})
}

// Reject refuses the other side's standing proposal; the table is cleared.
func (r *Room) Reject(ctx context.Context, content string) (*Ack, error) {
	return r.Send(ctx, Frame{Type: FrameReject, Content: content})
}

// Withdraw takes this party's own standing proposal off the table.
func (r *Room) Withdraw(ctx context.Context, content string) (*Ack, error) {
	return r.Send(ctx, Frame{Type: FrameWithdraw, Content: content})
}

// Escalate asks the principal for authority (content says what; terms are
// optional and stay private). The ack's EscalationID is what the principal
// decides on; this party's turn clock pauses meanwhile.
func (r *Room) Escalate(ctx context.Context, content string, terms any) (*Ack, error) {
	return r.Send(ctx, Frame{Type: FrameEscalate, Content: content, Terms: terms})
}

// Walk leaves the negotiation: negotiation_ended {status:"walked"}.
func (r *Room) Walk(ctx context.Context, content string) (*Ack, error) {
	return r.Send(ctx, Frame{Type: FrameWalk, Content: content})
}

// Leave sends the protocol's `close` frame (the same as walk). It is not
// Close, which only closes this Room's socket.
func (r *Room) Leave(ctx context.Context, content string) (*Ack, error) {
	return r.Send(ctx, Frame{Type: FrameClose, Content: content})
}
