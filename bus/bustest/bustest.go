// Package bustest is the contract of bus.Bus: one suite that every
// implementation passes (bus.Local, bus/redisbus). It also finds the test
// Redis (redis.go).
package bustest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/venuehq/venue/bus"
)

// NewNodes returns n buses that are nodes of one venue: a message published
// on any of them reaches the subscribers of every one. (For an in-process
// bus, the same bus n times.) The buses are closed when t ends.
type NewNodes func(t *testing.T, n int) []bus.Bus

// Run runs the whole contract; subtests run in parallel, each on its own
// nodes.
func Run(t *testing.T, newNodes NewNodes) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, newNodes NewNodes)
	}{
		{"OrderPerTopic", testOrder},
		{"FanOut", testFanOut},
		{"TopicsApart", testTopicsApart},
		{"CancelStopsDelivery", testCancel},
		{"ResubscribeAfterCancel", testResubscribe},
		{"TwoNodes", testTwoNodes},
		{"SubscribeIsEffectiveOnReturn", testSubscribeEffective},
		{"ConcurrentPublishers", testConcurrent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, newNodes)
		})
	}
}

// waitTime bounds every wait for a delivery.
const waitTime = 5 * time.Second

// sink collects what one subscriber receives.
type sink struct {
	mu   sync.Mutex
	got  []string
	more chan struct{} // signalled on every message
}

func newSink() *sink { return &sink{more: make(chan struct{}, 1)} }

func (s *sink) fn(b []byte) {
	s.mu.Lock()
	s.got = append(s.got, string(b))
	s.mu.Unlock()
	select {
	case s.more <- struct{}{}:
	default:
	}
}

func (s *sink) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.got)
}

// waitFor waits until the sink holds n messages and returns them.
func (s *sink) waitFor(t *testing.T, what string, n int) []string {
	t.Helper()
	deadline := time.NewTimer(waitTime)
	defer deadline.Stop()
	for {
		if got := s.list(); len(got) >= n {
			return got
		}
		select {
		case <-s.more:
		case <-deadline.C:
			t.Fatalf("%s: %d of %d messages after %v: %q", what, len(s.list()), n, waitTime, s.list())
		}
	}
}

func publish(t *testing.T, b bus.Bus, topic string, msgs ...string) {
	t.Helper()
	for _, m := range msgs {
		if err := b.Publish(context.Background(), topic, []byte(m)); err != nil {
			t.Fatalf("publish %s: %v", topic, err)
		}
	}
}

func numbered(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%03d", prefix, i)
	}
	return out
}

func testOrder(t *testing.T, newNodes NewNodes) {
	b := newNodes(t, 1)[0]
	s := newSink()
	defer b.Subscribe("neg:order", s.fn)()
	msgs := numbered("m", 300)
	publish(t, b, "neg:order", msgs...)
	if got := s.waitFor(t, "subscriber", len(msgs)); !slices.Equal(got, msgs) {
		t.Fatalf("out of order or extra: %q", got)
	}
}

func testFanOut(t *testing.T, newNodes NewNodes) {
	b := newNodes(t, 1)[0]
	s1, s2 := newSink(), newSink()
	defer b.Subscribe("neg:fan", s1.fn)()
	defer b.Subscribe("neg:fan", s2.fn)()
	msgs := numbered("f", 50)
	publish(t, b, "neg:fan", msgs...)
	for i, s := range []*sink{s1, s2} {
		if got := s.waitFor(t, fmt.Sprintf("subscriber %d", i+1), len(msgs)); !slices.Equal(got, msgs) {
			t.Fatalf("subscriber %d: %q", i+1, got)
		}
	}
}

func testTopicsApart(t *testing.T, newNodes NewNodes) {
	b := newNodes(t, 1)[0]
	a, c := newSink(), newSink()
	defer b.Subscribe("neg:a", a.fn)()
	defer b.Subscribe("agent:a", c.fn)()
	publish(t, b, "neg:b", "not for anyone")
	publish(t, b, "neg:a", "for a")
	publish(t, b, "agent:a", "for c")
	if got := a.waitFor(t, "neg:a", 1); !slices.Equal(got, []string{"for a"}) {
		t.Fatalf("neg:a got %q", got)
	}
	if got := c.waitFor(t, "agent:a", 1); !slices.Equal(got, []string{"for c"}) {
		t.Fatalf("agent:a got %q", got)
	}
}

