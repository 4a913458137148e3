// Package redislimit is a rate limit shared by every node of a venue
// through Redis: a fixed window per key (SECURITY.md "Deployment"). The
// venue uses it for registrations per client address when it runs on
// Redis, so a client cannot multiply its allowance by the number of nodes
// behind the load balancer.
package redislimit

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// window counts one hit and returns the count in the current window and
// the milliseconds left of it, atomically (one script, one round trip).
var window = redis.NewScript(`
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); ttl = tonumber(ARGV[1]) end
return {n, ttl}
`)

// Limiter allows Limit hits per Window for each key, counted in Redis under
// Prefix. The windows are fixed: a burst of Limit at the end of one window
// and another at the start of the next is possible, which bounds a flood
// while staying one round trip a hit. Hits counted at the same time share
// round trips: whatever is queued while a pipeline is in flight goes in
// the next one (at most pipelines in flight, pipelineMax hits each), so a
// busy node's frames do not each take a connection of the pool. The zero
// value of the unexported part is ready; a Limiter must not be copied
// after first use.
type Limiter struct {
	Client *redis.Client
	Prefix string // e.g. the venue's --redis-prefix and ":register:"
	Limit  int
	Window time.Duration

	mu      sync.Mutex
	queue   []*hit
	sending int // callers sending pipelines for everyone (at most pipelines)
}

// Pipelining of hits.
const (
	pipelines   = 4
	pipelineMax = 256
	sendTimeout = 5 * time.Second
)

// hit is one Allow waiting for its reply.
type hit struct {
	key  string
	res  []int64
	err  error
	done chan struct{}
}

// Allow counts one hit of key. It reports whether the hit is within the
// limit and, when not, how long until the window ends. A Redis error is
// returned as is (the caller decides whether to fail open or closed).
func (l *Limiter) Allow(ctx context.Context, key string) (bool, time.Duration, error) {
	if err := ctx.Err(); err != nil { // the caller has gone: count nothing
		return false, 0, fmt.Errorf("redislimit: %s: %w", key, err)
	}
	h := &hit{key: l.Prefix + key, done: make(chan struct{})}
	l.mu.Lock()
	l.queue = append(l.queue, h)
	lead := l.sending < pipelines
	if lead {
		l.sending++
	}
	l.mu.Unlock()
	if lead {
		// This caller sends what is queued (its own hit among it) until
		// nothing is: no hit waits for a sender that is not coming.
		l.send()
	}
	select {
	case <-h.done:
	case <-ctx.Done():
		return false, 0, fmt.Errorf("redislimit: %s: %w", key, ctx.Err())
	}
	if h.err != nil {
		return false, 0, fmt.Errorf("redislimit: %s: %w", key, h.err)
	}
	if len(h.res) != 2 {
		return false, 0, fmt.Errorf("redislimit: %s: unexpected reply %v", key, h.res)
	}
	if h.res[0] <= int64(l.Limit) {
		return true, 0, nil
	}
	return false, time.Duration(h.res[1]) * time.Millisecond, nil
}

// send sends the queued hits, a pipeline at a time, until none is left.
func (l *Limiter) send() {
	for {
		l.mu.Lock()
		n := min(len(l.queue), pipelineMax)
		if n == 0 {
			l.sending--
			l.mu.Unlock()
			return
		}
		batch := slices.Clone(l.queue[:n])
		l.queue = slices.Delete(l.queue, 0, n)
		l.mu.Unlock()
		l.run(batch)
	}
}

// run sends one pipeline of the window script (EVALSHA; a hit Redis
// answers NOSCRIPT, which ran nothing, goes again as EVAL, which loads the
// script) and answers each hit.
func (l *Limiter) run(batch []*hit) {
	ctx, cancel := context.WithTimeout(context.Background(), sendTimeout)
	defer cancel()
	ms := l.Window.Milliseconds()
	send := func(hits []*hit, eval func(p redis.Pipeliner, key string) *redis.Cmd) {
		p := l.Client.Pipeline()
		cmds := make([]*redis.Cmd, len(hits))
		for i, h := range hits {
			cmds[i] = eval(p, h.key)
		}
		_, _ = p.Exec(ctx) // each command carries its own error
		for i, h := range hits {
			h.res, h.err = cmds[i].Int64Slice()
		}
	}
	send(batch, func(p redis.Pipeliner, key string) *redis.Cmd { return window.EvalSha(ctx, p, []string{key}, ms) })
	var again []*hit
	for _, h := range batch {
		if h.err != nil && redis.HasErrorPrefix(h.err, "NOSCRIPT") {
			again = append(again, h)
		}
	}
	if len(again) > 0 {
		send(again, func(p redis.Pipeliner, key string) *redis.Cmd { return window.Eval(ctx, p, []string{key}, ms) })
	}
	for _, h := range batch {
		close(h.done)
	}
}
