package wsconn

import (
	"encoding/binary"
	"net"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// Write batching: a batch stops gathering at maxWriteBatch bytes; buffers
// up to maxPooledWrite bytes go back to writeBufs (an idle socket holds
// none).
const (
	maxWriteBatch  = 64 << 10
	maxPooledWrite = 256 << 10
)

var writeBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// writeBatch sends first and every frame queued behind it, as WebSocket
// text frames (RFC 6455 section 5.2: unfragmented, unmasked as a server's
// are, no extension: the upgrader negotiates none) in one write to the
// socket: one syscall for a burst instead of one per frame. It writes to
// the connection under gorilla's *websocket.Conn, which only this
// goroutine writes data frames to; control frames (pong, close) that
// gorilla writes from the reader are each one write too, and a net.Conn
// never interleaves two writes.
func (c *Conn) writeBatch(first []byte, deadline time.Time) error {
	bp := writeBufs.Get().(*[]byte)
	buf := appendTextFrame((*bp)[:0], first)
gather:
	for len(buf) < maxWriteBatch {
		select {
		case b := <-c.send:
			buf = appendTextFrame(buf, b)
		default:
			break gather
		}
	}
	nc := c.ws.NetConn()
	_ = nc.SetWriteDeadline(deadline)
	var err error
	select {
	case <-c.done:
		if c.code == CloseTryAgainLater { // closeWith's immediate deadline may have been overwritten
			err = net.ErrClosed
		}
	default:
	}
	if err == nil {
		_, err = nc.Write(buf)
	}
	if cap(buf) <= maxPooledWrite {
		*bp = buf[:0]
		writeBufs.Put(bp)
	}
	return err
}

// appendTextFrame appends payload as one final, unmasked text frame: the
// header byte, the 7-bit, 16-bit or 64-bit length (RFC 6455 section 5.2),
// then the payload.
func appendTextFrame(dst, payload []byte) []byte {
	const finText = 0x80 | websocket.TextMessage
	switch n := len(payload); {
	case n <= 125:
		dst = append(dst, finText, byte(n))
	case n <= 0xffff:
		dst = append(dst, finText, 126, byte(n>>8), byte(n))
	default:
		dst = append(dst, finText, 127)
		dst = binary.BigEndian.AppendUint64(dst, uint64(n))
	}
	return append(dst, payload...)
}
