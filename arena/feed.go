package arena

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/venuehq/venue/bus"
	"github.com/venuehq/venue/negotiation"
)

// Topic is the bus topic of the arena feed: every node publishes the feed
// events of the steps it commits, every node relays them to its feed
// sockets.
const Topic = "arena"

// EventResync is sent to feed sockets when the bus says messages may have
// been lost (it reconnected): the client reads the listing again.
const EventResync = "arena_resync"

// Feed limits.
const (
	feedQueue     = 64               // frames queued per socket; a socket that falls behind is closed
	feedWriteWait = 10 * time.Second // per frame
	feedPing      = 30 * time.Second
	feedPongWait  = 60 * time.Second
)

// Feed is the public live feed of the arena (GET /v1/arena/ws, no token):
// arena_negotiation_started, _updated and _ended, each with the
// negotiation's Summary. It carries public facts only.
type Feed struct {
	bus    bus.Bus
	log    *slog.Logger
	cancel func()
	closed sync.Once
	down   atomic.Bool // Close began: sockets are closed with 1001

	mu   sync.Mutex
	subs map[chan []byte]struct{}
	wg   sync.WaitGroup
	up   websocket.Upgrader
}

// NewFeed subscribes to the arena topic of b; Close ends it.
func NewFeed(b bus.Bus, log *slog.Logger) *Feed {
	if log == nil {
		log = slog.Default()
	}
	f := &Feed{bus: b, log: log, subs: map[chan []byte]struct{}{},
		up: websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}}
	f.cancel = b.Subscribe(Topic, f.deliver)
	return f
}

// Publish sends the feed event of a committed step, if it has one (see
// EventOf). Call it after the store committed the step.
func (f *Feed) Publish(ctx context.Context, st negotiation.State, out negotiation.Outcome) {
	typ := EventOf(st, out)
	if typ == "" {
		return
	}
	if err := f.bus.Publish(ctx, Topic, eventFrame(typ, Summarize(st))); err != nil {
		f.log.Warn("arena feed: publish", "negotiation_id", st.ID, "err", err)
	}
}

// deliver runs on the bus's goroutine: it only enqueues.
func (f *Feed) deliver(data []byte) {
	if len(data) == 0 {
		data = []byte(`{"type":"` + EventResync + `"}`)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for ch := range f.subs {
		select {
		case ch <- data:
		default: // too slow: its writer closes it
			delete(f.subs, ch)
			close(ch)
		}
	}
}

// Close stops the feed's subscription, closes its sockets with 1001 and
// waits for their writers.
func (f *Feed) Close() {
	f.down.Store(true)
	f.closed.Do(f.cancel)
	f.mu.Lock()
	for ch := range f.subs {
		delete(f.subs, ch)
		close(ch)
	}
	f.mu.Unlock()
	f.wg.Wait()
}

// ServeHTTP upgrades GET /v1/arena/ws. Whatever the client sends is read
// and ignored.
func (f *Feed) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ws, err := f.up.Upgrade(w, r, nil)
	if err != nil {
		return
	}
	ch := make(chan []byte, feedQueue)
	f.mu.Lock()
	f.subs[ch] = struct{}{}
	f.mu.Unlock()
	f.wg.Add(1)
	defer f.wg.Done()
	ws.SetReadLimit(1024)
	_ = ws.SetReadDeadline(time.Now().Add(feedPongWait))
	ws.SetPongHandler(func(string) error { return ws.SetReadDeadline(time.Now().Add(feedPongWait)) })
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		for {
			if _, _, err := ws.ReadMessage(); err != nil {
				return
			}
		}
	}()
	ping := time.NewTicker(feedPing)
	defer ping.Stop()
	defer func() {
		f.mu.Lock()
		if _, ok := f.subs[ch]; ok {
			delete(f.subs, ch)
			close(ch)
		}
		f.mu.Unlock()
		_ = ws.Close()
		<-readDone
	}()
	for {
		select {
		case data, ok := <-ch:
			_ = ws.SetWriteDeadline(time.Now().Add(feedWriteWait))
			if !ok { // too slow, or the feed is closing
				msg := websocket.FormatCloseMessage(websocket.CloseTryAgainLater, "too slow")
				if f.down.Load() {
					msg = websocket.FormatCloseMessage(websocket.CloseGoingAway, "venue shutting down")
				}
				_ = ws.WriteMessage(websocket.CloseMessage, msg)
				return
			}
			if err := ws.WriteMessage(websocket.TextMessage, data); err != nil {
				return
			}
		case <-ping.C:
			_ = ws.SetWriteDeadline(time.Now().Add(feedWriteWait))
			if err := ws.WriteMessage(websocket.PingMessage, nil); err != nil {
				return
			}
		case <-readDone:
			return
		}
	}
}
