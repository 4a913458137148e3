package redispipe_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/venuehq/venue/internal/redispipe"
	"github.com/venuehq/venue/internal/testenv"
)

func client(t *testing.T) (*redis.Client, string) {
	t.Helper()
	url := testenv.RedisURL(t)
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb, testenv.KeyPrefix(t, url)
}

// Every caller gets its own command's answer, many callers at once: a
// command Redis refuses fails alone, the ones pipelined with it succeed.
func TestDoAnswersEachCaller(t *testing.T) {
	t.Parallel()
	rdb, prefix := client(t)
	p := redispipe.New(rdb, 2, 16, 5*time.Second)
	defer p.Close()
	ctx := t.Context()
	wrong := prefix + ":a-string"
	if err := rdb.Set(ctx, wrong, "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	const n = 500
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			key := fmt.Sprintf("%s:set:%d", prefix, i%7)
			if i%50 == 0 {
				key = wrong // ZADD on a string: WRONGTYPE
			}
			errs[i] = p.Do(ctx, func(ctx context.Context, pp redis.Cmdable) redis.Cmder {
				return pp.ZAdd(ctx, key, redis.Z{Score: float64(i), Member: fmt.Sprint(i)})
			})
		})
	}
	wg.Wait()
	for i, err := range errs {
		switch {
		case i%50 == 0 && (err == nil || !strings.Contains(err.Error(), "WRONGTYPE")):
			t.Errorf("command %d on a string: err %v, want WRONGTYPE", i, err)
		case i%50 != 0 && err != nil:
			t.Errorf("command %d: %v", i, err)
		}
	}
	var total int64
	for k := range 7 {
		c, err := rdb.ZCard(ctx, fmt.Sprintf("%s:set:%d", prefix, k)).Result()
		if err != nil {
			t.Fatal(err)
		}
		total += c
	}
	if want := int64(n - n/50); total != want {
		t.Errorf("%d members stored, want %d", total, want)
	}
}

// A Redis that does not answer fails every command of the pipeline.
func TestDoUnreachable(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // nothing listens there now
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
	defer func() { _ = rdb.Close() }()
	p := redispipe.New(rdb, 1, 16, 2*time.Second)
	defer p.Close()
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			err := p.Do(t.Context(), func(ctx context.Context, pp redis.Cmdable) redis.Cmder {
				return pp.Publish(ctx, "c", "m")
			})
			if err == nil {
				t.Error("publish to an unreachable Redis: no error")
			}
		})
	}
	wg.Wait()
}

func TestDoAfterClose(t *testing.T) {
	t.Parallel()
	rdb, prefix := client(t)
	p := redispipe.New(rdb, 1, 16, 5*time.Second)
	p.Close()
	p.Close() // idempotent
	err := p.Do(t.Context(), func(ctx context.Context, pp redis.Cmdable) redis.Cmder {
		return pp.Set(ctx, prefix+":k", "v", 0)
	})
	if !errors.Is(err, redispipe.ErrClosed) {
		t.Errorf("Do after Close: %v, want ErrClosed", err)
	}
	if n, _ := rdb.Exists(context.Background(), prefix+":k").Result(); n != 0 {
		t.Error("a command after Close reached Redis")
	}
}

func TestDoContextDone(t *testing.T) {
	t.Parallel()
	rdb, prefix := client(t)
	p := redispipe.New(rdb, 1, 16, 5*time.Second)
	defer p.Close()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := p.Do(ctx, func(ctx context.Context, pp redis.Cmdable) redis.Cmder {
		return pp.Set(ctx, prefix+":k", "v", 0)
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Do with a done context: %v, want context.Canceled", err)
	}
}
