package wsconn

import "context"

// sockCtx is a request context that is also done once its socket closes
// (conn.done): a frame still waiting for the store when its sender's socket
// goes is abandoned (the store drops a step not yet taken into a commit)
// rather than committed for nobody. No goroutine per socket: Done is the
// socket's own channel. The parent is the request's context, which ends
// only after the socket handler returns.
type sockCtx struct {
	context.Context
	done <-chan struct{}
}

// Context returns parent, done as well once the socket closes.
func (c *Conn) Context(parent context.Context) context.Context {
	return sockCtx{Context: parent, done: c.done}
}

// Done implements context.Context.
func (c sockCtx) Done() <-chan struct{} { return c.done }

// Err implements context.Context: context.Canceled once the socket closed.
func (c sockCtx) Err() error {
	select {
	case <-c.done:
		return context.Canceled
	default:
		return c.Context.Err()
	}
}
