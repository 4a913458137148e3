package admission

import (
	"sync"
	"sync/atomic"
)

// Counter counts what is held under each key (sockets of one address, one
// agent, one negotiation) and refuses more than a cap. The zero value is
// ready to use; it is safe for concurrent use.
type Counter struct {
	mu sync.Mutex
	n  map[string]int
}

// Acquire takes one under key if fewer than max are held (max <= 0: no
// cap). It returns the release function (call it exactly once; later calls
// do nothing) and true, or nil and false when the cap is reached.
func (c *Counter) Acquire(key string, max int) (release func(), ok bool) {
	if !c.take(key, max) {
		return nil, false
	}
	var once sync.Once
	return func() { once.Do(func() { c.give(key) }) }, true
}

// take takes one under key if fewer than max are held (max <= 0: no cap).
func (c *Counter) take(key string, max int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	if max > 0 && c.n[key] >= max {
		return false
	}
	c.n[key]++
	return true
}

// give gives back one that take took under key.
func (c *Counter) give(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n[key]--; c.n[key] <= 0 {
		delete(c.n, key)
	}
}

// Held is how many are held under key.
func (c *Counter) Held(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[key]
}

// Slot is one cap to take: Key in Counter, at most Max.
type Slot struct {
	Counter *Counter
	Key     string
	Max     int
}

// AcquireAll takes every slot or none: on the first refused it releases
// what it took and returns the index of the refused slot and false. The
// release function gives every slot back on its first call (later calls do
// nothing); it keeps slots, which the caller must not change. A socket
// holds its release for its life: two objects, not two for each slot.
func AcquireAll(slots ...Slot) (release func(), refused int, ok bool) {
	for i, s := range slots {
		if !s.Counter.take(s.Key, s.Max) {
			for _, t := range slots[:i] {
				t.Counter.give(t.Key)
			}
			return nil, i, false
		}
	}
	var done atomic.Bool
	return func() {
		if done.CompareAndSwap(false, true) {
			for _, s := range slots {
				s.Counter.give(s.Key)
			}
		}
	}, -1, true
}
