package redisbus

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/venuehq/venue/internal/redispipe"
)

// Publishes are pipelined (internal/redispipe): one write and one read for
// tens of PUBLISHes when a node is busy, a lone PUBLISH when it is not. A
// caller's publishes keep their order (each waits for its own), which is
// all the venue relies on.

const (
	publishers  = 4   // pipelines in flight at once
	pipelineMax = 256 // PUBLISHes in one pipeline
)

var errBusClosed = redispipe.ErrClosed

func (b *Bus) startPublishers() {
	b.pub = redispipe.New(b.rdb, publishers, pipelineMax, 10*time.Second)
}

// stopPublishers answers what is queued with an error and waits for the
// pipelines in flight.
func (b *Bus) stopPublishers() { b.pub.Close() }

// publish queues one PUBLISH and waits for Redis's answer (or ctx).
func (b *Bus) publish(ctx context.Context, channel string, data []byte) error {
	if err := b.deliverLocal(ctx, channel, data); err != nil {
		return err
	}
	data = b.tag(data)
	return b.pub.Do(ctx, func(ctx context.Context, p redis.Cmdable) redis.Cmder {
		return p.Publish(ctx, channel, data)
	})
}
