package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// ErrClosed is returned by calls on a Lobby or Room that was closed, or
// whose connection ended for good (the cause is then wrapped too).
var ErrClosed = errors.New("client: closed")

// writeWait bounds one socket write.
const writeWait = 10 * time.Second

// readWait is how long a socket may stay silent: the venue pings every 30 s.
const readWait = 75 * time.Second

// ErrConnectionLost is returned by a lobby request whose socket dropped
// before the reply came. Lobby requests are not idempotent (PROTOCOL.md
// "Lobby socket"), so the request is not resent: it may or may not have
// been made. Look before repeating it (a submit_offer made twice is two
// offers).
var ErrConnectionLost = errors.New("client: the lobby connection dropped before the reply; the request may or may not have been made")

// Lobby is an agent's lobby socket (PROTOCOL.md "Lobby socket"): the six
// requests, each answered by its reply, and the pushes on Pushes. When the
// socket drops, the Lobby redials as a Room does (exponential backoff, full
// jitter, bounded by the client's reconnect settings): requests waiting for
// a reply fail with ErrConnectionLost, requests made meanwhile wait for the
// new socket, and a negotiation_requested the venue sends again on the
// reconnect is not delivered twice. When it gives up, pending requests fail
// with ErrClosed, Pushes is closed and Err says why. Safe for concurrent
// use.
type Lobby struct {
	c       *Client
	agentID string
	prefix  string
	n       atomic.Uint64
	writeMu sync.Mutex

	mu         sync.Mutex
	ws         *websocket.Conn // nil while redialing
	up         chan struct{}   // closed when ws is set; replaced on a drop
	pending    map[string]chan lobbyReply
	ended      bool  // the lobby stopped for good: take no more
	err        error // why it stopped; nil while open and after Close
	requested  map[string]bool
	reconnects int

	pushes    *queue[Push]
	ctx       context.Context // cancelled by Close
	cancel    context.CancelFunc
	done      chan struct{} // closed when the reader has returned
	closeOnce sync.Once
	wg        sync.WaitGroup
}

type lobbyReply struct {
	typ string
	raw json.RawMessage
	err error
}

// Push is a lobby frame that answers no request of this socket:
// negotiation_requested (to a bouncer), negotiation_accepted and
// negotiation_declined (to the brand), the pushes of sealed briefs
// (brief_received and brief_closed to a bouncer, quotes_ready to the
// brand; brief_received once a socket), or an `error` frame without `re`
// (Err set). Fields a type does not carry are zero; Raw is the frame.
type Push struct {
	Type          string          `json:"type"`
	NegotiationID string          `json:"negotiation_id"`
	Offer         json.RawMessage `json:"offer,omitempty"`
	Brand         *Party          `json:"brand,omitempty"`
	Bouncer       *Party          `json:"bouncer,omitempty"`
	Arena         bool            `json:"arena"`
	ExpiresAt     string          `json:"expires_at,omitempty"`  // negotiation_requested: when the request lapses
	Reason        string          `json:"reason,omitempty"`      // negotiation_declined: "expired", or the bouncer's reason
	WSURL         string          `json:"ws_url,omitempty"`      // negotiation_accepted
	ObserveURL    string          `json:"observe_url,omitempty"` // negotiation_accepted
	StartedAt     string          `json:"started_at,omitempty"`  // negotiation_accepted
	DeadlineAt    string          `json:"deadline_at,omitempty"` // negotiation_accepted
	// Sealed briefs (PROTOCOL.md "Sealed briefs"): brief_received (to a
	// bouncer: BriefID, OfferID, Brand, Offer, Arena, CollectUntil),
	// quotes_ready (to the brand: BriefID, Quotes) and brief_closed (to a
	// bouncer: BriefID, OfferID, Awarded, NegotiationID if awarded).
	BriefID      string          `json:"brief_id,omitempty"`
	OfferID      string          `json:"offer_id,omitempty"`
	CollectUntil string          `json:"collect_until,omitempty"`
	Quotes       []Quote         `json:"quotes,omitempty"`
	Awarded      bool            `json:"awarded,omitempty"`
	Err          *Error          `json:"-"`
	Raw          json.RawMessage `json:"-"`
}

