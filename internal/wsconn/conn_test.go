package wsconn

import (
	"bytes"
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
	var logged bytes.Buffer // written by enqueue's goroutine before done
	conns := make(chan *Conn, 1)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		c := New(ws, slog.New(slog.NewTextHandler(&logged, nil)), Options{SendQueue: 2,
			LogAttrs: []slog.Attr{slog.String("negotiation_id", "neg_1"), slog.String("agent_id", "ag_1")}})
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
	// The warning names the socket by its LogAttrs.
	if line := logged.String(); !strings.Contains(line, `msg="send queue full, closing slow client" negotiation_id=neg_1 agent_id=ag_1 queue=2`) {
		t.Fatalf("logged %q", line)
	}
	unstick()
	c.wg.Wait() // the writer ends once the socket gives way
}

// writeGate holds writes: each says it arrived on entered, then waits
// for open to close.
type writeGate struct{ entered, open chan struct{} }

// countingConn counts the writes to a server-side connection; while gate
// is set, every write waits at it.
type countingConn struct {
	net.Conn
	writes *atomic.Int64
	gate   *atomic.Pointer[writeGate]
}

func (c countingConn) Write(b []byte) (int, error) {
	if g := c.gate.Load(); g != nil {
		g.entered <- struct{}{}
		<-g.open
	}
	c.writes.Add(1)
	return c.Conn.Write(b)
}

type countingListener struct {
	net.Listener
	writes *atomic.Int64
	gate   *atomic.Pointer[writeGate]
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{Conn: c, writes: l.writes, gate: l.gate}, nil
}

// TestWriterBatchesQueuedFrames: frames queued while the writer is busy
// leave in one write, and the client reads each one whole and in order,
// whatever length encoding its size takes (7-bit, 16-bit, 64-bit).
func TestWriterBatchesQueuedFrames(t *testing.T) {
	var writes atomic.Int64
	var gate atomic.Pointer[writeGate]
	conns := make(chan *Conn, 1)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		c := New(ws, slog.New(slog.DiscardHandler), Options{})
		conns <- c
		<-c.done
		c.wg.Wait()
	}))
	srv.Listener = countingListener{Listener: srv.Listener, writes: &writes, gate: &gate}
	srv.Start()
	defer srv.Close()
	client, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	c := <-conns

	sizes := []int{0, 1, 125, 126, 127, 1000, 0xffff, 0x10000, 70000}
	frames := make([][]byte, len(sizes))
	for i, n := range sizes {
		frames[i] = []byte(strings.Repeat(string(rune('a'+i)), n))
	}
	g := &writeGate{entered: make(chan struct{}), open: make(chan struct{})}
	gate.Store(g)
	before := writes.Load()
	c.enqueue([]byte("first"))
	<-g.entered // the writer is in the write of "first" alone
	for _, f := range frames {
		if !c.enqueue(f) {
			t.Fatal("enqueue refused")
		}
	}
	gate.Store(nil)
	close(g.open)
	for i, want := range append([][]byte{[]byte("first")}, frames...) {
		typ, got, err := client.ReadMessage()
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if typ != websocket.TextMessage || string(got) != string(want) {
			t.Fatalf("frame %d: type %d, %d bytes, want text of %d", i, typ, len(got), len(want))
		}
	}
	// "first" went alone; the rest: the frames up to the 64 KiB that ends a
	// batch (0 through 0xffff), then 0x10000, then 70000.
	if got := writes.Load() - before; got != 4 {
		t.Errorf("%d frames went out in %d writes, want 4", len(frames)+1, got)
	}
}
