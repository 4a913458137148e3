// Package redisbus is bus.Bus on Redis pub/sub, for several venue nodes
// sharing one Redis. Each Bus (node) holds one PubSub connection and
// multiplexes its topics on it: the first local subscriber of a topic sends
// SUBSCRIBE, the last one's cancel sends UNSUBSCRIBE. One delivery goroutine
// calls the subscribers in message order. A message published on this node
// reaches this node's subscribers without waiting for Redis (local.go);
// Redis carries it to the other nodes. Pub/sub may drop messages (a
// reconnect, a slow node): the store is the truth, the bus only a hint.
package redisbus

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/venuehq/venue/bus"
	"github.com/venuehq/venue/internal/redispipe"
)

// Options configure New.
type Options struct {
	// Prefix namespaces the channels: topic T travels on channel
	// Prefix+":"+T. Default "venue". Nodes of one venue share it; tests give
	// each test its own.
	Prefix string
	// Logger reports a subscription Redis did not confirm in time. Default
	// slog.Default().
	Logger *slog.Logger
	// SubscribeTimeout bounds how long Subscribe waits for Redis to confirm
	// a new topic (default 5 s); past it Subscribe returns anyway (the store
	// is the truth) and logs a warning.
	SubscribeTimeout time.Duration
}

// Bus implements bus.Bus on Redis pub/sub. Safe for concurrent use; use New.
type Bus struct {
	rdb     *redis.Client
	ps      *redis.PubSub
	prefix  string
	log     *slog.Logger
	timeout time.Duration

	// subMu orders the changes of topics with the SUBSCRIBE/UNSUBSCRIBE
	// commands they cause, so Redis sees them in the same order.
	subMu sync.Mutex
	// mu guards topics and confirm; the delivery goroutine reads them.
	mu      sync.Mutex
	topics  map[string][]*subscriber   // by channel, in subscription order
	confirm map[string][]chan struct{} // by channel: SUBSCRIBEs sent, awaiting Redis's reply, in order

	done      chan struct{} // closed when the delivery goroutine ends
	closeOnce sync.Once
	pub       *redispipe.Pipe // pipelined publishes (pipeline.go)
	local     chan localMsg   // this node's publishes, for its own subscribers (local.go)
	origin    string          // tags this node's messages on Redis (local.go)
	watch     *watch          // Watched's subscriber counts (watch.go)
}

type subscriber struct {
	fn        func([]byte)
	cancelled atomic.Bool
}

var (
	_ bus.Bus     = (*Bus)(nil)
	_ bus.Watcher = (*Bus)(nil)
)

