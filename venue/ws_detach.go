package venue

import (
	"context"
	"net/http"
	"runtime/debug"

	"github.com/gorilla/websocket"
)

// readBufferBytes is a socket's read buffer. Not the 4 KiB one net/http
// read the request with: that one and net/http's 4 KiB write buffer are
// of one size class and were allocated together, so the Go heap keeps
// their spans while either lives; with a buffer of another size both are
// freed once the handler returns (goSocket). A frame larger than the
// buffer is still read whole (bufio reads it past the buffer); frames of
// the protocol are mostly far smaller.
const readBufferBytes = 2048

// socketContext is the context of a socket's life once upgraded, cancelled
// by the returned function when the socket's goroutine ends. It holds
// nothing of r's: not its cancellation (net/http cancels it when the
// handler returns, which is right after the upgrade: goSocket), and not
// its values, which the venue does not use after the upgrade and which
// would keep net/http's per-connection contexts and addresses alive for
// the socket's life (half a dozen objects a socket that every GC cycle
// marks: BENCHMARKS.md "Issue 21, seventh pass").
func socketContext(_ *http.Request) (context.Context, context.CancelFunc) {
	return context.WithCancel(context.Background())
}

// goSocket runs an upgraded socket's life (serve) on a goroutine of its own
// so that its handler returns at once: net/http then lets go of the
// connection's state (its 4 KiB write buffer, the response's 2 KiB one,
// the request and its headers, echo's context), about 8 KiB a socket that
// an idle socket held for nothing while its handler ran (BENCHMARKS.md
// "Heap per idle socket"). serve must not use the handler's echo.Context.
// A panic in serve is logged and closes ws, as net/http did for a handler.
func (s *Server) goSocket(serve func(), ws *websocket.Conn) {
	go func() {
		defer func() {
			if p := recover(); p != nil {
				s.log.Error("socket panicked", "panic", p, "stack", string(debug.Stack()))
				_ = ws.Close()
			}
		}()
		serve()
	}()
}
