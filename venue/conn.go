package venue

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gorilla/websocket"

	"github.com/venuehq/venue/admission"
	"github.com/venuehq/venue/hub"
)

// Socket limits (PROTOCOL.md "Limits and close codes").
const (
	MaxFrameBytes   = 16 << 10 // a frame over this closes the socket with 1009
	SendQueueFrames = 128      // frames waiting for a slow client before it is closed with 1013
	PingInterval    = 30 * time.Second
	PongWait        = 60 * time.Second
	writeWait       = 10 * time.Second
	FramesPerSecond = 10 // per connection, with bursts of FrameBurst
	FrameBurst      = 20
	// Refusals tolerated (bursts of abuseBurst, refilling one a second)
	// before the socket is closed with 1008.
	abuseBurst = admission.DefaultAbuseBurst
)

// Close codes the venue uses (RFC 6455 §7.4).
const (
	CloseNormal        = websocket.CloseNormalClosure           // 1000
	CloseGoingAway     = websocket.CloseGoingAway               // 1001: the venue shuts down
	CloseInvalidUTF8   = websocket.CloseInvalidFramePayloadData // 1007
	ClosePolicy        = hub.ClosePolicy                        // 1008: sustained abuse
	CloseTooBig        = websocket.CloseMessageTooBig           // 1009
	CloseTryAgainLater = hub.CloseTryAgainLater                 // 1013: send queue overflow
)

// Limits are the per-connection limits; zero fields take the defaults above.
type Limits struct {
	FramesPerSecond float64
	FrameBurst      int
	SendQueue       int
	// PongWait is how long a socket may go without the venue reading a
	// pong or a frame from it (default PongWait; tests shorten it). The
	// venue pings every PingInterval, or every PongWait/2 if that is less.
	PongWait time.Duration
}

func (l Limits) withDefaults() Limits {
	if l.FramesPerSecond == 0 {
		l.FramesPerSecond = FramesPerSecond
	}
	if l.FrameBurst == 0 {
		l.FrameBurst = FrameBurst
	}
	if l.SendQueue == 0 {
		l.SendQueue = SendQueueFrames
	}
	if l.PongWait == 0 {
		l.PongWait = PongWait
	}
	return l
}

// conn is one WebSocket with gorilla's rules: one reader (the handler's
// goroutine), one writer goroutine fed by a bounded queue, read limit,
// deadlines, ping/pong. Closing has one owner (closeOnce) and is idempotent.
type conn struct {
	ws        *websocket.Conn
	m         *metrics // the node's series
	log       *slog.Logger
	send      chan []byte
	done      chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup
	rate      *admission.FrameRate // frames and pings in, shared with the session
	code      int                  // the close code, set once before done closes
	reason    string
	pongWait  time.Duration // Limits.PongWait
	// agentID and keyAt name the agent the socket authenticated as and when
	// the key it used was issued ("" for observers): a revoked or rotated
	// key closes the sockets it opened (principal.go).
	agentID string
	keyAt   time.Time
}

func newConn(ws *websocket.Conn, log *slog.Logger, lim Limits, m *metrics) *conn {
	c := &conn{
		ws: ws, log: log, m: m,
		send:     make(chan []byte, lim.SendQueue),
		done:     make(chan struct{}),
		rate:     admission.NewFrameRate(lim.FramesPerSecond, lim.FrameBurst, abuseBurst, nil),
		pongWait: cmp.Or(lim.PongWait, PongWait),
	}
	ws.SetReadLimit(MaxFrameBytes)
	_ = ws.SetReadDeadline(time.Now().Add(c.pongWait))
	ws.SetPongHandler(func(string) error { return ws.SetReadDeadline(time.Now().Add(c.pongWait)) })
	c.countPings()
	c.wg.Add(1)
	go c.writeLoop()
	return c
}

// enqueue queues a frame for the writer without waiting. A full queue means
// the client cannot keep up: it is closed with 1013 and recovers with
// ?since=. It reports whether the frame was queued.
func (c *conn) enqueue(b []byte) bool {
	select {
	case <-c.done:
		return false
	default:
	}
	select {
	case c.send <- b:
		c.m.framesOut.WithLabelValues(frameType(b)).Inc()
		return true
	default:
		c.m.queueOverflows.Inc()
		c.log.Warn("send queue full, closing slow client", "queue", cap(c.send))
		c.closeWith(CloseTryAgainLater, "send queue full: reconnect with ?since=")
		return false
	}
}

// WriteWait implements hub.Pacer: it queues b, waiting for room while ctx
// lasts and the connection is open (a replay paced by the client's reading).
func (c *conn) WriteWait(ctx context.Context, b []byte) bool {
	select {
	case c.send <- b:
		c.m.framesOut.WithLabelValues(frameType(b)).Inc()
		return true
	case <-c.done:
		return false
	case <-ctx.Done():
		return false
	}
}

// Write implements hub.Transport: enqueue.
func (c *conn) Write(b []byte) bool { return c.enqueue(b) }

// Close implements hub.Transport: closeWith.
func (c *conn) Close(code int, reason string) { c.closeWith(code, reason) }

