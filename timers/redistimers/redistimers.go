// Package redistimers is timers.Timers on Redis, for several venue nodes:
// due times live in one sorted set (key Prefix+":timers", member the key,
// score the due time in unix milliseconds, rounded up so a wake is never
// early). Every node's Run polls it and claims the members that are due
// with a Lua script (ZRANGEBYSCORE ... LIMIT, then ZREM of those), which
// Redis runs atomically: exactly one node fires each wake. Keyspace
// notifications are not used (not reliable enough, ARCHITECTURE.md).
//
// A claimed wake is gone from the set: a node that dies between claiming
// and firing loses it until the venue's sweep of the store (timers.Sweeper)
// finds the clock overdue. That is acceptable because the room compares
// times itself: a late wake only delays announcements.
//
// Redis may lose the set (a restart without persistence, a failover to an
// empty replica, FLUSHALL): the set holds a sentinel member with score
// +inf, which every claim checks and puts back. A missing sentinel, or
// Redis errors in Run or Schedule, mean wakes may be lost: Run logs it and
// signals Lost, and the venue re-arms every clock from the store.
package redistimers

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/venuehq/venue/bus/redisbus"
	"github.com/venuehq/venue/clock"
	"github.com/venuehq/venue/internal/redispipe"
	"github.com/venuehq/venue/timers"
)

// Options configure New.
type Options struct {
	// Prefix namespaces the sorted set: Prefix+":timers". Default "venue".
	// Nodes of one venue share it; tests give each test its own.
	Prefix string
	// Clock gives "now" for deciding what is due (default the wall clock).
	// Polling itself runs on real time (Poll), so a clock.Fake moved forward
	// is noticed within one poll.
	Clock clock.Clock
	// Poll is how often Run looks for due wakes (default 20 ms): the
	// lateness of a wake scheduled on another node, or due on this one.
	Poll time.Duration
	// Batch is the most wakes one claim takes (default DefaultBatch).
	Batch int
	// Logger reports Redis errors of Run, which keeps polling (default
	// slog.Default()).
	Logger *slog.Logger
}

// DefaultBatch is the most wakes one claim takes by default: more than the
// Postgres store's largest batch (128 steps), so the clocks its one commit
// armed, which come due together, are fired together and settle in one
// batch, not split between claims (BENCHMARKS.md, "Issue 21, ninth pass").
const DefaultBatch = 512

// Timers implements timers.Timers on a Redis sorted set. Safe for
// concurrent use; use New.
type Timers struct {
	rdb   *redis.Client
	key   string
	clock clock.Clock
	poll  time.Duration
	batch int
	log   *slog.Logger
	// kick wakes Run early when Schedule sets a time before its next poll.
	kick chan struct{}
	// next is the unix ms at which Run will look next (MaxInt64: not running).
	next atomic.Int64
	// lost is signalled when wakes may have been lost (Lost).
	lost chan struct{}
	// scheduleFailed is set by a Schedule that Redis refused.
	scheduleFailed atomic.Bool
	// pipe sends the Schedules of many negotiations as pipelines.
	pipe *redispipe.Pipe
}

// Schedules in flight at once, and the most in one pipeline.
const (
	schedulers  = 2
	scheduleMax = 256
)

// sentinel is the member that marks the set as intact; no negotiation id
// has this form.
const sentinel = "~venue:wakes-intact"

var _ timers.Timers = (*Timers)(nil)

// claim takes up to ARGV[2] members of KEYS[1] due by ARGV[1] (unix ms),
// earliest first, removing them so no other node gets them. Its first
// element is "1" when the sentinel ARGV[3] was missing (the set was lost;
// the sentinel is put back), else "0"; the due members follow.
var claim = redis.NewScript(`
local lost = '0'
if redis.call('ZSCORE', KEYS[1], ARGV[3]) == false then
  redis.call('ZADD', KEYS[1], '+inf', ARGV[3])
  lost = '1'
end
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
if #due > 0 then
  redis.call('ZREM', KEYS[1], unpack(due))
end
table.insert(due, 1, lost)
return due
`)

