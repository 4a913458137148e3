package redisbus

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Publishes are pipelined: Publish hands its message to one of a few
// publisher goroutines, each of which sends everything queued so far as
// one pipeline (one write and one read for tens of PUBLISHes when a node
// is busy, a lone PUBLISH when it is not) and answers every caller with
// its own command's result. A caller's publishes keep their order (each
// waits for its own), which is all the venue relies on.

const (
	publishers  = 4   // pipelines in flight at once
	pipelineMax = 256 // PUBLISHes in one pipeline
)

var errBusClosed = errors.New("redisbus: closed")

type pubReq struct {
	channel string
	data    []byte
	done    chan error // buffered 1
}

type pipeliner struct {
	in     chan *pubReq
	mu     sync.RWMutex // RLock to send on in; Lock to close
	closed bool
	stop   chan struct{}
	wg     sync.WaitGroup
}

func (b *Bus) startPublishers() {
	p := &pipeliner{in: make(chan *pubReq, 4096), stop: make(chan struct{})}
	b.pub = p
	for range publishers {
		p.wg.Go(func() { b.publishLoop() })
	}
}

// stopPublishers answers what is queued with an error and waits for the
// pipelines in flight.
func (b *Bus) stopPublishers() {
	p := b.pub
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
			r.done <- errBusClosed
		default:
			return
		}
	}
}

// publish queues one PUBLISH and waits for Redis's answer (or ctx).
func (b *Bus) publish(ctx context.Context, channel string, data []byte) error {
	p := b.pub
	if err := b.deliverLocal(ctx, channel, data); err != nil {
		return err
	}
	r := &pubReq{channel: channel, data: b.tag(data), done: make(chan error, 1)}
	p.mu.RLock()
	if p.closed {
		p.mu.RUnlock()
		return errBusClosed
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

func (b *Bus) publishLoop() {
	p := b.pub
	batch := make([]*pubReq, 0, pipelineMax)
	for {
		var first *pubReq
		select {
		case first = <-p.in:
		case <-p.stop:
			return
		}
		batch = append(batch[:0], first)
	more:
		for len(batch) < pipelineMax {
			select {
			case r := <-p.in:
				batch = append(batch, r)
			default:
				break more
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if len(batch) == 1 {
			first.done <- b.rdb.Publish(ctx, first.channel, first.data).Err()
		} else {
			pipe := b.rdb.Pipeline()
			for _, r := range batch {
				pipe.Publish(ctx, r.channel, r.data)
			}
			cmds, err := pipe.Exec(ctx)
			for i, r := range batch {
				if i < len(cmds) {
					r.done <- cmds[i].Err()
				} else {
					r.done <- err
				}
			}
		}
		cancel()
	}
}
