package pircan

import (
	"context"
	"time"
)

// Limits are the rate limits of PIRCAN.md "Limits": fixed windows
// counted in State, so a restart does not reset them.
type Limits struct {
	// PerRequester: requests per Window per account, or per nick when not
	// identified (20 a minute).
	PerRequester int
	// Unidentified: requests per Window of all unidentified callers
	// together (60 a minute); nick changes do not reset it.
	Unidentified int
	// Window is the rate limits' window (a minute).
	Window time.Duration
	// Registrations: new agents per RegistrationWindow, network-wide (30
	// an hour); past it HELLO answers registration_paused.
	Registrations      int
	RegistrationWindow time.Duration
}

// DefaultLimits are the numbers of PIRCAN.md.
var DefaultLimits = Limits{PerRequester: 20, Unidentified: 60, Window: time.Minute,
	Registrations: 30, RegistrationWindow: time.Hour}

// verdict of a request against the limits.
type verdict int

const (
	allow       verdict = iota
	refuseOnce          // answer rate_limited: the first refusal of the window
	refuseQuiet         // stay silent until the window passes
)

func judge(n, limit int) verdict {
	switch {
	case n <= limit:
		return allow
	case n == limit+1:
		return refuseOnce
	default:
		return refuseQuiet
	}
}

// limiter applies Limits on a State.
type limiter struct {
	l  Limits
	st State
}

// request counts one request of account (case-folded; "" when not
// identified) or, without one, of nick (case-folded).
func (l limiter) request(ctx context.Context, account, nick string, now time.Time) (verdict, error) {
	start := now.UTC().Truncate(l.l.Window)
	if account != "" {
		n, err := l.st.Hit(ctx, "acct:"+account, start)
		if err != nil {
			return allow, err
		}
		return judge(n, l.l.PerRequester), nil
	}
	n, err := l.st.Hit(ctx, "nick:"+nick, start)
	if err != nil {
		return allow, err
	}
	if v := judge(n, l.l.PerRequester); v != allow {
		return v, nil
	}
	n, err = l.st.Hit(ctx, "unidentified", start)
	if err != nil {
		return allow, err
	}
	return judge(n, l.l.Unidentified), nil
}

// registration counts one new registration; false when paused.
func (l limiter) registration(ctx context.Context, now time.Time) (bool, error) {
	n, err := l.st.Hit(ctx, "registrations", now.UTC().Truncate(l.l.RegistrationWindow))
	if err != nil {
		return false, err
	}
	return n <= l.l.Registrations, nil
}
