//go:build unix

package wsconn

import (
	"net"
	"syscall"
)

// rawWriter is a socket's file descriptor for writeNow, nil when the
// connection has none (a wrapped or TLS connection: every frame then goes
// through the writer). Its fields are writeOnce's, under the Conn's wmu;
// write is bound once, so a write allocates nothing.
type rawWriter struct {
	rc    syscall.RawConn
	buf   []byte
	n     int
	write func(fd uintptr) bool
}

func newRawWriter(nc net.Conn) *rawWriter {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	w := &rawWriter{rc: rc}
	w.write = w.writeFD
	return w
}

// writeOnce writes as much of buf as the socket takes without waiting
// (non-blocking write(2), as Go's sockets are) and returns how much that
// was: on EAGAIN, or an error the writer will meet and handle, it stops.
func (w *rawWriter) writeOnce(buf []byte) int {
	w.buf, w.n = buf, 0
	_ = w.rc.Write(w.write)
	w.buf = nil
	return w.n
}

func (w *rawWriter) writeFD(fd uintptr) bool {
	for w.n < len(w.buf) {
		k, err := syscall.Write(int(fd), w.buf[w.n:])
		if k <= 0 || err != nil {
			break
		}
		w.n += k
	}
	return true // never wait for the socket: the writer does
}
