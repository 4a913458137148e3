package client

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"time"

	"github.com/gorilla/websocket"
)

// ConnEvent tells a connection hook (WithConnHook) that a socket dropped
// or came back.
type ConnEvent struct {
	Socket     string // "lobby" or "negotiation"
	ID         string // the agent id (lobby) or negotiation id
	Up         bool   // false: it dropped (Err says why) and is redialing; true: it is back
	Reconnects int    // with Up: how many redials have succeeded so far
	Err        error  // without Up: why it dropped
}

// WithConnHook calls fn when a Lobby or Room socket of this client drops
// and when it is back, so a program can tell its user. fn runs on the
// socket's reader and must not block.
func WithConnHook(fn func(ConnEvent)) Option { return func(c *Client) { c.hook = fn } }

// Backoff bounds the redials of the Lobby (a Room takes its own from
// RoomOptions): up to MaxReconnects failed redials in a row (negative: never
// redial), redial n waiting a random duration in [0, min(Max, Base*2^n)].
type Backoff struct {
	MaxReconnects int
	Base, Max     time.Duration
}

// WithLobbyBackoff sets how the Lobby redials (default DefaultMaxReconnects,
// DefaultBackoffBase, DefaultBackoffMax).
func WithLobbyBackoff(b Backoff) Option { return func(c *Client) { c.reconnect = b } }

func (c *Client) notify(e ConnEvent) {
	if c.hook != nil {
		c.hook(e)
	}
}

func (b Backoff) withDefaults() Backoff {
	if b.MaxReconnects == 0 {
		b.MaxReconnects = DefaultMaxReconnects
	}
	if b.Base <= 0 {
		b.Base = DefaultBackoffBase
	}
	if b.Max <= 0 {
		b.Max = DefaultBackoffMax
	}
	return b
}

// redial dials path again until it succeeds, ctx ends (ErrClosed) or b's
// attempts are spent. A 4xx answer other than 408 and 429 ends it at once:
// the venue will not take this socket again.
func (c *Client) redial(ctx context.Context, b Backoff, what, id, path string, query func() url.Values) (*websocket.Conn, error) {
	var last error
	for attempt := 0; attempt < b.MaxReconnects; attempt++ {
		ceiling := b.Base << min(attempt, 30)
		if ceiling > b.Max || ceiling <= 0 {
			ceiling = b.Max
		}
		t := time.NewTimer(time.Duration(rand.Int64N(int64(ceiling) + 1)))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ErrClosed
		case <-t.C:
		}
		dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		ws, err := c.dial(dctx, path, query())
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil, ErrClosed
			}
			last = err
			var e *Error
			if errors.As(err, &e) && e.Status >= 400 && e.Status < 500 &&
				e.Status != http.StatusRequestTimeout && e.Status != http.StatusTooManyRequests {
				return nil, fmt.Errorf("client: reconnect to %s %s refused: %w", what, id, err)
			}
			continue
		}
		keepAlive(ws)
		return ws, nil
	}
	return nil, fmt.Errorf("client: gave up reconnecting to %s %s after %d attempts: %w", what, id, b.MaxReconnects, last)
}
