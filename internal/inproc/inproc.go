// Package inproc serves an http.Handler to callers in the same process
// without a socket: each Dial is one end of an in-memory pipe whose other
// end the handler's http.Server accepts. The venue's house agents reach
// their own node this way (ARCHITECTURE.md "Packages", `arena`), so the caps a node
// keeps per client address never count them.
package inproc

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"
)

// ErrClosed is Dial's error once the server is closed.
var ErrClosed = errors.New("inproc: server closed")

// addr is the address of both ends of every in-process connection.
type addr struct{}

func (addr) Network() string { return "inproc" }
func (addr) String() string  { return "inproc" }

// conn is one end of a pipe with the in-process address.
type conn struct{ net.Conn }

func (conn) LocalAddr() net.Addr  { return addr{} }
func (conn) RemoteAddr() net.Addr { return addr{} }

// listener hands the server ends of Dial's pipes to http.Server.
type listener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, ErrClosed
	}
}

func (l *listener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *listener) Addr() net.Addr { return addr{} }

// Server is a handler served in-process. Its zero value is not usable:
// call Serve.
type Server struct {
	ln  *listener
	srv *http.Server
}

// localKey marks the context of a request that came through a Server.
type localKey struct{}

// Serve starts serving h in-process; Close stops it. Requests reach h with
// RemoteAddr "inproc" and Local(r) true.
func Serve(h http.Handler) *Server {
	s := &Server{ln: &listener{conns: make(chan net.Conn), done: make(chan struct{})}}
	s.srv = &http.Server{
		Handler: h, ReadHeaderTimeout: 10 * time.Second,
		ConnContext: func(ctx context.Context, _ net.Conn) context.Context {
			return context.WithValue(ctx, localKey{}, true)
		},
	}
	go func() { _ = s.srv.Serve(s.ln) }()
	return s
}

// DialContext opens a connection to the server, whatever network and
// address say (it has the signature of net.Dialer.DialContext, so an
// http.Transport or a websocket.Dialer can use it). Errors: ErrClosed;
// ctx's error.
func (s *Server) DialContext(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case s.ln.conns <- conn{server}:
		return conn{client}, nil
	case <-s.ln.done:
	case <-ctx.Done():
		client.Close()
		server.Close()
		return nil, ctx.Err()
	}
	client.Close()
	server.Close()
	return nil, ErrClosed
}

// Close stops accepting and closes the connections the server still
// tracks (hijacked ones, such as WebSockets, are their handlers' to
// close). It is idempotent.
func (s *Server) Close() error {
	s.ln.Close()
	return s.srv.Close()
}

// Local reports whether r came through a Server of this package.
func Local(r *http.Request) bool {
	v, _ := r.Context().Value(localKey{}).(bool)
	return v
}
