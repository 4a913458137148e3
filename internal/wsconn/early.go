package wsconn

import (
	"sync"

	"github.com/venuehq/venue/hub"
)

// maxEarly is how many frames an Early holds before its socket
// exists (the pending requests a bouncer may have, and a few pushes).
const maxEarly = 1024

// Early lets a session start before its WebSocket exists: what the
// session writes before attach is held and sent first, in order, once the
// socket is there. A session that subscribes before the upgrade's 101 loses
// no push sent right after the client's dial returns.
type Early struct {
	mu      sync.Mutex
	target  hub.Transport
	held    [][]byte
	dropped bool // more than maxEarly were held: the socket is closed on attach
	code    int  // a Close before attach, applied on attach
	reason  string
}

// Write implements hub.Transport.
func (e *Early) Write(b []byte) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.target != nil {
		return e.target.Write(b)
	}
	if len(e.held) >= maxEarly {
		e.dropped = true
		return false
	}
	e.held = append(e.held, b)
	return true
}

// Close implements hub.Transport.
func (e *Early) Close(code int, reason string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.target != nil {
		e.target.Close(code, reason)
		return
	}
	if e.code == 0 {
		e.code, e.reason = code, reason
	}
}

// Attach sends what was held to t and forwards everything after to it.
func (e *Early) Attach(t hub.Transport) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, b := range e.held {
		if !t.Write(b) {
			break
		}
	}
	e.held, e.target = nil, t
	switch {
	case e.code != 0:
		t.Close(e.code, e.reason)
	case e.dropped:
		t.Close(hub.CloseTryAgainLater, "too many frames before the socket opened: reconnect")
	}
}
