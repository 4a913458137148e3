package redisbus

import (
	"context"
	"sync"
	"time"
)

// WatchRefresh is how often Watched asks Redis again (PUBSUB NUMSUB) how
// many subscribers the topics it was asked about have across the nodes.
const WatchRefresh = time.Second

// watch is Watched's view of other nodes' subscriptions.
type watch struct {
	mu      sync.Mutex
	counts  map[string]int64 // channel -> subscribers Redis counted; absent: not asked yet
	started bool
	ctx     context.Context // cancelled by Close
	cancel  func()
	wg      sync.WaitGroup // the refresher
}

func newWatch() *watch {
	ctx, cancel := context.WithCancel(context.Background())
	return &watch{ctx: ctx, cancel: cancel}
}

// close stops the refresher and waits for it.
func (w *watch) close() {
	w.mu.Lock()
	w.cancel()
	w.mu.Unlock()
	w.wg.Wait()
}

// Watched implements bus.Watcher: whether a message published on topic
// now would reach a subscriber. This node's own subscriptions count at
// once; other nodes' as Redis counted them (PUBSUB NUMSUB) at most
// WatchRefresh ago, so a subscription made on another node may miss up to
// that long of messages. Until Redis has answered for the topic, or while
// it fails, the answer is true: publishing is never skipped on a guess.
func (b *Bus) Watched(topic string) bool {
	ch := b.prefix + topic
	b.mu.Lock()
	local := len(b.topics[ch]) > 0
	b.mu.Unlock()
	if local {
		return true
	}
	w := b.watch
	w.mu.Lock()
	defer w.mu.Unlock()
	n, ok := w.counts[ch]
	if !ok {
		if w.counts == nil {
			w.counts = map[string]int64{}
		}
		w.counts[ch] = -1
		n = -1
	}
	if !w.started && w.ctx.Err() == nil {
		w.started = true
		w.wg.Add(1)
		go b.refreshWatch()
	}
	return n != 0
}

// refreshWatch asks Redis for the subscriber counts of every asked topic
// every WatchRefresh until Close.
func (b *Bus) refreshWatch() {
	defer b.watch.wg.Done()
	t := time.NewTicker(WatchRefresh)
	defer t.Stop()
	for {
		b.askWatch()
		select {
		case <-b.watch.ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (b *Bus) askWatch() {
	w := b.watch
	w.mu.Lock()
	chans := make([]string, 0, len(w.counts))
	for ch := range w.counts {
		chans = append(chans, ch)
	}
	w.mu.Unlock()
	ctx, cancel := context.WithTimeout(w.ctx, b.timeout)
	defer cancel()
	counts, err := b.rdb.PubSubNumSub(ctx, chans...).Result()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, ch := range chans {
		if n, ok := counts[ch]; ok && err == nil {
			w.counts[ch] = n
		} else {
			w.counts[ch] = -1 // unknown: publish
		}
	}
}
