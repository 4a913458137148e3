// Package redislimit is a rate limit shared by every node of a venue
// through Redis: a fixed window per key (SECURITY.md "Deployment"). The
// venue uses it for registrations per client address when it runs on
// Redis, so a client cannot multiply its allowance by the number of nodes
// behind the load balancer.
package redislimit

import (
	"context"
	"fmt"
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
// while staying one round trip a hit.
type Limiter struct {
	Client *redis.Client
	Prefix string // e.g. the venue's --redis-prefix and ":register:"
	Limit  int
	Window time.Duration
}

// Allow counts one hit of key. It reports whether the hit is within the
// limit and, when not, how long until the window ends. A Redis error is
// returned as is (the caller decides whether to fail open or closed).
func (l *Limiter) Allow(ctx context.Context, key string) (bool, time.Duration, error) {
	res, err := window.Run(ctx, l.Client, []string{l.Prefix + key}, l.Window.Milliseconds()).Int64Slice()
	if err != nil {
		return false, 0, fmt.Errorf("redislimit: %s: %w", key, err)
	}
	if len(res) != 2 {
		return false, 0, fmt.Errorf("redislimit: %s: unexpected reply %v", key, res)
	}
	if res[0] <= int64(l.Limit) {
		return true, 0, nil
	}
	return false, time.Duration(res[1]) * time.Millisecond, nil
}
