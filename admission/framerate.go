package admission

import (
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// DefaultAbuseBurst is how many refused frames a connection may send beyond
// one a second before it is closed with 1008 (PROTOCOL.md "Limits and close
// codes").
const DefaultAbuseBurst = 20

// FrameRate is the frame rate of one connection, a lobby's or a room's,
// over any transport (PROTOCOL.md "Limits and close codes"): every frame in
// (and every WebSocket ping) draws on a token bucket of perSecond frames a
// second with bursts of burst; a frame over it is refused (the caller
// answers rate_limited), and every refusal draws on a second bucket of one
// a second with bursts of abuseBurst: once that is empty the caller closes
// the connection with 1008.
//
// The frame bucket may be replaced by one that several connections share
// ([FrameRate.Share] with a [Budgets] bucket), so that an agent's second
// socket in a negotiation does not double its rate. A FrameRate is safe
// for concurrent use.
type FrameRate struct {
	perSecond float64
	frames    atomic.Pointer[rate.Limiter]
	abuse     *rate.Limiter
	now       func() time.Time
}

// NewFrameRate returns a full FrameRate. abuseBurst <= 0 takes
// DefaultAbuseBurst; now is the clock the buckets refill on (nil: the wall
// clock).
func NewFrameRate(perSecond float64, burst, abuseBurst int, now func() time.Time) *FrameRate {
	if abuseBurst <= 0 {
		abuseBurst = DefaultAbuseBurst
	}
	if now == nil {
		now = time.Now
	}
	r := &FrameRate{perSecond: perSecond, abuse: rate.NewLimiter(1, abuseBurst), now: now}
	r.frames.Store(rate.NewLimiter(rate.Limit(perSecond), burst))
	return r
}

// Share makes the connection draw its frames from lim (a bucket several
// connections hold) instead of its own.
func (r *FrameRate) Share(lim *rate.Limiter) { r.frames.Store(lim) }

// Allow takes one frame. ok: within the rate. Otherwise the refusal is
// counted (Refuse) and closed reports that the connection is now to be
// closed with 1008.
func (r *FrameRate) Allow() (ok, closed bool) {
	if r.frames.Load().AllowN(r.now(), 1) {
		return true, false
	}
	return false, r.Refuse()
}

// Refuse counts one refused frame (over the rate, or one the connection may
// not send at all, such as an observer's). It reports whether refusals are
// now sustained: the caller closes the connection with 1008.
func (r *FrameRate) Refuse() (closed bool) { return !r.abuse.AllowN(r.now(), 1) }

// PerSecond is the frame rate, for the rate_limited message.
func (r *FrameRate) PerSecond() float64 { return r.perSecond }
