// Package redispipe sends the Redis commands of many goroutines as
// pipelines: Do hands its command to one of a few sender goroutines, each
// of which sends everything queued so far as one pipeline (one write and
// one read for tens of commands when a node is busy, a lone command when it
// is not) and answers every caller with its own command's result. A
// caller's commands keep their order (each waits for its own). The Redis
// bus pipelines its PUBLISHes with it, the Redis timers their ZADDs (a
// wave of clocks coming due re-arms hundreds of negotiations at once).
package redispipe

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrClosed is what Do returns once Close has begun.
var ErrClosed = errors.New("redispipe: closed")

// Queue runs one command on c and returns it (its Err is the caller's
// result): c is a pipeline that queues it, or, for a lone command, the
// client itself.
type Queue func(ctx context.Context, c redis.Cmdable) redis.Cmder

type request struct {
	queue Queue
	done  chan error // buffered 1
}

// Pipe is a set of sender goroutines on one client. Safe for concurrent
// use; use New.
type Pipe struct {
	rdb     *redis.Client
	max     int
	timeout time.Duration
	in      chan *request
	mu      sync.RWMutex // RLock to send on in; Lock to close
	closed  bool
	stop    chan struct{}
	wg      sync.WaitGroup
}

// New starts senders goroutines (pipelines in flight at once) sending at
// most max commands a pipeline on rdb; each pipeline may take up to timeout
// (its commands fail with the context's error past it).
func New(rdb *redis.Client, senders, max int, timeout time.Duration) *Pipe {
	p := &Pipe{rdb: rdb, max: max, timeout: timeout, in: make(chan *request, 4096), stop: make(chan struct{})}
	for range senders {
		p.wg.Go(p.loop)
	}
	return p
}

// Do queues one command and waits for Redis's answer: the command's error
// (nil on success), ctx's error if ctx ends first, ErrClosed after Close.
func (p *Pipe) Do(ctx context.Context, queue Queue) error {
	r := &request{queue: queue, done: make(chan error, 1)}
	p.mu.RLock()
	if p.closed {
		p.mu.RUnlock()
		return ErrClosed
	}
	select {
	case p.in <- r:
		p.mu.RUnlock()
	case <-ctx.Done():
		p.mu.RUnlock()
		return ctx.Err()
	}
	select {
	case err := <-r.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close answers what is queued with ErrClosed and waits for the pipelines
// in flight. It does not close the client.
func (p *Pipe) Close() {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.stop)
	}
	p.mu.Unlock()
	p.wg.Wait()
	for {
		select {
		case r := <-p.in:
			r.done <- ErrClosed
		default:
			return
		}
	}
}

func (p *Pipe) loop() {
	batch := make([]*request, 0, p.max)
	cmds := make([]redis.Cmder, 0, p.max)
	for {
		var first *request
		select {
		case first = <-p.in:
		case <-p.stop:
			return
		}
		batch = append(batch[:0], first)
	more:
		for len(batch) < p.max {
			select {
			case r := <-p.in:
				batch = append(batch, r)
			default:
				break more
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), p.timeout)
		if len(batch) == 1 { // no pipeline for a lone command
			first.done <- first.queue(ctx, p.rdb).Err()
		} else {
			pipe := p.rdb.Pipeline()
			cmds = cmds[:0]
			for _, r := range batch {
				cmds = append(cmds, r.queue(ctx, pipe))
			}
			_, _ = pipe.Exec(ctx) // each command holds its own error (a failed round trip sets it on every one)
			for i, r := range batch {
				r.done <- cmds[i].Err()
			}
		}
		cancel()
		clear(batch)
		clear(cmds)
	}
}