// closeWith stops the connection with a close frame of code. It never
// waits: the writer goroutine sends the close frame. Safe to call from any
// goroutine, any number of times.
func (c *conn) closeWith(code int, reason string) {
	c.closeOnce.Do(func() {
		c.code, c.reason = code, reason
		if code == CloseTryAgainLater {
			// The client is not reading: a writer blocked on its full socket
			// fails at once, and the writer then tries the close frame for a
			// moment and drops the connection (writeLoop).
			_ = c.ws.NetConn().SetWriteDeadline(time.Now())
		}
		close(c.done)
		// The reader sees the peer's close reply (or the deadline) and returns.
		_ = c.ws.SetReadDeadline(time.Now().Add(2 * time.Second))
	})
}

// writeLoop is the one writer: queued frames, then pings. When the
// connection closes it writes what is already queued (nothing is cut in
// half), then the close frame. Frames go out in batches (writeBatch): what
// is queued when the writer wakes leaves in one write.
func (c *conn) writeLoop() {
	defer c.wg.Done()
	ping := time.NewTicker(min(PingInterval, c.pongWait/2))
	defer ping.Stop()
	for {
		select {
		case <-c.done:
			if c.code == CloseTryAgainLater {
				// Tell the client if its buffers allow; drop what is queued
				// and the connection.
				_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(c.code, c.reason), time.Now().Add(100*time.Millisecond))
				_ = c.ws.Close()
				return
			}
			deadline := time.Now().Add(writeWait)
		drain:
			for {
				select {
				case b := <-c.send:
					if c.writeBatch(b, deadline) != nil {
						break drain
					}
				default:
					break drain
				}
			}
			_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(c.code, c.reason), deadline)
			return
		case b := <-c.send:
			if err := c.writeBatch(b, time.Now().Add(writeWait)); err != nil {
				c.closeWith(CloseNormal, "")
				if c.code == CloseTryAgainLater { // closed while this write was blocked
					_ = c.ws.Close()
				}
				return
			}
		case <-ping.C:
			if err := c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(writeWait)); err != nil {
				c.closeWith(CloseNormal, "")
				return
			}
		}
	}
}

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
func (c *conn) writeBatch(first []byte, deadline time.Time) error {
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

// read returns the next data frame, text or binary (both carry the same
// JSON and must be UTF-8). ok is false when the connection is over (closed
// by either side, too big, invalid UTF-8); it has then been closed with the
// right code.
func (c *conn) read() (data []byte, ok bool) {
	_, data, err := c.ws.ReadMessage()
	if err != nil {
		if err == websocket.ErrReadLimit {
			c.closeWith(CloseTooBig, "frame over 16 KiB")
		} else {
			c.closeWith(CloseNormal, "")
		}
		return nil, false
	}
	// A frame read shows the peer alive as a pong does (PROTOCOL.md
	// "Limits and close codes"): push the read deadline on. Without this,
	// a client that pipelines many frames at a venue slow to answer them
	// (a loaded store) had its pong sit unread behind them while the
	// deadline set by the previous pong passed, and Go fails every read
	// once a deadline has passed, buffered data or not: the socket closed
	// under a live client.
	_ = c.ws.SetReadDeadline(time.Now().Add(c.pongWait))
	select {
	case <-c.done:
		// closeWith's short deadline for the close handshake must win
		// over the one just set.
		_ = c.ws.SetReadDeadline(time.Now().Add(2 * time.Second))
		return nil, false
	default:
	}
	if !utf8.Valid(data) {
		c.closeWith(CloseInvalidUTF8, "frame is not UTF-8")
		return nil, false
	}
	return data, true
}

// frameRate is a new connection's frame rate at the configured limits.
func (s *Server) frameRate() *admission.FrameRate {
	return admission.NewFrameRate(s.cfg.Limits.FramesPerSecond, s.cfg.Limits.FrameBurst, abuseBurst, nil)
}

// receiver is a session over a connection: a lobby.Session or a
// room.Session.
type receiver interface {
	Receive(ctx context.Context, data []byte) bool
}

// serve hands every frame the socket reads to r until the socket closes or
// r closed it.
func (c *conn) serve(ctx context.Context, r receiver) {
	for {
		data, ok := c.read()
		if !ok || !r.Receive(ctx, data) {
			return
		}
	}
}

// finish waits for the writer to send what is queued and the close frame,
// reads (and drops) what the peer still sends until its close reply or the
// 2-second deadline, then drops the TCP connection: closing with unread
// data would reset the connection and lose the close frame.
func (c *conn) finish() {
	c.closeWith(CloseNormal, "")
	c.wg.Wait()
	for {
		if _, _, err := c.ws.NextReader(); err != nil {
			break
		}
	}
	_ = c.ws.Close()
}

var typeKey = []byte(`"type":"`)

// outTypes are the frame types the venue builds for sockets: the only
// label values venue_frames_out_total takes (a "type" inside an agent's
// terms must never become a series; SECURITY.md "What an outsider can
// grow").
var outTypes = map[string]bool{}

func init() {
	for _, t := range strings.Fields(`message_ack scope_block error negotiation_message negotiation_started
		negotiation_ended proposal_expired proposal_withdrawn agent_thinking escalation_resolved
		offer_submitted negotiation_created negotiation_requested negotiation_accepted negotiation_declined
		brand_blocked bouncers profile`) {
		outTypes[t] = true
	}
}

// frameType finds a frame's type for the metrics without decoding it: one
// of outTypes, "other" for anything else (never a value an agent chose).
func frameType(b []byte) string {
	i := bytes.Index(b, typeKey)
	if i < 0 {
		return "other"
	}
	rest := b[i+len(typeKey):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 || j > 32 || !outTypes[string(rest[:j])] {
		return "other"
	}
	return string(rest[:j])
}
