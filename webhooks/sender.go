package webhooks

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/venuehq/venue/clock"
)

// Poll is how often a Sender looks for new events and due deliveries
// without being woken.
const Poll = time.Second

// Batch is the most deliveries one pass claims; they are sent at once.
const Batch = 32

// Sender delivers the queued deliveries; every node runs one on the
// shared Store. Time is Clock's (the venue clock; a fake in tests): the
// retry delays and the 10 s answer timeout are measured on it.
type Sender struct {
	Store  Store
	Clock  clock.Clock
	Client *http.Client // Guard.Client()
	Log    *slog.Logger

	wake chan struct{}
	once sync.Once
}

func (s *Sender) init() { s.once.Do(func() { s.wake = make(chan struct{}, 1) }) }

// Wake asks Run for a pass now (events were appended on this node); it
// never blocks.
func (s *Sender) Wake() {
	s.init()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// WakeGap is the least time between two passes a wake starts (real time,
// not the venue clock: it only paces the store's queries under a stream
// of appends, and wakes in between are folded into the next pass).
const WakeGap = 50 * time.Millisecond

// Run makes a pass (Step) every Poll, and when woken, until ctx is done.
func (s *Sender) Run(ctx context.Context) error {
	s.init()
	for {
		began := time.Now()
		s.Step(ctx)
		t := s.Clock.NewTimer(Poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-s.wake:
			t.Stop()
			if wait := WakeGap - time.Since(began); wait > 0 {
				gap := time.NewTimer(wait)
				select {
				case <-ctx.Done():
					gap.Stop()
					return ctx.Err()
				case <-gap.C:
				}
			}
		case <-t.C():
		}
	}
}

// Step makes one pass: it queues the deliveries of new events, then
// claims the due ones and attempts them all at once, and returns when
// each attempt is recorded (or ctx is done: a stopped node records
// nothing, and what it held is due again after Lease). It returns how
// many attempts it made.
func (s *Sender) Step(ctx context.Context) int {
	log := s.Log
	if log == nil {
		log = slog.Default()
	}
	now := s.Clock.Now()
	if _, err := s.Store.Feed(ctx, now); err != nil && ctx.Err() == nil {
		log.Warn("webhooks: feed", "err", err)
	}
	ds, err := s.Store.Claim(ctx, now, Lease, Batch)
	if err != nil {
		if ctx.Err() == nil {
			log.Warn("webhooks: claim", "err", err)
		}
		return 0
	}
	var wg sync.WaitGroup
	for _, d := range ds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, ok := s.attempt(ctx, d)
			if !ok {
				return
			}
			if err := s.Store.Record(context.WithoutCancel(ctx), a); err != nil {
				log.Warn("webhooks: record", "agent_id", d.AgentID, "event_id", d.Event.ID, "err", err)
			}
		}()
	}
	wg.Wait()
	return len(ds)
}

// attempt POSTs one delivery and judges the answer; ok false when ctx
// ended first (nothing to record).
func (s *Sender) attempt(ctx context.Context, d Delivery) (Attempt, bool) {
	body, _ := d.Event.MarshalJSON()
	now := s.Clock.Now()
	a := Attempt{AgentID: d.AgentID, EventID: d.Event.ID, EventType: d.Event.Type, N: d.Attempts, At: now, URL: d.URL}

	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	timer := s.Clock.NewTimer(Timeout)
	defer timer.Stop()
	timedOut := make(chan struct{})
	go func() {
		select {
		case <-timer.C():
			close(timedOut)
			cancel()
		case <-rctx.Done():
		}
	}()

	req, err := http.NewRequestWithContext(rctx, http.MethodPost, d.URL, bytes.NewReader(body))
	if err == nil {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("User-Agent", "venue-webhooks/1")
		req.Header.Set("webhook-id", d.Event.ID)
		req.Header.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
		req.Header.Set("webhook-signature", Sign(d.Secret, d.Event.ID, now, body))
		var resp *http.Response
		resp, err = s.Client.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
			a.Status = resp.StatusCode
		}
	}
	cancel()
	select {
	case <-timedOut:
		if a.Status == 0 {
			err = context.DeadlineExceeded
		}
	default:
		if ctx.Err() != nil {
			return a, false
		}
	}
	switch {
	case a.Status >= 200 && a.Status < 300:
		a.Result = ResultDelivered
		return a, true
	case a.Status == http.StatusGone:
		a.Result = ResultDisabled
		return a, true
	case err != nil && a.Status == 0:
		a.Error = describe(err)
	}
	if wait, ok := delay(a.N); ok {
		a.Result, a.Next = ResultRetrying, s.Clock.Now().Add(wait) // from the answer (or the timeout)
	} else {
		a.Result = ResultFailed
	}
	return a, true
}
