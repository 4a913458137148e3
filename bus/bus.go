// Package bus fans committed events out to every node that has a socket
// interested in them. The store is the truth and the bus only a hint: a
// subscriber that sees a gap in seq reads the missing rows from the store.
// Local is the in-process bus of the embedded default; bus/redisbus is
// Redis pub/sub for several nodes.
package bus

import (
	"context"
	"sync"
)

// Bus publishes byte messages on topics and delivers each to every
// subscriber of that topic on every node.
type Bus interface {
	// Publish sends data to the topic's subscribers. It does not wait for
	// delivery; a message may be lost (the store is the truth).
	Publish(ctx context.Context, topic string, data []byte) error
	// Subscribe calls fn for every message on topic until cancel is called.
	// fn must not block: it runs on the bus's delivery goroutine. A
	// zero-length message is the bus saying that messages may have been lost
	// (it reconnected): the subscriber catches up from the store.
	Subscribe(topic string, fn func(data []byte)) (cancel func())
	// Close stops delivery.
	Close() error
}

// Watcher is a Bus that can tell whether a message published on a topic
// would reach anyone, so a publisher whose message costs work to build
// (the arena feed) can skip it. A Watcher may say true when unsure; it
// says false only when no subscriber would have had the message.
type Watcher interface {
	Watched(topic string) bool
}

// Topics of the venue.
func NegotiationTopic(id string) string { return "neg:" + id }

// AgentTopic carries lobby pushes for one agent.
func AgentTopic(id string) string { return "agent:" + id }

// Local is the in-process bus: Publish calls the subscribers synchronously,
// in the order of Publish calls.
type Local struct {
	mu     sync.RWMutex
	subs   map[string]map[int]func([]byte)
	nextID int
}

// NewLocal returns an empty in-process bus.
func NewLocal() *Local { return &Local{subs: map[string]map[int]func([]byte){}} }

// Publish implements Bus.
func (l *Local) Publish(_ context.Context, topic string, data []byte) error {
	l.mu.RLock()
	fns := make([]func([]byte), 0, len(l.subs[topic]))
	for _, fn := range l.subs[topic] {
		fns = append(fns, fn)
	}
	l.mu.RUnlock()
	for _, fn := range fns {
		fn(data)
	}
	return nil
}

// Subscribe implements Bus.
func (l *Local) Subscribe(topic string, fn func([]byte)) func() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.nextID++
	id := l.nextID
	if l.subs[topic] == nil {
		l.subs[topic] = map[int]func([]byte){}
	}
	l.subs[topic][id] = fn
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(l.subs[topic], id)
		if len(l.subs[topic]) == 0 {
			delete(l.subs, topic)
		}
	}
}

// Close implements Bus.
func (l *Local) Close() error { return nil }

// Watched implements Watcher: whether topic has a subscriber now.
func (l *Local) Watched(topic string) bool {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.subs[topic]) > 0
}

var _ Watcher = (*Local)(nil)
