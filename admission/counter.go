package admission

import "sync"

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
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	if max > 0 && c.n[key] >= max {
		return nil, false
	}
	c.n[key]++
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.n[key]--; c.n[key] <= 0 {
				delete(c.n, key)
			}
		})
	}, true
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
// what it took and returns the index of the refused slot and false.
func AcquireAll(slots ...Slot) (release func(), refused int, ok bool) {
	releases := make([]func(), 0, len(slots))
	all := func() {
		for _, r := range releases {
			r()
		}
	}
	for i, s := range slots {
		r, ok := s.Counter.Acquire(s.Key, s.Max)
		if !ok {
			all()
			return nil, i, false
		}
		releases = append(releases, r)
	}
	return all, -1, true
}
