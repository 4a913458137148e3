package redisbus

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
)

// Local delivery: a message published on this node goes to this node's
// subscribers through the delivery goroutine at once, not after a round
// trip to Redis and back (one PUBLISH answer and one pub/sub message less
// on a frame's way to a party on the same node, BENCHMARKS.md). On Redis
// the message is tagged with this node's origin, and the copy Redis sends
// back to this node's own subscription is dropped. A message of another
// node (or an untagged one) is delivered as before. Messages of one
// publisher keep their order; as across nodes, messages of different
// publishers are ordered by nothing but seq (the hub's subscriptions
// handle a gap by reading the store).

// originLen is the length of a tag: a NUL, 16 hex digits, a newline.
const originLen = 18

type localMsg struct {
	channel string
	data    []byte
}

// newOrigin is a new random tag "\x00<16 hex digits>\n".
func newOrigin() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "\x00" + hex.EncodeToString(b) + "\n"
}

// tag is data as it travels on Redis: origin, then data.
func (b *Bus) tag(data []byte) []byte {
	out := make([]byte, 0, originLen+len(data))
	return append(append(out, b.origin...), data...)
}

// fromRedis is the message a pub/sub payload carries: ok is false for this
// node's own (delivered locally already); another node's tag is removed.
func (b *Bus) fromRedis(payload string) (data []byte, ok bool) {
	if len(payload) >= originLen && payload[0] == 0 && payload[originLen-1] == '\n' {
		if strings.HasPrefix(payload, b.origin) {
			return nil, false
		}
		payload = payload[originLen:]
	}
	return []byte(payload), true
}

// deliverLocal hands data to the delivery goroutine for channel's
// subscribers on this node, if it has any. It waits only while the
// delivery goroutine's queue is full, and fails once the bus is closed or
// ctx ends.
func (b *Bus) deliverLocal(ctx context.Context, channel string, data []byte) error {
	b.mu.Lock()
	n := len(b.topics[channel])
	b.mu.Unlock()
	if n == 0 {
		return nil
	}
	select {
	case b.local <- localMsg{channel, data}:
		return nil
	case <-b.done:
		return errBusClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}
