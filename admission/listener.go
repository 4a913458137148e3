package admission

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Listener caps the connections a node holds at once, at accept time: one
// over the cap gets a fixed HTTP 503 with Retry-After and is closed, before
// any of its bytes are read, so a flood of connections cannot exhaust the
// node's file descriptors or memory.
type Listener struct {
	net.Listener
	max  int64
	open atomic.Int64
	// Refused counts connections refused at the cap.
	Refused atomic.Int64
}

// refusal is what a connection over the cap gets.
const refusal = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 5\r\n" +
	"Connection: close\r\nContent-Length: 94\r\n\r\n" +
	`{"error":{"code":"unavailable","message":"the venue holds too many connections; retry later"}}`

// NewListener wraps ln with a cap of max open connections (max <= 0: none).
func NewListener(ln net.Listener, max int) *Listener {
	return &Listener{Listener: ln, max: int64(max)}
}

// Open is how many accepted connections are open.
func (l *Listener) Open() int64 { return l.open.Load() }

// Accept implements net.Listener.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if n := l.open.Add(1); l.max > 0 && n > l.max {
			l.open.Add(-1)
			l.Refused.Add(1)
			go func() { // never block Accept on a slow client
				_ = c.SetWriteDeadline(time.Now().Add(time.Second))
				_, _ = c.Write([]byte(refusal))
				_ = c.Close()
			}()
			continue
		}
		return &countedConn{Conn: c, l: l}, nil
	}
}

// countedConn gives its slot back once, on the first Close.
type countedConn struct {
	net.Conn
	l    *Listener
	once sync.Once
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.open.Add(-1) })
	return err
}

// SyscallConn is the wrapped connection's, so that a socket writer can try
// a write that never waits (internal/wsconn); an error when it has none.
func (c *countedConn) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := c.Conn.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, errNoFD
}

var errNoFD = errors.New("admission: the connection has no file descriptor")
