package wsconn

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/venuehq/venue/admission"
)

// TestControlFramesNeverInsideDataFrames: while frames are written inline
// into a socket too small to take them whole (each leaves a tail for the
// writer), the client pings as fast as it can and the venue answers each
// ping: every control frame goes between
// two data frames, never inside one (RFC 6455 section 5.4), so the client
// reads every data frame whole and in order, and its pongs.
//
// The first frame is written before the pings start, so it is written
// inline whatever the scheduling (nothing queued, nobody holding the write
// lock); the rest go in groups of four, each after the client has read the
// group before, so the queue empties and later frames can be inline too,
// racing the pongs. (A burst of all 400 left the queue never empty: when a
// pong held the lock at the first frame, a loaded machine wrote none inline.)
//
// This is the end-to-end stress of the rule, and a race it catches only
// sometimes: with writeControl's lock and tail flush removed it failed in
// about one run in ten, in this form as in the burst form before it.
// TestControlFrameAfterPendingTail checks the same rule deterministically.
func TestControlFramesNeverInsideDataFrames(t *testing.T) {
	client, c := serveOne(t, 4096, Options{
		SendQueue: 4096,
		Rate:      admission.NewFrameRate(1e9, 1e9, AbuseBurst, nil),
	}, true)
	if c.raw == nil {
		t.Skip("no file descriptor for writeNow on this platform")
	}
	const frames = 400
	var pongs atomic.Int64
	client.SetPongHandler(func(string) error { pongs.Add(1); return nil })
	client.SetPingHandler(func(data string) error { // the client answers the venue's pings
		return client.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(time.Second))
	})
	read := make(chan error, 1)
	progress := make(chan int, frames) // the frames the client has read, one at a time
	go func() {
		for i := range frames {
			_ = client.SetReadDeadline(time.Now().Add(10 * time.Second))
			_, got, err := client.ReadMessage()
			if err == nil && string(got) != frameN(i) {
				err = fmt.Errorf("got %.30q… (%d bytes), want %.30q… (%d bytes)", got, len(got), frameN(i), len(frameN(i)))
			}
			if err != nil {
				read <- fmt.Errorf("frame %d: %w", i, err)
				return
			}
			progress <- i
		}
		read <- nil
	}()
	if !c.enqueue([]byte(frameN(0))) {
		t.Fatalf("frame 0 refused (%v)", <-read)
	}
	if c.inlined.Load() != 1 {
		t.Fatal("frame 0 was not written inline with nothing queued and no pings yet")
	}
	stop := make(chan struct{})
	pinged := make(chan struct{})
	go func() {
		defer close(pinged)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if client.WriteControl(websocket.PingMessage, []byte("p"), time.Now().Add(time.Second)) != nil {
				return
			}
		}
	}()
	const group = 4
	for i := 1; i < frames; i++ {
		if !c.enqueue([]byte(frameN(i))) {
			close(stop)
			t.Fatalf("frame %d refused (%v)", i, <-read)
		}
		if i%group != 0 {
			continue
		}
	wait: // until the client has read this group (read reports a failure; it cannot end well before the last frame is sent)
		for {
			select {
			case n := <-progress:
				if n >= i {
					break wait
				}
			case err := <-read:
				close(stop)
				<-pinged
				t.Fatalf("before frame %d was read: %v", i, err)
			}
		}
	}
	err := <-read
	close(stop)
	<-pinged
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d frames inline of %d; the client saw %d pongs", c.inlined.Load(), frames, pongs.Load())
}

func frameN(i int) string { return fmt.Sprintf("frame %d %s", i, strings.Repeat("z", 8000)) }

// TestControlFrameAfterPendingTail: an inline write left the tail of a data
// frame pending (the socket took only its head); a control frame written
// then (the reader's pong, the writer's ping) goes after the tail, so the
// client reads the data frame whole, then the ping. No writer goroutine
// runs here: the state is the one between writeNow and the writer's turn.
func TestControlFrameAfterPendingTail(t *testing.T) {
	ready := make(chan *Conn, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := (&websocket.Upgrader{}).Upgrade(w, r, nil)
		if err != nil {
			return
		}
		ready <- &Conn{ws: ws, send: make(chan *[]byte, 4), done: make(chan struct{})}
	}))
	t.Cleanup(srv.Close)
	client, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	c := <-ready
	t.Cleanup(func() { c.ws.Close() })
	frame := appendTextFrame(nil, []byte(frameN(7)))
	half := len(frame) / 2
	if _, err := c.ws.NetConn().Write(frame[:half]); err != nil { // the head the socket took
		t.Fatal(err)
	}
	c.leftover = append(c.leftover, frame[half:]...)
	if err := c.writeControl(websocket.PingMessage, []byte("now"), time.Now().Add(5*time.Second)); err != nil {
		t.Fatal(err)
	}
	if len(c.leftover) != 0 {
		t.Fatal("the tail is still pending after a control frame went out")
	}
	pinged := make(chan string, 1)
	client.SetPingHandler(func(data string) error { pinged <- data; return nil })
	_ = client.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, got, err := client.ReadMessage()
	if err != nil || string(got) != frameN(7) {
		t.Fatalf("read %.30q… %d bytes (%v), want the data frame whole (%d bytes)", got, len(got), err, len(frameN(7)))
	}
	go func() { _, _, _ = client.ReadMessage() }() // processes the ping
	select {
	case data := <-pinged:
		if data != "now" {
			t.Fatalf("ping %q, want now", data)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no ping after the data frame")
	}
}