// New connects to redisURL (redis://[:password@]host:port[/db] or
// rediss://), checks it with a PING and starts the delivery goroutine.
// Errors never contain the password.
func New(ctx context.Context, redisURL string, o Options) (*Bus, error) {
	rdb, err := Client(ctx, redisURL)
	if err != nil {
		return nil, err
	}
	if o.Prefix == "" {
		o.Prefix = "venue"
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.SubscribeTimeout <= 0 {
		o.SubscribeTimeout = 5 * time.Second
	}
	// Name the connections (CLIENT LIST shows whose they are; a test kills
	// exactly this bus's pub/sub connection).
	rdb.Options().ClientName = "venue-bus:" + o.Prefix
	b := &Bus{
		rdb: rdb, ps: rdb.Subscribe(context.Background()), prefix: o.Prefix + ":", log: o.Logger,
		timeout: o.SubscribeTimeout,
		topics:  map[string][]*subscriber{}, confirm: map[string][]chan struct{}{},
		done: make(chan struct{}), watch: newWatch(),
		local: make(chan localMsg, 1024), origin: newOrigin(),
	}
	// ChannelWithSubscriptions reconnects (and resubscribes) after a network
	// error and health-checks the connection with pings.
	go b.deliver(b.ps.ChannelWithSubscriptions(redis.WithChannelSize(1024)))
	b.startPublishers()
	return b, nil
}

// Client opens a go-redis client on redisURL and checks it with a PING.
// Errors name the URL with its password redacted.
func Client(ctx context.Context, redisURL string) (*redis.Client, error) {
	opts, err := redis.ParseURL(redisURL)
	if err != nil {
		// url.Parse errors quote the URL: say what is wrong without it.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("redis: parse URL %s: %w", RedactURL(redisURL), err)
	}
	rdb := redis.NewClient(opts)
	if err := rdb.Ping(ctx).Err(); err != nil {
		_ = rdb.Close()
		return nil, scrub(fmt.Errorf("redis: connect to %s: %w", RedactURL(redisURL), err), opts.Password)
	}
	return rdb, nil
}

// Publish implements bus.Bus: PUBLISH on the topic's channel, pipelined
// with the other publishes of this node under way (pipeline.go), after
// handing the message to this node's own subscribers (local.go). It returns
// once Redis has the message, not when subscribers got it.
func (b *Bus) Publish(ctx context.Context, topic string, data []byte) error {
	if err := b.publish(ctx, b.prefix+topic, data); err != nil {
		return fmt.Errorf("redisbus: publish %s: %w", topic, err)
	}
	return nil
}

// Subscribe implements bus.Bus. It returns once Redis confirmed the topic's
// subscription (at once when this node already had it), so a message
// published after Subscribe returns is delivered; past SubscribeTimeout, or
// if Redis is unreachable, it returns anyway and logs a warning. fn runs on
// the delivery goroutine, in message order, and must not block; it must not
// call Subscribe for a new topic either (that would wait for a confirmation
// the blocked goroutine delivers). cancel is idempotent; fn is not called
// after cancel returns, except by a delivery already under way.
func (b *Bus) Subscribe(topic string, fn func(data []byte)) (cancel func()) {
	ch := b.prefix + topic
	s := &subscriber{fn: fn}
	var wait chan struct{}
	b.subMu.Lock()
	b.mu.Lock()
	first := len(b.topics[ch]) == 0
	b.topics[ch] = append(b.topics[ch], s)
	if first {
		wait = make(chan struct{})
		b.confirm[ch] = append(b.confirm[ch], wait)
	}
	b.mu.Unlock()
	if first {
		ctx, cancelCtx := context.WithTimeout(context.Background(), b.timeout)
		if err := b.ps.Subscribe(ctx, ch); err != nil {
			// No confirmation will answer this SUBSCRIBE (go-redis
			// resubscribes on its next connection, unawaited).
			b.log.Warn("redis subscribe", "topic", topic, "err", err)
			b.mu.Lock()
			b.confirm[ch] = slices.DeleteFunc(b.confirm[ch], func(c chan struct{}) bool { return c == wait })
			if len(b.confirm[ch]) == 0 {
				delete(b.confirm, ch)
			}
			b.mu.Unlock()
			wait = nil
		}
		cancelCtx()
	}
	b.subMu.Unlock()
	if wait != nil {
		t := time.NewTimer(b.timeout)
		select {
		case <-wait:
		case <-b.done:
		case <-t.C:
			b.log.Warn("redis did not confirm a subscription in time; events may arrive late (read from the store)",
				"topic", topic, "timeout", b.timeout)
		}
		t.Stop()
	}
	var once sync.Once
	return func() { once.Do(func() { b.unsubscribe(ch, s) }) }
}

func (b *Bus) unsubscribe(ch string, s *subscriber) {
	s.cancelled.Store(true)
	b.subMu.Lock()
	defer b.subMu.Unlock()
	b.mu.Lock()
	subs := b.topics[ch]
	for i, x := range subs {
		if x == s {
			subs = append(subs[:i:i], subs[i+1:]...)
			break
		}
	}
	last := len(subs) == 0
	if last {
		delete(b.topics, ch)
	} else {
		b.topics[ch] = subs
	}
	b.mu.Unlock()
	if last {
		ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
		defer cancel()
		if err := b.ps.Unsubscribe(ctx, ch); err != nil && !errors.Is(err, redis.ErrClosed) {
			b.log.Warn("redis unsubscribe", "channel", ch, "err", err)
		}
	}
}

// deliver is the delivery goroutine: confirmations wake Subscribe, messages
// go to the channel's subscribers in order.
func (b *Bus) deliver(in <-chan any) {
	defer close(b.done)
	for {
		var m any
		select {
		case lm := <-b.local:
			b.fanOut(lm.channel, lm.data)
			continue
		case msg, ok := <-in:
			if !ok {
				return
			}
			m = msg
		}
		switch m := m.(type) {
		case *redis.Subscription:
			if m.Kind != "subscribe" {
				continue
			}
			b.mu.Lock()
			// Redis answers a connection's commands in order, so the
			// oldest waiter of the channel is the one confirmed. (A
			// resubscription after a reconnect confirms early; harmless.)
			q := b.confirm[m.Channel]
			if len(q) > 0 {
				close(q[0])
				if len(q) == 1 {
					delete(b.confirm, m.Channel)
				} else {
					b.confirm[m.Channel] = q[1:]
				}
			}
			subs := b.topics[m.Channel]
			b.mu.Unlock()
			if len(q) == 0 { // a resubscription after a reconnect: messages may be lost
				for _, s := range subs {
					if !s.cancelled.Load() {
						s.fn(nil)
					}
				}
			}
		case *redis.Message:
			if data, ok := b.fromRedis(m.Payload); ok {
				b.fanOut(m.Channel, data)
			}
		}
	}
}

// fanOut calls channel's subscribers with data, on the delivery goroutine.
func (b *Bus) fanOut(channel string, data []byte) {
	b.mu.Lock()
	subs := b.topics[channel]
	b.mu.Unlock()
	for _, s := range subs {
		if !s.cancelled.Load() {
			s.fn(data)
		}
	}
}

// Ping checks the Redis connection (the server's /readyz calls it).
func (b *Bus) Ping(ctx context.Context) error {
	if err := b.rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redisbus: ping: %w", err)
	}
	return nil
}

// Close implements bus.Bus: it stops delivery, waits for the delivery
// goroutine and closes the connections. Safe to call more than once.
func (b *Bus) Close() error {
	var err error
	b.closeOnce.Do(func() {
		b.stopPublishers()
		b.watch.close()
		err = b.ps.Close()
		<-b.done
		if cerr := b.rdb.Close(); err == nil {
			err = cerr
		}
	})
	if err != nil {
		return fmt.Errorf("redisbus: close: %w", err)
	}
	return nil
}

// RedactURL returns redisURL with its password replaced by "xxxxx".
func RedactURL(redisURL string) string {
	u, err := url.Parse(redisURL)
	if err != nil {
		return "(unparsable URL)"
	}
	if q := u.Query(); q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}

// scrub blanks secret out of err's message; the result unwraps to err.
func scrub(err error, secret string) error {
	if err == nil || len(secret) < 3 || !strings.Contains(err.Error(), secret) {
		return err
	}
	return &redacted{msg: strings.ReplaceAll(err.Error(), secret, "xxxxx"), err: err}
}

type redacted struct {
	msg string
	err error
}

func (e *redacted) Error() string { return e.msg }
func (e *redacted) Unwrap() error { return e.err }
