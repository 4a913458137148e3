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

// Lobby is an agent's lobby socket (PROTOCOL.md "Lobby socket"): the six requests, each
// answered by its reply, and the pushes on Pushes. It does not reconnect:
// when the socket ends, pending requests fail with ErrClosed, Pushes is
// closed and Err says why. Safe for concurrent use.
type Lobby struct {
	agentID string
	ws      *websocket.Conn
	prefix  string
	n       atomic.Uint64
	writeMu sync.Mutex

	mu      sync.Mutex
	pending map[string]chan lobbyReply
	ended   bool  // the reader has failed every pending request: take no more
	err     error // why the socket ended; nil while open and after Close

	pushes    *queue[Push]
	stop      chan struct{} // closed by Close
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
// negotiation_declined (to the brand), or an `error` frame without `re`
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
	Err           *Error          `json:"-"`
	Raw           json.RawMessage `json:"-"`
}

// DialLobby opens the lobby socket of agentID, which must be the agent whose
// key the client holds.
func (c *Client) DialLobby(ctx context.Context, agentID string) (*Lobby, error) {
	if c.key == "" {
		return nil, errors.New("client: the lobby needs an api_key (Client.WithKey)")
	}
	ws, err := c.dial(ctx, "/v1/agents/"+url.PathEscape(agentID)+"/ws", url.Values{"token": {c.key}})
	if err != nil {
		return nil, err
	}
	l := &Lobby{
		agentID: agentID, ws: ws, prefix: "l" + randomHex(4) + "-",
		pending: map[string]chan lobbyReply{},
		pushes:  newQueue[Push](), stop: make(chan struct{}), done: make(chan struct{}),
	}
	keepAlive(ws)
	l.wg.Add(2)
	go func() { defer l.wg.Done(); l.pushes.run(l.stop) }()
	go func() { defer l.wg.Done(); l.read() }()
	return l, nil
}

// AgentID returns the agent whose lobby this is.
func (l *Lobby) AgentID() string { return l.agentID }

// Pushes delivers the frames that answer no request, in order. It is closed
// when the lobby is.
func (l *Lobby) Pushes() <-chan Push { return l.pushes.out }

// Done is closed when the socket has ended (Close, or the connection).
func (l *Lobby) Done() <-chan struct{} { return l.done }

// Err returns why the socket ended: nil while it is open and after Close.
func (l *Lobby) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// Close closes the socket and waits for the lobby's goroutines. Idempotent.
func (l *Lobby) Close() error {
	l.closeOnce.Do(func() {
		close(l.stop)
		_ = l.ws.WriteControl(websocket.CloseMessage,
			websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
		_ = l.ws.Close()
	})
	l.wg.Wait()
	return nil
}

func (l *Lobby) read() {
	defer close(l.done)
	var cause error
	for {
		_ = l.ws.SetReadDeadline(time.Now().Add(readWait))
		_, data, err := l.ws.ReadMessage()
		if err != nil {
			cause = err
			break
		}
		var head struct {
			Type string `json:"type"`
			Re   string `json:"re"`
		}
		if json.Unmarshal(data, &head) != nil {
			continue
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
				continue
			}
		}
		p := Push{Raw: data}
		_ = json.Unmarshal(data, &p)
		if head.Type == TypeError {
			p.Err = errorFrame(data)
		}
		l.pushes.push(p)
	}
	l.mu.Lock()
	l.ended = true
	select {
	case <-l.stop:
	default:
		l.err = fmt.Errorf("client: lobby socket ended: %w", cause)
	}
	for id, ch := range l.pending {
		ch <- lobbyReply{err: ErrClosed}
		delete(l.pending, id)
	}
	l.mu.Unlock()
	l.pushes.close()
	_ = l.ws.Close()
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
	l.mu.Lock()
	if l.ended {
		l.mu.Unlock()
		return l.closedErr()
	}
	l.pending[id] = ch
	l.mu.Unlock()
	if err := writeFrame(l.ws, &l.writeMu, b); err != nil {
		l.forget(id)
		return fmt.Errorf("client: send %v: %w", frame["type"], err)
	}
	select {
	case rep := <-ch:
		if rep.err != nil {
			if errors.Is(rep.err, ErrClosed) {
				return l.closedErr()
			}
			return rep.err
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
	Limit    int
	Offset   int
}

// Bouncers is the reply to browse_bouncers.
type Bouncers struct {
	Items  []Profile `json:"items"`
	Total  int       `json:"total"`
	Offset int       `json:"offset"`
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
// the bouncer has until ExpiresAt to accept.
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
