package venue

import (
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// stuckConn is a server-side connection whose peer stopped reading: once
// stuck, every Write blocks until released, whatever deadline was set.
type stuckConn struct {
	net.Conn
	stuck   *atomic.Bool
	release chan struct{}
}

func (c stuckConn) Write(b []byte) (int, error) {
	if c.stuck.Load() {
		<-c.release
		return 0, net.ErrClosed
	}
	return c.Conn.Write(b)
}

type stuckListener struct {
	net.Listener
	stuck   *atomic.Bool
	release chan struct{}
}

func (l stuckListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return stuckConn{Conn: c, stuck: l.stuck, release: l.release}, nil
}

// TestOverflowCloseNeverWaits: the send queue of a client that stopped
// reading overflows, and the publisher that overflowed it (enqueue, on a bus
// goroutine) returns at once; the close frame is the writer's to send. A
// close that waited on the socket would hold up every other socket of the
// room behind this one.
func TestOverflowCloseNeverWaits(t *testing.T) {
	var stuck atomic.Bool
	release := make(chan struct{})
	var once sync.Once
	unstick := func() { once.Do(func() { close(release) }) }
	defer unstick()
	conns := make(chan *conn, 1)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		c := newConn(ws, slog.New(slog.DiscardHandler), Limits{SendQueue: 2}.withDefaults(), newMetrics(nil))
		conns <- c
		<-c.done
	}))
	srv.Listener = stuckListener{Listener: srv.Listener, stuck: &stuck, release: release}
	srv.Start()
	defer srv.Close()
	client, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	c := <-conns
	stuck.Store(true)

	done := make(chan bool)
	go func() {
		// The writer takes one frame and blocks on it; two fill the queue;
		// the next overflows and closes with 1013.
		queued := 0
		for i := 0; i < 10 && c.enqueue([]byte(`{"type":"x"}`)); i++ {
			queued++
		}
		done <- queued < 10
	}()
	select {
	case overflowed := <-done:
		if !overflowed {
			t.Fatal("the queue never overflowed")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("enqueue waited on a client that does not read")
	}
	select {
	case <-c.done:
	default:
		t.Fatal("the overflowing client was not closed")
	}
	if c.code != CloseTryAgainLater {
		t.Fatalf("closed with %d, want %d", c.code, CloseTryAgainLater)
	}
	unstick()
	c.wg.Wait() // the writer ends once the socket gives way
}
