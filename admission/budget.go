package admission

import (
	"sync"

	"golang.org/x/time/rate"
)

// Budgets hands out one token bucket per key (an agent in a negotiation), so
// that every socket of that key draws on the same budget: opening a second
// socket does not double the rate. A bucket lives while a socket holds it.
type Budgets struct {
	Rate  rate.Limit // tokens per second
	Burst int

	mu sync.Mutex
	m  map[string]*budget
}

type budget struct {
	lim  *rate.Limiter
	refs int
}

// Get returns key's limiter, creating it full, and the function that gives
// it back (call it once when the socket closes).
func (b *Budgets) Get(key string) (*rate.Limiter, func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[string]*budget{}
	}
	e := b.m[key]
	if e == nil {
		e = &budget{lim: rate.NewLimiter(b.Rate, b.Burst)}
		b.m[key] = e
	}
	e.refs++
	var once sync.Once
	return e.lim, func() {
		once.Do(func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			if e.refs--; e.refs <= 0 {
				delete(b.m, key)
			}
		})
	}
}
