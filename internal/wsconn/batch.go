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
// goroutine and writeNow (both under wmu) write data frames to; control
// frames (pong, close) that gorilla writes from the reader are each one
// write too, and a net.Conn never interleaves two writes. A nil frame is
// writeNow's call to send its leftover, which goes first.
func (c *Conn) writeBatch(first []byte, deadline time.Time) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.writeBatchLocked(first, deadline)
}

// writeBatchLocked is writeBatch with wmu held.
func (c *Conn) writeBatchLocked(first []byte, deadline time.Time) error {
	bp := writeBufs.Get().(*[]byte)
	buf := append((*bp)[:0], c.leftover...)
	c.leftover = nil
	n := int64(1) // frames taken from send (first among them)
	if first != nil {
		buf = appendTextFrame(buf, first)
	}
gather:
	for len(buf) < maxWriteBatch {
		select {
		case b := <-c.send:
			n++
			if b != nil {
				buf = appendTextFrame(buf, *b)
			}
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
	if err == nil && len(buf) > 0 {
		_, err = nc.Write(buf)
	}
	c.queued.Add(-n)
	if cap(buf) <= maxPooledWrite {
		*bp = buf[:0]
		writeBufs.Put(bp)
	}
	return err
}

// writeNow writes frame b to the socket on the caller's goroutine when
// nothing is queued or being written and the socket takes it without
// waiting: one write(2), and no hand-off to the writer goroutine (a
// wake-up and a context switch per frame). What the socket does not take
// (its buffer is full: a slow client) becomes the leftover, which the
// writer sends first with its deadline, so the caller never waits on the
// client. It reports false when the frame must go through the queue.
func (c *Conn) writeNow(b []byte) bool {
	if c.raw == nil || c.queued.Load() != 0 || !c.wmu.TryLock() {
		return false
	}
	defer c.wmu.Unlock()
	if c.wclosed || c.queued.Load() != 0 {
		return false
	}
	select {
	case <-c.done:
		return false
	default:
	}
	c.inlined.Add(1)
	bp := writeBufs.Get().(*[]byte)
	buf := appendTextFrame((*bp)[:0], b)
	if n := c.raw.writeOnce(buf); n < len(buf) {
		c.leftover = append(c.leftover, buf[n:]...)
		c.queued.Add(1)
		select {
		case c.send <- nil:
		default: // the queue is full of frames behind which the writer sends the leftover first
			c.queued.Add(-1)
		}
	}
	if cap(buf) <= maxPooledWrite {
		*bp = buf[:0]
		writeBufs.Put(bp)
	}
	return true
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
