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
//
// A node subscribes to the arena topic only while it has feed sockets, and
// on a bus that can tell (bus.Watcher) a step's event is not even built
// while no node has one: the feed costs nothing when nobody watches.
type Feed struct {
	bus  bus.Bus
	log  *slog.Logger
	down atomic.Bool // Close began: sockets are closed with 1001

	subMu  sync.Mutex // orders joins and leaves with the bus subscription
	cancel func()     // the bus subscription, nil while no socket is open

	mu   sync.Mutex // guards subs; deliver (the bus's goroutine) takes it
	subs map[chan []byte]struct{}
	wg   sync.WaitGroup
	up   websocket.Upgrader
}

// NewFeed returns the feed on b; Close ends it.
func NewFeed(b bus.Bus, log *slog.Logger) *Feed {
	if log == nil {
		log = slog.Default()
	}
	return &Feed{bus: b, log: log, subs: map[chan []byte]struct{}{},
		up: websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}}
}

// Publish sends the feed event of a committed step, if it has one (see
// EventOf) and some node has a feed socket (as far as the bus can tell).
// Call it after the store committed the step.
func (f *Feed) Publish(ctx context.Context, st negotiation.State, out negotiation.Outcome) {
	typ := EventOf(st, out)
	if typ == "" {
		return
	}
	if w, ok := f.bus.(bus.Watcher); ok && !w.Watched(Topic) {
		return
	}
	if err := f.bus.Publish(ctx, Topic, eventFrame(typ, Summarize(st))); err != nil {
		f.log.Warn("arena feed: publish", "negotiation_id", st.ID, "err", err)
	}
}

// join adds a socket's queue, subscribing to the topic for the first; false
// once Close began. The socket's handler calls wg.Done when it ends.
func (f *Feed) join(ch chan []byte) bool {
	f.subMu.Lock()
	defer f.subMu.Unlock()
	if f.down.Load() {
		return false
	}
	if f.cancel == nil {
		f.cancel = f.bus.Subscribe(Topic, f.deliver)
	}
	f.mu.Lock()
	f.subs[ch] = struct{}{}
	f.mu.Unlock()
	f.wg.Add(1) // under subMu: Close cannot be waiting yet
	return true
}

// leave removes a socket's queue if still there (closing it); the last one
// ends the subscription.
func (f *Feed) leave(ch chan []byte) {
	f.subMu.Lock()
	defer f.subMu.Unlock()
	f.mu.Lock()
	f.drop(ch)
	empty := len(f.subs) == 0
	f.mu.Unlock()
	if empty && f.cancel != nil {
		f.cancel()
		f.cancel = nil
	}
}

// drop removes and closes a socket's queue if still there; mu is held.
func (f *Feed) drop(ch chan []byte) {
	if _, ok := f.subs[ch]; ok {
		delete(f.subs, ch)
		close(ch)
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
			f.drop(ch)
		}
	}
}

// Close stops the feed's subscription, closes its sockets with 1001 and
// waits for their writers.
func (f *Feed) Close() {
	f.subMu.Lock()
	f.down.Store(true)
	f.mu.Lock()
	for ch := range f.subs {
		f.drop(ch)
	}
	f.mu.Unlock()
	if f.cancel != nil {
		f.cancel()
		f.cancel = nil
	}
	f.subMu.Unlock()
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
	if !f.join(ch) {
		_ = ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseGoingAway, "venue shutting down"))
		_ = ws.Close()
		return
	}
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
		f.leave(ch)
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
