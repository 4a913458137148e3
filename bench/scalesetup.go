package bench

import (
	"context"
	"sync"
	"time"
)

// perPair is how many negotiations a brand and a bouncer take part in, set
// up one after another through their lobby sockets: two registrations, a
// grant and two lobby sockets per negotiation would cost the setup more
// than the rest of the dance (BENCHMARKS.md "Setup: what it costs").
const perPair = 10

// setupTries is how often a chain sets up a fresh pair after its pair
// failed (the venue busy past a lobby answer's 10 s, a socket dropped),
// and how often a party socket is dialled before its negotiation is given
// up.
const setupTries = 3

// setup sets up the worker's negotiations, w.Setup pairs at a time, and
// starts each one's readers and driver as soon as both its sockets are
// open (the turn clock runs from the bouncer's accept). negs[i] stays nil
// for a negotiation that could not be set up (counted by setupFailed).
func (r *scaleRun) setup(ctx context.Context, aud string, negs []*scaleNeg, drivers *sync.WaitGroup) error {
	var opening sync.WaitGroup
	defer opening.Wait()
	groups := (r.w.Count + perPair - 1) / perPair
	return parallel(ctx, groups, r.w.Setup, func(p int) error {
		r.chain(ctx, aud, p*perPair, min((p+1)*perPair, r.w.Count), negs, &opening, drivers)
		return nil
	})
}

// chain sets up negotiations lo..hi-1 through one pair's lobby sockets,
// with a fresh pair after a failure (at most setupTries pairs). The party
// sockets of each negotiation are opened while the chain goes on with the
// next one.
func (r *scaleRun) chain(ctx context.Context, aud string, lo, hi int, negs []*scaleNeg, opening, drivers *sync.WaitGroup) {
	i := lo
	for try := 0; i < hi && try < setupTries && ctx.Err() == nil; try++ {
		base := r.w.Nodes[(r.w.Offset+i)%len(r.w.Nodes)]
		ag, err := setupAgents(ctx, base, aud, r.w.Offset+i)
		if err != nil {
			r.setupError(err)
			continue
		}
		for ; i < hi; i++ {
			negID, err := ag.negotiate()
			if err != nil { // the lobby sockets may be out of step now: a fresh pair
				r.setupError(err)
				break
			}
			n := &scaleNeg{id: negID, g: r.w.Offset + i, acked: map[int64]string{}}
			keys := [2]string{ag.brandKey, ag.bouncerKey}
			opening.Add(1)
			go func(i int) {
				defer opening.Done()
				if r.open(ctx, n, keys) {
					negs[i] = n
					drivers.Add(1)
					go func() { defer drivers.Done(); r.drive(ctx, n) }()
				}
			}(i)
		}
		ag.close()
	}
	if i < hi {
		r.setupFailed(hi - i)
	}
}

// open dials both party sockets of n at once (each up to setupTries times)
// and starts their readers; false, with both closed, if either could not
// be opened.
func (r *scaleRun) open(ctx context.Context, n *scaleNeg, keys [2]string) bool {
	var wg sync.WaitGroup
	var errs [2]error
	for who, key := range keys {
		s := &scaleSide{neg: n, who: who, key: key, node: (n.g + who) % len(r.w.Nodes), acks: make(chan ackSeen, 4), resume: make(chan struct{})}
		n.sides[who] = s
		wg.Go(func() {
			for try := 0; try < setupTries; try++ {
				if errs[who] = r.dial(ctx, s, -1); errs[who] == nil || ctx.Err() != nil {
					return
				}
				sleepCtx(ctx, time.Duration(try+1)*500*time.Millisecond)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			for _, s := range n.sides {
				if s.ws != nil {
					_ = s.ws.Close()
				}
			}
			r.setupError(err)
			r.setupFailed(1)
			return false
		}
	}
	for _, s := range n.sides {
		go r.read(ctx, s)
	}
	return true
}

// setupFailed counts n negotiations that could not be set up.
func (r *scaleRun) setupFailed(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed += n
}

// setupError counts a setup step that failed, by its error's first 60
// characters.
func (r *scaleRun) setupError(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs["setup: "+err.Error()[:min(len(err.Error()), 60)]]++
}
