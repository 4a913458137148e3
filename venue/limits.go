package venue

import (
	"log/slog"
	"time"

	"github.com/gorilla/websocket"

	"github.com/venuehq/venue/admission"
	"github.com/venuehq/venue/internal/wsconn"
	"github.com/venuehq/venue/lobby"
)

// Socket limits (PROTOCOL.md "Limits and close codes"); the socket
// machinery that applies them is package internal/wsconn.
const (
	MaxFrameBytes   = wsconn.MaxFrameBytes   // a frame over this closes the socket with 1009
	SendQueueFrames = wsconn.SendQueueFrames // frames waiting for a slow client before it is closed with 1013
	PingInterval    = wsconn.PingInterval
	PongWait        = wsconn.PongWait
	FramesPerSecond = wsconn.FramesPerSecond // per connection, with bursts of FrameBurst
	FrameBurst      = wsconn.FrameBurst
)

// PresenceTTL is how long a node's word that an agent's lobby socket is
// open lasts (lobby.PresenceTTL, PROTOCOL.md "Presence").
const PresenceTTL = lobby.PresenceTTL

// Close codes the venue uses (RFC 6455 §7.4).
const (
	CloseNormal        = wsconn.CloseNormal        // 1000
	CloseGoingAway     = wsconn.CloseGoingAway     // 1001: the venue shuts down
	CloseInvalidUTF8   = wsconn.CloseInvalidUTF8   // 1007
	ClosePolicy        = wsconn.ClosePolicy        // 1008: sustained abuse
	CloseTooBig        = wsconn.CloseTooBig        // 1009
	CloseTryAgainLater = wsconn.CloseTryAgainLater // 1013: send queue overflow
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

// frameRate is a new connection's frame rate at the configured limits.
func (s *Server) frameRate() *admission.FrameRate {
	return admission.NewFrameRate(s.cfg.Limits.FramesPerSecond, s.cfg.Limits.FrameBurst, wsconn.AbuseBurst, nil)
}

// newConn takes over an upgraded socket at the node's limits, drawing on
// rate (the session's).
func (s *Server) newConn(ws *websocket.Conn, attrs []slog.Attr, rate *admission.FrameRate) *wsconn.Conn {
	return wsconn.New(ws, s.log, wsconn.Options{SendQueue: s.cfg.Limits.SendQueue, Rate: rate, Metrics: s.metrics.sockets, PongWait: s.cfg.Limits.PongWait, LogAttrs: attrs})
}