func testCancel(t *testing.T, newNodes NewNodes) {
	b := newNodes(t, 1)[0]
	gone, stays := newSink(), newSink()
	cancel := b.Subscribe("neg:cancel", gone.fn)
	defer b.Subscribe("neg:cancel", stays.fn)()
	publish(t, b, "neg:cancel", "before")
	gone.waitFor(t, "before cancel", 1)
	cancel()
	cancel() // idempotent
	publish(t, b, "neg:cancel", "after")
	// Delivery is in order: once the remaining subscriber has "after", a
	// delivery to the cancelled one would have happened already.
	stays.waitFor(t, "remaining subscriber", 2)
	if got := gone.list(); !slices.Equal(got, []string{"before"}) {
		t.Fatalf("cancelled subscriber got %q", got)
	}
}

func testResubscribe(t *testing.T, newNodes NewNodes) {
	b := newNodes(t, 1)[0]
	for round := range 5 {
		s := newSink()
		cancel := b.Subscribe("neg:again", s.fn)
		msg := fmt.Sprintf("round %d", round)
		publish(t, b, "neg:again", msg)
		if got := s.waitFor(t, msg, 1); !slices.Equal(got, []string{msg}) {
			t.Fatalf("%s: got %q", msg, got)
		}
		cancel() // the last subscriber: the topic is dropped, then taken again
	}
}

func testTwoNodes(t *testing.T, newNodes NewNodes) {
	nodes := newNodes(t, 2)
	a, b := nodes[0], nodes[1]
	onA, onB := newSink(), newSink()
	defer a.Subscribe("neg:shared", onA.fn)()
	defer b.Subscribe("neg:shared", onB.fn)()
	fromA, fromB := numbered("a", 20), numbered("b", 20)
	publish(t, a, "neg:shared", fromA...)
	gotB := onB.waitFor(t, "node B", len(fromA))
	publish(t, b, "neg:shared", fromB...)
	want := slices.Concat(fromA, fromB)
	if got := onA.waitFor(t, "node A", len(want)); !slices.Equal(got, want) {
		t.Fatalf("node A: %q", got)
	}
	if got := onB.waitFor(t, "node B", len(want)); !slices.Equal(got, want) || !slices.Equal(gotB, fromA) {
		t.Fatalf("node B: %q", got)
	}
}

// A socket subscribes, then reads the store: an event published (on any
// node) right after Subscribe returns must reach it.
func testSubscribeEffective(t *testing.T, newNodes NewNodes) {
	nodes := newNodes(t, 2)
	for i := range 30 {
		topic := fmt.Sprintf("neg:fresh-%d", i)
		s := newSink()
		cancel := nodes[1].Subscribe(topic, s.fn)
		publish(t, nodes[0], topic, "right after")
		s.waitFor(t, topic, 1)
		cancel()
	}
}

func testConcurrent(t *testing.T, newNodes NewNodes) {
	nodes := newNodes(t, 2)
	const topics, each = 4, 100
	sinks := make([]*sink, topics)
	for i := range sinks {
		sinks[i] = newSink()
		defer nodes[i%2].Subscribe(fmt.Sprintf("neg:conc-%d", i), sinks[i].fn)()
	}
	var wg sync.WaitGroup
	for i := range topics {
		wg.Go(func() {
			for _, m := range numbered(fmt.Sprint(i), each) {
				if err := nodes[(i+1)%2].Publish(context.Background(), fmt.Sprintf("neg:conc-%d", i), []byte(m)); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for i, s := range sinks {
		if got := s.waitFor(t, fmt.Sprintf("topic %d", i), each); !slices.Equal(got, numbered(fmt.Sprint(i), each)) {
			t.Fatalf("topic %d: %q", i, got)
		}
	}
}
