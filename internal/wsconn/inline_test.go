package wsconn

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gorilla/websocket"
)

// inlineServer serves one socket on a bare TCP listener (writeNow on),
// with the server side's send buffer set to sndbuf bytes (0: the
// system's); it returns the client and the server's Conn.
func inlineServer(t *testing.T, sndbuf int, opt Options) (*websocket.Conn, *Conn) {
	t.Helper()
	client, c := serveOne(t, sndbuf, opt, false)
	if c.raw == nil {
		t.Fatal("a bare TCP socket has no file descriptor for writeNow")
	}
	return client, c
}

// serveOne is inlineServer without the file descriptor check; with reads
// the server reads the socket too (so it answers pings) until it closes.
func serveOne(t *testing.T, sndbuf int, opt Options, reads bool) (*websocket.Conn, *Conn) {
	t.Helper()
	conns := make(chan *Conn, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		if sndbuf > 0 {
			_ = ws.NetConn().(*net.TCPConn).SetWriteBuffer(sndbuf)
		}
		c := New(ws, slog.New(slog.DiscardHandler), opt)
		conns <- c
		for reads { // the reader: pings are answered here
			if _, ok := c.read(); !ok {
				break
			}
		}
		<-c.done
		c.wg.Wait()
	}))
	t.Cleanup(srv.Close)
	d := websocket.Dialer{ReadBufferSize: 1024}
	client, _, err := d.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	return client, <-conns
}

// TestInlineWritesInOrder: with nothing queued, frames are written on the
// caller's goroutine (no hand-off to the writer), whole and in order, in
// every length encoding.
func TestInlineWritesInOrder(t *testing.T) {
	client, c := inlineServer(t, 0, Options{})
	var want []string
	for i := range 300 {
		f := fmt.Sprintf("frame %d %s", i, strings.Repeat("x", []int{0, 120, 130, 70000}[i%4]))
		want = append(want, f)
		if !c.enqueue([]byte(f)) {
			t.Fatalf("frame %d refused", i)
		}
		// Read as we go so the socket never fills: every frame can go inline.
		if _, got, err := client.ReadMessage(); err != nil || string(got) != f {
			t.Fatalf("frame %d: read %d bytes (%v), want %d", i, len(got), err, len(f))
		}
	}
	if n := c.inlined.Load(); n != int64(len(want)) {
		t.Errorf("%d of %d frames written inline, want all", n, len(want))
	}
}

// TestInlineWriteLeftover: a client that stops reading fills the socket;
// the inline write that finds it full leaves its tail to the writer, every
// later frame is queued behind it, none of the enqueues waits, and once the
// client reads again every frame arrives whole and in order.
func TestInlineWriteLeftover(t *testing.T) {
	client, c := inlineServer(t, 4096, Options{SendQueue: 4096})
	var want []string
	for i := 0; c.queued.Load() == 0 || len(want) < 10; i++ {
		if i > 2000 {
			t.Fatal("the socket never filled")
		}
		f := fmt.Sprintf("frame %d %s", i, strings.Repeat("y", 8000))
		want = append(want, f)
		if !c.enqueue([]byte(f)) {
			t.Fatalf("frame %d refused", i)
		}
	}
	if c.inlined.Load() == 0 {
		t.Fatal("no frame was written inline")
	}
	for i, f := range want {
		if _, got, err := client.ReadMessage(); err != nil || string(got) != f {
			t.Fatalf("frame %d: read %.20q… %d bytes (%v), want %.20q… %d bytes", i, got, len(got), err, f, len(f))
		}
	}
	// Drained: the next frame goes inline again.
	// The client has the last frame, so the writer's last batch was
	// written; it counts itself out before it lets go of wmu.
	c.wmu.Lock()
	n := c.queued.Load()
	c.wmu.Unlock()
	if n != 0 {
		t.Fatalf("%d frames still counted queued after the drain", n)
	}
	before := c.inlined.Load()
	c.enqueue([]byte("after"))
	if _, got, err := client.ReadMessage(); err != nil || string(got) != "after" {
		t.Fatalf("read %q (%v), want after", got, err)
	}
	if c.inlined.Load() != before+1 {
		t.Error("a frame after the drain did not go inline")
	}
}

// TestInlineThenClose: frames written inline and the close frame after
// them: the client reads every frame, then the close with its code.
func TestInlineThenClose(t *testing.T) {
	client, c := inlineServer(t, 0, Options{})
	for i := range 20 {
		c.enqueue([]byte(fmt.Sprintf("f%d", i)))
	}
	c.Close(CloseGoingAway, "bye")
	for i := range 20 {
		if _, got, err := client.ReadMessage(); err != nil || string(got) != fmt.Sprintf("f%d", i) {
			t.Fatalf("frame %d: %q (%v)", i, got, err)
		}
	}
	_, _, err := client.ReadMessage()
	if ce, ok := err.(*websocket.CloseError); !ok || ce.Code != CloseGoingAway {
		t.Fatalf("after the frames: %v, want close %d", err, CloseGoingAway)
	}
	if c.enqueue([]byte("late")) {
		t.Error("a frame was taken after the close")
	}
}
