package client

import "sync"

// queue is an unbounded FIFO in front of a channel, so that a socket's reader
// never waits for a consumer that is slow to read its events. What a
// negotiation can produce is bounded by the venue (8 minutes, a rate limit),
// so the memory is too.
type queue[T any] struct {
	mu     sync.Mutex
	items  []T
	closed bool
	notify chan struct{} // capacity 1: "something changed"
	out    chan T
}

func newQueue[T any]() *queue[T] {
	return &queue[T]{notify: make(chan struct{}, 1), out: make(chan T)}
}

// push appends v; it reports false once the queue is closed.
func (q *queue[T]) push(v T) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return false
	}
	q.items = append(q.items, v)
	q.wake()
	return true
}

// close ends the queue: out is closed once what is queued was delivered.
// Safe to call more than once.
func (q *queue[T]) close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	q.wake()
}

func (q *queue[T]) wake() {
	select {
	case q.notify <- struct{}{}:
	default:
	}
}

// run forwards items to out until the queue is closed and drained, or stop is
// closed (what is left is dropped); then it closes out.
func (q *queue[T]) run(stop <-chan struct{}) {
	defer close(q.out)
	for {
		q.mu.Lock()
		if len(q.items) == 0 {
			closed := q.closed
			q.mu.Unlock()
			if closed {
				return
			}
			select {
			case <-q.notify:
				continue
			case <-stop:
				return
			}
		}
		v := q.items[0]
		var zero T
		q.items[0] = zero
		q.items = q.items[1:]
		q.mu.Unlock()
		select {
		case q.out <- v:
		case <-stop:
			return
		}
	}
}
