package venue_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/venuehq/venue/venue"
)

// TestE2EFramesKeepSocketAlive: a client that sends frames but never
// answers a ping stays connected well past the pong wait (each frame the
// venue reads pushes the read deadline on, PROTOCOL.md "Limits and close
// codes"); once it stops sending, the pong wait closes it. Before, only
// pongs pushed the deadline, so a client pipelining frames at a slow venue
// lost its socket while its pong sat unread behind its frames.
func TestE2EFramesKeepSocketAlive(t *testing.T) {
	t.Parallel()
	const pongWait = 3 * time.Second
	v := newE2E(t, func(c *venue.Config) {
		c.Limits = venue.Limits{FramesPerSecond: 1e6, FrameBurst: 1e6, PongWait: pongWait}
	})
	brand := v.register("Acme", "brand")
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(v.url, "http")+"/v1/agents/"+brand.id+"/ws?token="+brand.key, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	pings := 0
	ws.SetPingHandler(func(string) error { pings++; return nil }) // never a pong
	pace := time.NewTicker(50 * time.Millisecond)                 // the client's pace: a frame every 50 ms
	defer pace.Stop()
	start := time.Now()
	for i := 0; time.Since(start) < 2*pongWait+time.Second; i++ {
		if err := ws.WriteMessage(websocket.TextMessage, []byte(`{"type":"browse_bouncers","id":"b"}`)); err != nil {
			t.Fatalf("send %d after %s: %v", i, time.Since(start), err)
		}
		_ = ws.SetReadDeadline(time.Now().Add(e2eWait))
		if _, _, err := ws.ReadMessage(); err != nil {
			t.Fatalf("reply %d after %s (pong wait %s, no pong sent): %v", i, time.Since(start), pongWait, err)
		}
		<-pace.C
	}
	if pings == 0 {
		t.Fatal("the venue sent no ping in two pong waits")
	}
	// Silent and deaf: closed by the pong wait.
	_ = ws.SetReadDeadline(time.Now().Add(e2eWait))
	for {
		if _, _, err := ws.ReadMessage(); err != nil {
			if ne, ok := err.(interface{ Timeout() bool }); ok && ne.Timeout() {
				t.Fatalf("a socket that neither sent nor answered pings was still open %s later", e2eWait)
			}
			return
		}
	}
}