// DialLobby opens the lobby socket of agentID, which must be the agent whose
// key the client holds. ctx bounds the first dial only.
func (c *Client) DialLobby(ctx context.Context, agentID string) (*Lobby, error) {
	if c.key == "" {
		return nil, errors.New("client: the lobby needs an api_key (Client.WithKey)")
	}
	ws, err := c.dial(ctx, c.lobbyPath(agentID), url.Values{"token": {c.key}})
	if err != nil {
		return nil, err
	}
	l := &Lobby{
		c: c, agentID: agentID, prefix: "l" + randomHex(4) + "-", ws: ws, up: make(chan struct{}),
		pending: map[string]chan lobbyReply{}, requested: map[string]bool{},
		pushes: newQueue[Push](), done: make(chan struct{}),
	}
	close(l.up)
	l.ctx, l.cancel = context.WithCancel(context.Background())
	keepAlive(ws)
	l.wg.Add(2)
	go func() { defer l.wg.Done(); l.pushes.run(l.ctx.Done()) }()
	go func() { defer l.wg.Done(); l.run(ws) }()
	return l, nil
}

func (c *Client) lobbyPath(agentID string) string {
	return "/v1/agents/" + url.PathEscape(agentID) + "/ws"
}

// AgentID returns the agent whose lobby this is.
func (l *Lobby) AgentID() string { return l.agentID }

// Pushes delivers the frames that answer no request, in order. It is closed
// when the lobby is.
func (l *Lobby) Pushes() <-chan Push { return l.pushes.out }

// Done is closed when the lobby has stopped for good (Close, or reconnecting
// given up).
func (l *Lobby) Done() <-chan struct{} { return l.done }

// Err returns why the lobby stopped: nil while it runs and after Close.
func (l *Lobby) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Reconnects returns how many times the lobby has redialed successfully.
func (l *Lobby) Reconnects() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.reconnects
}

