package watchers

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/venuehq/venue/clock"
)

// TTL is how long a node's count lasts in Redis unless renewed; a node
// renews its counts every TTL/3, so a node that dies stops counting within
// TTL.
const TTL = 30 * time.Second

// writeTimeout bounds one Redis write or read.
const writeTimeout = 2 * time.Second

// Shared counts on every node through Redis: a hash per negotiation
// (Prefix + ":watchers:" + id) with a field per node whose value is
// "count expiry" (expiry in Unix milliseconds of Clock). A node writes its
// field when its count changes and renews every field of its own every
// TTL/3 (Run); Count sums the fields not yet expired, so a node that
// stops renewing stops counting. Redis failures are logged and counted as
// nothing: a count is a courtesy, never a reason to refuse a socket.
type Shared struct {
	Client *redis.Client
	Prefix string      // the venue's Redis prefix ("venue"): keys are Prefix:watchers:{id}
	Clock  clock.Clock // nil: the wall clock
	Logger *slog.Logger

	once  sync.Once
	node  string
	local *Local
	mu    sync.Mutex // serialises writes of one node, so a late write never undoes a newer one
}

func (s *Shared) init() {
	s.once.Do(func() {
		b := make([]byte, 8)
		_, _ = rand.Read(b)
		s.node = "node_" + hex.EncodeToString(b)
		s.local = NewLocal()
		if s.Clock == nil {
			s.Clock = clock.Real{}
		}
		if s.Logger == nil {
			s.Logger = slog.Default()
		}
	})
}

func (s *Shared) key(negotiationID string) string { return s.Prefix + ":watchers:" + negotiationID }

// Open implements Counter.
func (s *Shared) Open(ctx context.Context, negotiationID string) func() {
	s.init()
	s.local.add(negotiationID, 1)
	s.write(ctx, negotiationID)
	var once sync.Once
	return func() {
		once.Do(func() {
			s.local.add(negotiationID, -1)
			s.write(context.WithoutCancel(ctx), negotiationID)
		})
	}
}

// write puts this node's current count of negotiationID in Redis (deletes
// the field at zero).
func (s *Shared) write(ctx context.Context, negotiationID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, _ := s.local.Count(ctx, negotiationID)
	ctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	k := s.key(negotiationID)
	var err error
	if n == 0 {
		err = s.Client.HDel(ctx, k, s.node).Err()
	} else {
		exp := s.Clock.Now().Add(TTL).UnixMilli()
		_, err = s.Client.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.HSet(ctx, k, s.node, fmt.Sprintf("%d %d", n, exp))
			p.Expire(ctx, k, 2*TTL)
			return nil
		})
	}
	if err != nil {
		s.Logger.Warn("watchers: write to Redis", "negotiation_id", negotiationID, "err", err)
	}
}

// Count implements Counter: the sum of every node's unexpired count.
func (s *Shared) Count(ctx context.Context, negotiationID string) (int, error) {
	s.init()
	ctx, cancel := context.WithTimeout(ctx, writeTimeout)
	defer cancel()
	fields, err := s.Client.HGetAll(ctx, s.key(negotiationID)).Result()
	if err != nil {
		return 0, fmt.Errorf("watchers: read Redis: %w", err)
	}
	now := s.Clock.Now().UnixMilli()
	total := 0
	for _, v := range fields {
		n, exp, ok := parseField(v)
		if ok && exp > now {
			total += n
		}
	}
	return total, nil
}

func parseField(v string) (n int, exp int64, ok bool) {
	a, b, found := strings.Cut(v, " ")
	if !found {
		return 0, 0, false
	}
	n, err1 := strconv.Atoi(a)
	exp, err2 := strconv.ParseInt(b, 10, 64)
	return n, exp, err1 == nil && err2 == nil && n > 0
}

// Run renews this node's counts every TTL/3 on Clock until ctx ends.
func (s *Shared) Run(ctx context.Context) error {
	s.init()
	for {
		t := s.Clock.NewTimer(TTL / 3)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C():
		}
		s.Renew(ctx)
	}
}

// Renew writes every nonzero count of this node again with a fresh
// expiry (Run calls it every TTL/3).
func (s *Shared) Renew(ctx context.Context) {
	s.init()
	for id := range s.local.snapshot() {
		s.write(ctx, id)
	}
}
