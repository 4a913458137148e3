// Package wsconn is the WebSocket transport of a node (ARCHITECTURE.md
// "Transports and sessions"): one reader (the handler's goroutine), one
// writer goroutine fed by a bounded queue, read limit, deadlines, ping/pong
// drawn on the connection's frame rate, batched writes, the close
// handshake; a Conn is a hub.Transport. Early holds what a session writes
// before its socket exists, Set is the node's open sockets. venue keeps
// only the upgrade and the wiring.
package wsconn

import (
	"cmp"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
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
	// WriteWait bounds every write to the socket.
	WriteWait       = 10 * time.Second
	FramesPerSecond = 10 // per connection, with bursts of FrameBurst
	FrameBurst      = 20
	// AbuseBurst is the refusals tolerated (bursts of AbuseBurst,
	// refilling one a second) before the socket is closed with 1008.
	AbuseBurst = admission.DefaultAbuseBurst
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

// Conn is one WebSocket with gorilla's rules: one reader (the handler's
// goroutine), one writer goroutine fed by a bounded queue, read limit,
// deadlines, ping/pong. Closing has one owner (closeOnce) and is idempotent.
type Conn struct {
	ws    *websocket.Conn
	m     *Metrics // the node's series
	log   *slog.Logger
	attrs []slog.Attr // Options.LogAttrs
	// send is the writer's queue. Its elements are pointers, not slices:
	// a GC cycle scans the whole buffer of every socket's channel, 8 bytes
	// a slot instead of 24 (1 KiB a socket at SendQueueFrames, not 3).
	// Only frames that cannot be written inline are queued (a box each).
	send      chan *[]byte
	done      chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup
	rate      *admission.FrameRate // frames and pings in, shared with the session
	code      int                  // the close code, set once before done closes
	reason    string
	pongWait  time.Duration // Options.PongWait
	// Inline writes (writeNow): wmu is held while data frames go to the
	// socket (a batch of the writer's or an inline write), queued counts
	// frames handed to send (or a leftover) and not yet written, leftover
	// is the unwritten tail of an inline write (under wmu, the writer's to
	// send first), wclosed says the writer has sent the close frame (under
	// wmu), raw is the socket (nil: every frame goes through the writer).
	wmu      sync.Mutex
	queued   atomic.Int64
	leftover []byte
	wclosed  bool
	raw      *rawWriter
	inlined  atomic.Int64 // frames writeNow took (tests)
	// AgentID and KeyAt name the agent the socket authenticated as and when
	// the key it used was issued ("" for observers): a revoked or rotated
	// key closes the sockets it opened (Set.CloseAgent).
	AgentID string
	KeyAt   time.Time
}

// Options are a connection's limits; zero fields take the defaults.
type Options struct {
	// SendQueue is how many frames wait for a slow client before it is
	// closed with 1013 (default SendQueueFrames).
	SendQueue int
	// Rate is the connection's frame rate, shared with its session: pings
	// draw on it too (default FramesPerSecond, bursts of FrameBurst).
	Rate *admission.FrameRate
	// Metrics are the node's series (default: unregistered ones).
	Metrics *Metrics
	// LogAttrs say which socket the connection's log lines are about
	// (negotiation, agent): kept as attributes rather than a logger made
	// With them, which holds a copy of the handler and the attributes
	// formatted, four objects a socket for every GC cycle to mark.
	LogAttrs []slog.Attr
	// PongWait is how long a socket may go without the venue reading a
	// pong or a frame from it (default PongWait; tests shorten it). The
	// venue pings every PingInterval, or every PongWait/2 if that is less.
	PongWait time.Duration
}

// New takes over ws (a server's, just upgraded): it sets the read limit
// (MaxFrameBytes) and deadline (PongWait, renewed by pongs), answers pings
// while the rate allows, and starts the writer.
func New(ws *websocket.Conn, log *slog.Logger, opt Options) *Conn {
	if opt.SendQueue == 0 {
		opt.SendQueue = SendQueueFrames
	}
	if opt.Rate == nil {
		opt.Rate = admission.NewFrameRate(FramesPerSecond, FrameBurst, AbuseBurst, nil)
	}
	if opt.Metrics == nil {
		opt.Metrics = NewMetrics(nil)
	}
	c := &Conn{
		ws: ws, log: log, attrs: opt.LogAttrs, m: opt.Metrics,
		send:     make(chan *[]byte, opt.SendQueue),
		done:     make(chan struct{}),
		rate:     opt.Rate,
		pongWait: cmp.Or(opt.PongWait, PongWait),
		raw:      newRawWriter(ws.NetConn()),
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
func (c *Conn) enqueue(b []byte) bool {
	select {
	case <-c.done:
		return false
	default:
	}
	if c.writeNow(b) {
		c.m.countOut(b)
		return true
	}
	c.queued.Add(1)
	box := new([]byte) // here, so a frame written inline costs no box
	*box = b
	select {
	case c.send <- box:
		c.m.countOut(b)
		return true
	default:
		c.queued.Add(-1)
		c.m.QueueOverflows.Inc()
		c.log.LogAttrs(context.Background(), slog.LevelWarn, "send queue full, closing slow client",
			append(slices.Clip(c.attrs), slog.Int("queue", cap(c.send)))...)
		c.Close(CloseTryAgainLater, "send queue full: reconnect with ?since=")
		return false
	}
}

// WriteWait implements hub.Pacer: it queues b, waiting for room while ctx
// lasts and the connection is open (a replay paced by the client's reading).
func (c *Conn) WriteWait(ctx context.Context, b []byte) bool {
	c.queued.Add(1)
	box := new([]byte)
	*box = b
	select {
	case c.send <- box:
		c.m.countOut(b)
		return true
	case <-c.done:
	case <-ctx.Done():
	}
	c.queued.Add(-1)
	return false
}

// Write implements hub.Transport: enqueue.
func (c *Conn) Write(b []byte) bool { return c.enqueue(b) }

// Close implements hub.Transport: it stops the connection with a close frame of code. It never
// waits: the writer goroutine sends the close frame. Safe to call from any
// goroutine, any number of times.
func (c *Conn) Close(code int, reason string) {
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
func (c *Conn) writeLoop() {
	defer c.wg.Done()
	ping := time.NewTicker(min(PingInterval, c.pongWait/2))
	defer ping.Stop()
	for {
		select {
		case <-c.done:
			if c.code == CloseTryAgainLater {
				// Tell the client if its buffers allow; drop what is queued
				// and the connection. No inline write follows.
				c.wmu.Lock()
				c.wclosed = true
				c.wmu.Unlock()
				_ = c.writeControl(websocket.CloseMessage, websocket.FormatCloseMessage(c.code, c.reason), time.Now().Add(100*time.Millisecond))
				_ = c.ws.Close()
				return
			}
			deadline := time.Now().Add(WriteWait)
		drain:
			for {
				select {
				case b := <-c.send:
					if c.writeBatch(deref(b), deadline) != nil {
						break drain
					}
				default:
					break drain
				}
			}
			// No inline write may follow the close frame.
			c.wmu.Lock()
			c.wclosed = true
			if len(c.leftover) > 0 { // an inline write's tail that came after the drain
				_ = c.writeBatchLocked(nil, deadline)
			}
			c.wmu.Unlock()
			_ = c.writeControl(websocket.CloseMessage, websocket.FormatCloseMessage(c.code, c.reason), deadline)
			return
		case b := <-c.send:
			if err := c.writeBatch(deref(b), time.Now().Add(WriteWait)); err != nil {
				c.Close(CloseNormal, "")
				if c.code == CloseTryAgainLater { // closed while this write was blocked
					_ = c.ws.Close()
				}
				return
			}
		case <-ping.C:
			if err := c.writeControl(websocket.PingMessage, nil, time.Now().Add(WriteWait)); err != nil {
				c.Close(CloseNormal, "")
				return
			}
		}
	}
}

// deref is the frame a queue element carries (nil for nil: writeNow's
// call to send its leftover).
func deref(b *[]byte) []byte {
	if b == nil {
		return nil
	}
	return *b
}

// writeControl writes a control frame (ping, pong, close) of kind with
// data by deadline, after the tail of an inline write if one is pending: a
// control frame may come between two data frames, never inside one (RFC
// 6455 section 5.4). gorilla's WriteControl writes to the socket directly,
// so without wmu a pong (the reader's) or a ping (the writer's) could land
// between writeNow's partial write and the writer's sending of its tail.
func (c *Conn) writeControl(kind int, data []byte, deadline time.Time) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if len(c.leftover) > 0 {
		nc := c.ws.NetConn()
		_ = nc.SetWriteDeadline(deadline)
		_, err := nc.Write(c.leftover)
		c.leftover = nil // the writer's nil in send then finds nothing to send
		if err != nil {
			return err
		}
	}
	return c.ws.WriteControl(kind, data, deadline)
}

// read returns the next data frame, text or binary (both carry the same
// JSON and must be UTF-8). ok is false when the connection is over (closed
// by either side, too big, invalid UTF-8); it has then been closed with the
// right code.
func (c *Conn) read() (data []byte, ok bool) {
	data, err := c.readMessage()
	if err != nil {
		if err == websocket.ErrReadLimit {
			c.Close(CloseTooBig, "frame over 16 KiB")
		} else {
			c.Close(CloseNormal, "")
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
		// Close's short deadline for the close handshake must win over
		// the one just set.
		_ = c.ws.SetReadDeadline(time.Now().Add(2 * time.Second))
		return nil, false
	default:
	}
	if !utf8.Valid(data) {
		c.Close(CloseInvalidUTF8, "frame is not UTF-8")
		return nil, false
	}
	return data, true
}

// readBufs hold a frame while it is read (*[]byte, 1 KiB to start).
var readBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1<<10); return &b }}

// readMessage is gorilla's ReadMessage but for the buffer: the frame is read
// into a pooled one and copied out at its own size. ReadMessage's
// io.ReadAll starts every frame at 512 bytes and grows from there, most of
// it garbage for the 100-200 bytes a frame usually is (BENCHMARKS.md
// "Issue 21, fifth pass"). The frame returned is the caller's.
func (c *Conn) readMessage() ([]byte, error) {
	_, r, err := c.ws.NextReader()
	if err != nil {
		return nil, err
	}
	bp := readBufs.Get().(*[]byte)
	buf := (*bp)[:0]
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	data := append([]byte{}, buf...)
	if cap(buf) <= 2*MaxFrameBytes {
		*bp = buf
		readBufs.Put(bp)
	}
	return data, nil
}

// Receiver is a session over a connection: a lobby.Session or a
// room.Session.
type Receiver interface {
	Receive(ctx context.Context, data []byte) bool
}

// Serve hands every frame the socket reads to r until the socket closes or
// r closed it.
func (c *Conn) Serve(ctx context.Context, r Receiver) {
	for {
		data, ok := c.read()
		if !ok || !r.Receive(ctx, data) {
			return
		}
	}
}

// Finish waits for the writer to send what is queued and the close frame,
// reads (and drops) what the peer still sends until its close reply or the
// 2-second deadline, then drops the TCP connection: closing with unread
// data would reset the connection and lose the close frame.
func (c *Conn) Finish() {
	c.Close(CloseNormal, "")
	c.wg.Wait()
	for {
		if _, _, err := c.ws.NextReader(); err != nil {
			break
		}
	}
	_ = c.ws.Close()
}

// countPings makes a ping from the client draw on the socket's frame budget
// like any frame: over it, no pong and a refusal (sustained: close 1008).
func (c *Conn) countPings() {
	c.ws.SetPingHandler(func(data string) error {
		if ok, closed := c.rate.Allow(); !ok {
			if closed {
				c.Close(ClosePolicy, "too many refused frames")
			}
			return nil
		}
		err := c.writeControl(websocket.PongMessage, []byte(data), time.Now().Add(WriteWait))
		var ne net.Error
		if errors.Is(err, websocket.ErrCloseSent) || (errors.As(err, &ne) && ne.Timeout()) {
			return nil
		}
		return err
	})
}

// Rate is the connection's frame rate (Options.Rate), to share with its
// session.
func (c *Conn) Rate() *admission.FrameRate { return c.rate }