// Close closes the socket and waits for the lobby's goroutines. Idempotent.
func (l *Lobby) Close() error {
	l.closeOnce.Do(func() {
		l.mu.Lock()
		ws := l.ws
		l.mu.Unlock()
		l.cancel()
		if ws != nil {
			_ = ws.WriteControl(websocket.CloseMessage,
				websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
			_ = ws.Close()
		}
	})
	l.wg.Wait()
	return nil
}

// run reads the current socket and, when it drops, redials.
func (l *Lobby) run(ws *websocket.Conn) {
	var cause error
	defer func() { l.finish(cause) }()
	for {
		err := l.readLoop(ws)
		_ = ws.Close()
		l.mu.Lock()
		l.ws = nil
		l.up = make(chan struct{})
		for id, ch := range l.pending {
			ch <- lobbyReply{err: ErrConnectionLost}
			delete(l.pending, id)
		}
		l.mu.Unlock()
		if l.ctx.Err() != nil {
			return
		}
		l.c.notify(ConnEvent{Socket: "lobby", ID: l.agentID, Err: err})
		if permanentClose(err) || l.c.reconnect.MaxReconnects < 0 {
			cause = fmt.Errorf("client: lobby socket ended: %w", err)
			return
		}
		ws, err = l.c.redial(l.ctx, l.c.reconnect, "lobby", l.agentID, l.c.lobbyPath(l.agentID),
			func() url.Values { return url.Values{"token": {l.c.key}} })
		if err != nil {
			cause = err
			return
		}
		l.mu.Lock()
		if l.ctx.Err() != nil {
			l.mu.Unlock()
			_ = ws.Close()
			return
		}
		l.ws = ws
		l.reconnects++
		n := l.reconnects
		close(l.up)
		l.mu.Unlock()
		l.c.notify(ConnEvent{Socket: "lobby", ID: l.agentID, Up: true, Reconnects: n})
	}
}

func (l *Lobby) finish(cause error) {
	l.mu.Lock()
	l.ended = true
	if l.ctx.Err() == nil && cause != nil {
		l.err = cause
	}
	for id, ch := range l.pending {
		ch <- lobbyReply{err: ErrClosed}
		delete(l.pending, id)
	}
	l.mu.Unlock()
	l.pushes.close()
	close(l.done)
}

func (l *Lobby) readLoop(ws *websocket.Conn) error {
	for {
		_ = ws.SetReadDeadline(time.Now().Add(readWait))
		_, data, err := ws.ReadMessage()
		if err != nil {
			return err
		}
		l.handle(data)
	}
}

func (l *Lobby) handle(data []byte) {
	var head struct {
		Type string `json:"type"`
		Re   string `json:"re"`
	}
	if json.Unmarshal(data, &head) != nil {
		return
	}
	if head.Re != "" {
		l.mu.Lock()
		ch, ok := l.pending[head.Re]
		delete(l.pending, head.Re)
		l.mu.Unlock()
		if ok {
			rep := lobbyReply{typ: head.Type, raw: data}
			if head.Type == TypeError {
				rep.err = errorFrame(data)
			}
			ch <- rep
			return
		}
	}
	p := Push{Raw: data}
	_ = json.Unmarshal(data, &p)
	if head.Type == TypeError {
		p.Err = errorFrame(data)
	}
	key := ""
	switch {
	case p.Type == "negotiation_requested" && p.NegotiationID != "":
		key = p.NegotiationID
	case p.Type == TypeBriefReceived && p.OfferID != "":
		key = p.OfferID
	}
	if key != "" {
		l.mu.Lock()
		seen := l.requested[key]
		l.requested[key] = true
		l.mu.Unlock()
		if seen {
			return // sent again on a reconnect
		}
	}
	l.pushes.push(p)
}

// request sends one lobby request and decodes the reply of type want into
// out. An `error` reply is a *Error.
func (l *Lobby) request(ctx context.Context, frame map[string]any, want string, out any) error {
	id := l.prefix + strconv.FormatUint(l.n.Add(1), 10)
	frame["id"] = id
	b, err := json.Marshal(frame)
	if err != nil {
		return fmt.Errorf("client: encode %v: %w", frame["type"], err)
	}
	ch := make(chan lobbyReply, 1)
	for {
		l.mu.Lock()
		if l.ended {
			l.mu.Unlock()
			return l.closedErr()
		}
		ws, up := l.ws, l.up
		if ws != nil {
			l.pending[id] = ch
			l.mu.Unlock()
			if err := writeFrame(ws, &l.writeMu, b); err != nil {
				l.forget(id)
				return fmt.Errorf("client: send %v: %w", frame["type"], ErrConnectionLost)
			}
			break
		}
		l.mu.Unlock()
		select { // redialing: wait for the new socket
		case <-up:
		case <-l.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	select {
	case rep := <-ch:
		if rep.err != nil {
			if errors.Is(rep.err, ErrClosed) {
				return l.closedErr()
			}
			return rep.err
		}
		if rep.typ == TypeScopeBlock { // a quote its grant refuses
			sb := &ScopeBlock{Raw: rep.raw}
			_ = json.Unmarshal(rep.raw, sb)
			return sb
		}
		if rep.typ != want {
			return fmt.Errorf("client: %v was answered by %s, want %s: %s", frame["type"], rep.typ, want, rep.raw)
		}
		if out != nil {
			if err := json.Unmarshal(rep.raw, out); err != nil {
				return fmt.Errorf("client: decode %s: %w", want, err)
			}
		}
		return nil
	case <-ctx.Done():
		l.forget(id)
		return ctx.Err()
	}
}

func (l *Lobby) forget(id string) {
	l.mu.Lock()
	delete(l.pending, id)
	l.mu.Unlock()
}

func (l *Lobby) closedErr() error {
	if err := l.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrClosed, err)
	}
	return ErrClosed
}

// BrowseQuery filters browse_bouncers; zero fields are left out (limit
// defaults to 20, at most 50).
type BrowseQuery struct {
	Category string
	Q        string
	Online   bool // only bouncers with a lobby socket open now
	Limit    int
	Offset   int
}

// Bouncers is the reply to browse_bouncers.
type Bouncers struct {
	Items  []BouncerItem `json:"items"`
	Total  int           `json:"total"`
	Offset int           `json:"offset"`
}

// BouncerItem is one bouncer of browse_bouncers: its public profile and
// whether a lobby socket of it is open now (false is said, not left out:
// PROTOCOL.md "Lobby socket", browse_bouncers).
type BouncerItem struct {
	Profile
	Online bool `json:"online"`
}

// BrowseBouncers lists bouncers' public profiles.
func (l *Lobby) BrowseBouncers(ctx context.Context, q BrowseQuery) (Bouncers, error) {
	f := map[string]any{"type": "browse_bouncers"}
	if q.Category != "" {
		f["category"] = q.Category
	}
	if q.Q != "" {
		f["q"] = q.Q
	}
	if q.Online {
		f["online"] = true
	}
	if q.Limit != 0 {
		f["limit"] = q.Limit
	}
	if q.Offset != 0 {
		f["offset"] = q.Offset
	}
	var out Bouncers
	err := l.request(ctx, f, "bouncers", &out)
	return out, err
}

// GetProfile returns an agent's public profile.
func (l *Lobby) GetProfile(ctx context.Context, agentID string) (Profile, error) {
	var out Profile
	err := l.request(ctx, map[string]any{"type": "get_profile", "agent_id": agentID}, "profile", &out)
	return out, err
}

// Offer is what a brand offers a bouncer: a title, a brief and optional
// opening terms (an object with amount_usd; see [Terms]).
type Offer struct {
	Title string `json:"title"`
	Brief string `json:"brief,omitempty"`
	Terms any    `json:"terms,omitempty"`
}

// OfferSubmitted is the reply to submit_offer.
type OfferSubmitted struct {
	OfferID string `json:"offer_id"`
	To      string `json:"to"`
	Arena   bool   `json:"arena"`
}

// SubmitOffer (brands) offers a bouncer something; arena makes the
// negotiation an arena one (no settlement, no reputation change).
func (l *Lobby) SubmitOffer(ctx context.Context, to string, offer Offer, arena bool) (OfferSubmitted, error) {
	var out OfferSubmitted
	err := l.request(ctx, map[string]any{"type": "submit_offer", "to": to, "offer": offer, "arena": arena}, "offer_submitted", &out)
	return out, err
}

// NegotiationCreated is the reply to create_negotiation: a pending request
// the bouncer has until ExpiresAt to accept; and to award_quote: Status
// "live", no ExpiresAt.
type NegotiationCreated struct {
	NegotiationID string `json:"negotiation_id"`
	Status        string `json:"status"`
	ExpiresAt     string `json:"expires_at"`
}

// CreateNegotiation (brands) asks the offer's bouncer to negotiate; the
// bouncer gets negotiation_requested.
func (l *Lobby) CreateNegotiation(ctx context.Context, offerID string) (NegotiationCreated, error) {
	var out NegotiationCreated
	err := l.request(ctx, map[string]any{"type": "create_negotiation", "offer_id": offerID}, "negotiation_created", &out)
	return out, err
}

// NegotiationAccepted is negotiation_accepted: the room is live.
type NegotiationAccepted struct {
	NegotiationID string `json:"negotiation_id"`
	WSURL         string `json:"ws_url"`
	ObserveURL    string `json:"observe_url"`
	StartedAt     string `json:"started_at"`
	DeadlineAt    string `json:"deadline_at"`
	Brand         Party  `json:"brand"`
	Bouncer       Party  `json:"bouncer"`
	Arena         bool   `json:"arena"`
}

// AcceptNegotiation (the addressed bouncer) takes the request: the room goes
// live and the brand gets negotiation_accepted too.
func (l *Lobby) AcceptNegotiation(ctx context.Context, negotiationID string) (NegotiationAccepted, error) {
	var out NegotiationAccepted
	err := l.request(ctx, map[string]any{"type": "accept_negotiation", "negotiation_id": negotiationID}, "negotiation_accepted", &out)
	return out, err
}

// NegotiationDeclined is negotiation_declined.
type NegotiationDeclined struct {
	NegotiationID string `json:"negotiation_id"`
	Reason        string `json:"reason"`
}

// DeclineNegotiation (the addressed bouncer) refuses the request; reason may
// be empty.
func (l *Lobby) DeclineNegotiation(ctx context.Context, negotiationID, reason string) (NegotiationDeclined, error) {
	f := map[string]any{"type": "decline_negotiation", "negotiation_id": negotiationID}
	if reason != "" {
		f["reason"] = reason
	}
	var out NegotiationDeclined
	err := l.request(ctx, f, "negotiation_declined", &out)
	return out, err
}

// errorFrame reads an `error {code, message}` frame.
func errorFrame(data []byte) *Error {
	var e struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	_ = json.Unmarshal(data, &e)
	return &Error{Code: e.Code, Message: e.Message}
}

// writeFrame writes one text frame under mu (gorilla allows one writer).
func writeFrame(ws *websocket.Conn, mu *sync.Mutex, b []byte) error {
	mu.Lock()
	defer mu.Unlock()
	_ = ws.SetWriteDeadline(time.Now().Add(writeWait))
	return ws.WriteMessage(websocket.TextMessage, b)
}

// keepAlive answers the venue's pings (WriteControl may run alongside the
// writer) and extends the read deadline with each; the reader renews it on
// every frame too.
func keepAlive(ws *websocket.Conn) {
	ws.SetPingHandler(func(data string) error {
		_ = ws.SetReadDeadline(time.Now().Add(readWait))
		err := ws.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(writeWait))
		if errors.Is(err, websocket.ErrCloseSent) {
			return nil
		}
		return err
	})
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