// New connects to redisURL (as bus/redisbus does, password redacted in
// errors) and checks it with a PING.
func New(ctx context.Context, redisURL string, o Options) (*Timers, error) {
	rdb, err := redisbus.Client(ctx, redisURL)
	if err != nil {
		return nil, err
	}
	if o.Prefix == "" {
		o.Prefix = "venue"
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Poll <= 0 {
		o.Poll = 20 * time.Millisecond
	}
	if o.Batch <= 0 {
		o.Batch = DefaultBatch
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	t := &Timers{
		rdb: rdb, key: o.Prefix + ":timers", clock: o.Clock, poll: o.Poll, batch: o.Batch, log: o.Logger,
		kick: make(chan struct{}, 1), lost: make(chan struct{}, 1),
		pipe: redispipe.New(rdb, schedulers, scheduleMax, 10*time.Second),
	}
	t.next.Store(math.MaxInt64)
	// Mark the set intact (NX: a node joining does not hide a loss).
	if err := rdb.ZAddNX(ctx, t.key, redis.Z{Score: math.Inf(1), Member: sentinel}).Err(); err != nil {
		t.pipe.Close()
		_ = rdb.Close()
		return nil, fmt.Errorf("redistimers: mark the wake set: %w", err)
	}
	return t, nil
}

// score is a due time in unix milliseconds, rounded up: a wake is never
// claimed before its time.
func score(at time.Time) int64 {
	ms := at.UnixMilli()
	if at.After(time.UnixMilli(ms)) {
		ms++
	}
	return ms
}

// Schedule implements timers.Timers: ZADD LT (add the key's wake or move it
// earlier, never later), or ZREM for the zero time, pipelined with the
// Schedules of other goroutines (a wave of clocks coming due re-arms many
// negotiations at once). A time before this node's next poll wakes its Run
// at once. Errors: Redis's, ctx's, or redispipe.ErrClosed after Close.
func (t *Timers) Schedule(ctx context.Context, key string, at time.Time) error {
	if at.IsZero() {
		if err := t.pipe.Do(ctx, func(ctx context.Context, p redis.Cmdable) redis.Cmder {
			return p.ZRem(ctx, t.key, key)
		}); err != nil {
			return fmt.Errorf("redistimers: cancel %s: %w", key, err)
		}
		return nil
	}
	s := score(at)
	// LT: add the wake, or move it earlier; never later (timers.Timers).
	if err := t.pipe.Do(ctx, func(ctx context.Context, p redis.Cmdable) redis.Cmder {
		return p.ZAddArgs(ctx, t.key, redis.ZAddArgs{LT: true, Members: []redis.Z{{Score: float64(s), Member: key}}})
	}); err != nil {
		t.scheduleFailed.Store(true)
		return fmt.Errorf("redistimers: schedule %s: %w", key, err)
	}
	if s < t.next.Load() {
		select {
		case t.kick <- struct{}{}:
		default:
		}
	}
	return nil
}

// Lost is signalled (at most one signal pending) when wakes may have been
// lost: the wake set was found without its sentinel (Redis restarted empty,
// was flushed or failed over), Run recovered from Redis errors, or a
// Schedule failed. Whoever reads it re-arms every clock from the store
// (timers.Sweeper does). Run notices within one poll.
func (t *Timers) Lost() <-chan struct{} { return t.lost }

func (t *Timers) signalLost() {
	select {
	case t.lost <- struct{}{}:
	default:
	}
}

// Run implements timers.Timers: until ctx is done it claims the due wakes
// (at most Batch at a time, earliest first) and calls fire for each, in
// order, on this goroutine; then it waits for the next poll, the next due
// time if sooner, or a kick from Schedule. A Redis error is logged and
// retried after a pause (at most a second); Run returns nil when ctx is
// done. Run more than once at a time on one Timers only on different nodes.
// Each claim also checks the set is intact (see Lost).
func (t *Timers) Run(ctx context.Context, fire func(ctx context.Context, key string)) error {
	defer t.next.Store(math.MaxInt64)
	pause := t.poll
	failing := false
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		// Announce the look we are about to take, so a Schedule for any
		// time before it (due now) kicks the following wait short.
		now := t.clock.Now()
		t.next.Store(now.UnixMilli())
		keys, err := claim.Run(ctx, t.rdb, []string{t.key}, now.UnixMilli(), t.batch, sentinel).StringSlice()
		if ctx.Err() != nil {
			return nil
		}
		if err == nil {
			if len(keys) == 0 {
				err = fmt.Errorf("redistimers: claim returned nothing")
			} else {
				gone := keys[0] == "1"
				keys = keys[1:]
				switch {
				case gone:
					t.log.Warn("redis timers: the wake set was lost (Redis restarted empty, flushed or failed over); re-arming clocks from the store", "key", t.key)
					t.signalLost()
				case failing || t.scheduleFailed.Load():
					t.log.Warn("redis timers: Redis answers again; wakes armed meanwhile may be lost, re-arming clocks from the store", "key", t.key)
					t.signalLost()
				}
				failing = false
				t.scheduleFailed.Store(false)
			}
		}
		var wait time.Duration
		switch {
		case err != nil:
			t.log.Warn("redis timers: claim due wakes", "err", err)
			failing = true
			pause = min(pause*2, time.Second)
			wait = pause
		case len(keys) > 0:
			pause = t.poll
			for _, k := range keys {
				fire(ctx, k)
			}
			if len(keys) == t.batch { // maybe more due: look again at once
				continue
			}
			// Wait for the next wake, not a whole poll: in a wave of
			// clocks the next ones are due within milliseconds.
			now = t.clock.Now()
			wait = t.untilNext(ctx, now)
		default:
			pause = t.poll
			wait = t.untilNext(ctx, now)
		}
		t.next.Store(now.Add(wait).UnixMilli())
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return nil
		case <-t.kick:
			timer.Stop() // Go 1.23 timers: no stale tick after Stop or Reset
		case <-timer.C:
		}
	}
}

// untilNext is how long to wait for the earliest wake in the set, at most
// one poll (other nodes may add earlier ones).
func (t *Timers) untilNext(ctx context.Context, now time.Time) time.Duration {
	zs, err := t.rdb.ZRangeWithScores(ctx, t.key, 0, 0).Result()
	if err != nil || len(zs) == 0 || math.IsInf(zs[0].Score, 0) { // none, or only the sentinel
		return t.poll
	}
	d := time.UnixMilli(int64(zs[0].Score)).Sub(now)
	return min(max(d, time.Millisecond), t.poll)
}

// Len returns how many wakes are scheduled (on every node).
func (t *Timers) Len(ctx context.Context) (int64, error) {
	n, err := t.rdb.ZCount(ctx, t.key, "-inf", "(+inf").Result() // not the sentinel
	if err != nil {
		return 0, fmt.Errorf("redistimers: count: %w", err)
	}
	return n, nil
}

// Close stops the Schedule pipelines and closes the Redis connection; Run
// must have returned.
func (t *Timers) Close() error {
	t.pipe.Close()
	if err := t.rdb.Close(); err != nil {
		return fmt.Errorf("redistimers: close: %w", err)
	}
	return nil
}
