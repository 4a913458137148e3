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

// window counts ARGV[2] hits (one, or a reservation) and returns the count
// in the current window and the milliseconds left of it, atomically (one
// script, one round trip).
var window = redis.NewScript(`
local n = redis.call('INCRBY', KEYS[1], ARGV[2])
if n == tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
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
	// Reserve, above 1, is how many hits of a key one round trip takes
	// from Redis: the node spends them one by one until the window ends,
	// and asks again when none is left. The nodes together still never
	// pass Limit in a window; a node may hold up to Reserve-1 it does not
	// use, which the others then cannot have. A refusal is kept until the
	// window ends too, so a flood costs no round trips. 0 or 1: one round
	// trip a hit, nothing kept.
	Reserve int
	// Now is the clock the kept hits expire on (default time.Now); the
	// windows themselves are Redis's.
	Now func() time.Time

	mu       sync.Mutex
	queue    []*hit
	sending  int                  // callers sending pipelines for everyone (at most pipelines)
	reserved map[string]*reserved // with Reserve: hits kept per key
	swept    int                  // len(reserved) after the last sweep of expired keys
}

// reserved is what a node holds of a key's window: left hits until until,
// or (refused) Redis's refusal until then.
type reserved struct {
	left    int
	refused bool
	until   time.Time
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
	n    int // hits it counts: 1, or Reserve
	res  []int64
	err  error
	done chan struct{}
}

// Allow counts one hit of key. It reports whether the hit is within the
// limit and, when not, how long until the window ends. With Reserve it
// spends a hit the node holds, or reserves more (see Reserve). A Redis
// error is returned wrapped (the caller decides whether to fail open or
// closed); nothing is kept after one.
func (l *Limiter) Allow(ctx context.Context, key string) (bool, time.Duration, error) {
	if err := ctx.Err(); err != nil { // the caller has gone: count nothing
		return false, 0, fmt.Errorf("redislimit: %s: %w", key, err)
	}
	if l.Reserve > 1 {
		return l.allowReserved(ctx, key)
	}
	res, err := l.count(ctx, key, 1)
	if err != nil {
		return false, 0, err
	}
	if res[0] <= int64(l.Limit) {
		return true, 0, nil
	}
	return false, time.Duration(res[1]) * time.Millisecond, nil
}

// allowReserved is Allow with Reserve: a kept hit if the node has one,
// else a reservation of Reserve hits from Redis.
func (l *Limiter) allowReserved(ctx context.Context, key string) (bool, time.Duration, error) {
	now := l.now()
	l.mu.Lock()
	if r := l.reserved[key]; r != nil && now.Before(r.until) {
		switch {
		case r.refused:
			l.mu.Unlock()
			return false, r.until.Sub(now), nil
		case r.left > 0:
			r.left--
			l.mu.Unlock()
			return true, 0, nil
		}
	}
	l.mu.Unlock()
	res, err := l.count(ctx, key, l.Reserve)
	if err != nil {
		return false, 0, err
	}
	// res[0] counts this reservation whole; what of it is within Limit
	// is the node's.
	got := min(int64(l.Reserve), max(0, int64(l.Limit)-(res[0]-int64(l.Reserve))))
	ttl := time.Duration(res[1]) * time.Millisecond
	l.keep(key, int(max(got-1, 0)), got == 0, now.Add(ttl))
	if got == 0 {
		return false, ttl, nil
	}
	return true, 0, nil
}

// keep records what the node holds of key's window, dropping expired keys
// now and then (when the map has doubled since the last sweep).
func (l *Limiter) keep(key string, left int, refused bool, until time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.reserved == nil {
		l.reserved = map[string]*reserved{}
	}
	if len(l.reserved) >= 2*max(l.swept, 512) {
		now := l.now()
		for k, r := range l.reserved {
			if !now.Before(r.until) {
				delete(l.reserved, k)
			}
		}
		l.swept = len(l.reserved)
	}
	if r := l.reserved[key]; r != nil && !refused && !r.refused && l.now().Before(r.until) {
		// Two callers reserved at once: the node holds both's rest.
		r.left += left
		r.until = until
		return
	}
	l.reserved[key] = &reserved{left: left, refused: refused, until: until}
}

func (l *Limiter) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

// count adds n hits to key's window in Redis (pipelined with the other
// callers'): the window's count after them and its milliseconds left.
func (l *Limiter) count(ctx context.Context, key string, n int) ([]int64, error) {
	h := &hit{key: l.Prefix + key, n: n, done: make(chan struct{})}
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
		return nil, fmt.Errorf("redislimit: %s: %w", key, ctx.Err())
	}
	if h.err != nil {
		return nil, fmt.Errorf("redislimit: %s: %w", key, h.err)
	}
	if len(h.res) != 2 {
		return nil, fmt.Errorf("redislimit: %s: unexpected reply %v", key, h.res)
	}
	return h.res, nil
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
	send := func(hits []*hit, eval func(p redis.Pipeliner, h *hit) *redis.Cmd) {
		p := l.Client.Pipeline()
		cmds := make([]*redis.Cmd, len(hits))
		for i, h := range hits {
			cmds[i] = eval(p, h)
		}
		_, _ = p.Exec(ctx) // each command carries its own error
		for i, h := range hits {
			h.res, h.err = cmds[i].Int64Slice()
		}
	}
	send(batch, func(p redis.Pipeliner, h *hit) *redis.Cmd { return window.EvalSha(ctx, p, []string{h.key}, ms, h.n) })
	var again []*hit
	for _, h := range batch {
		if h.err != nil && redis.HasErrorPrefix(h.err, "NOSCRIPT") {
			again = append(again, h)
		}
	}
	if len(again) > 0 {
		send(again, func(p redis.Pipeliner, h *hit) *redis.Cmd { return window.Eval(ctx, p, []string{h.key}, ms, h.n) })
	}
	for _, h := range batch {
		close(h.done)
	}
}
