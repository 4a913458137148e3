package venue_test

// One WebSocket test client for every test of this package: the
// single-node e2e tests (e2eConn) and the multi-node ones (mnSock).

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// testWait bounds every wait for a frame or a close: a safety net for a
// broken test, never the thing asserted.
const testWait = 10 * time.Second

const (
	e2eWait = testWait
	mnWait  = testWait
)

// sock is a WebSocket client that reads frames on its own goroutine.
type sock struct {
	t      testing.TB
	name   string // in failure messages
	ws     *websocket.Conn
	frames chan map[string]any
	closed chan error // the read error once the socket ended (a *websocket.CloseError on close)
}

type (
	e2eConn = sock
	mnSock  = sock
)

// dialSock dials url (ws://...) and starts reading; the socket is closed
// when t ends.
func dialSock(t testing.TB, name, url string) (*sock, *http.Response, error) {
	ws, resp, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		checkUpgradeRefusal(t, url, resp)
		return nil, resp, err
	}
	s := &sock{t: t, name: name, ws: ws, frames: make(chan map[string]any, 4096), closed: make(chan error, 1)}
	check := frameChecker(t, url)
	go func() {
		for {
			_, data, err := ws.ReadMessage()
			if err != nil {
				s.closed <- err
				close(s.frames)
				return
			}
			check(data)
			var m map[string]any
			if json.Unmarshal(data, &m) != nil {
				m = map[string]any{"type": "<not json>", "raw": string(data)}
			}
			s.frames <- m
		}
	}()
	t.Cleanup(func() { ws.Close() })
	return s, resp, nil
}

// send writes a frame: a string or bytes as they are, anything else as JSON.
func (s *sock) send(frame any) {
	s.t.Helper()
	var b []byte
	switch f := frame.(type) {
	case string:
		b = []byte(f)
	case []byte:
		b = f
	default:
		b, _ = json.Marshal(f)
	}
	if err := s.ws.WriteMessage(websocket.TextMessage, b); err != nil {
		s.t.Fatalf("%s: send %.200s: %v", s.name, b, err)
	}
}

// next returns the next frame, failing the test if none comes.
func (s *sock) next() map[string]any {
	s.t.Helper()
	select {
	case m, ok := <-s.frames:
		if !ok {
			s.t.Fatalf("%s: socket closed while a frame was expected: %v", s.name, <-s.closed)
		}
		return m
	case <-time.After(testWait):
		s.t.Fatalf("%s: no frame within %s", s.name, testWait)
	}
	return nil
}

// expect returns the next frame and checks its type.
func (s *sock) expect(typ string) map[string]any {
	s.t.Helper()
	m := s.next()
	if m["type"] != typ {
		s.t.Fatalf("%s: want a %s frame, got %v", s.name, typ, m)
	}
	return m
}

// expectSeq reads the next frame and checks its type and seq.
func (s *sock) expectSeq(typ string, seq int) map[string]any {
	s.t.Helper()
	m := s.expect(typ)
	if got := mnInt(m["seq"]); got != seq {
		s.t.Fatalf("%s: %s has seq %d, want %d: %v", s.name, typ, got, seq, m)
	}
	return m
}

// quiet asserts that no frame is waiting now (call it after a round trip
// proved the server handled everything sent before).
func (s *sock) quiet() {
	s.t.Helper()
	select {
	case m := <-s.frames:
		s.t.Fatalf("%s: expected no frame, got %v", s.name, m)
	default:
	}
}

// closeCode waits for the server to close the socket and returns the close
// code; a socket that ended without a close frame fails the test.
func (s *sock) closeCode() int {
	s.t.Helper()
	deadline := time.After(testWait)
	for {
		select {
		case _, ok := <-s.frames:
			if ok {
				continue
			}
			err := <-s.closed
			if ce, ok := err.(*websocket.CloseError); ok {
				return ce.Code
			}
			s.t.Fatalf("%s: socket ended without a close frame: %v", s.name, err)
		case <-deadline:
			s.t.Fatalf("%s: socket not closed within %s", s.name, testWait)
		}
	}
}
