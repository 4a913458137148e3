package pircan

import (
	"context"
	"time"

	"github.com/venuehq/venue/pircan/line"
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
	// Identified: requests per Window of all identified accounts together
	// (600 a minute), so throwaway accounts cannot flood the store.
	Identified int
	// LinesPerRequest: a request counts once more against PerRequester for
	// every LinesPerRequest lines of its reply past the first (5: a FIND
	// of 10 results and its FIND-END counts 3).
	LinesPerRequest int
	// UnidentifiedPerHost: requests per Window of unidentified callers
	// from one host (the host part of the message's source), whatever
	// their nicks (20 a minute).
	UnidentifiedPerHost int
	// RegistrationsPerHost: new agents per RegistrationWindow from one
	// host (5 an hour), counted before the network-wide Registrations, so
	// one host's throwaway accounts do not pause registration for others.
	RegistrationsPerHost int
	// YoungRegistrations: new agents per RegistrationWindow, network-wide,
	// of accounts registered less than YoungAccount ago where the services
	// report it (NickServ INFO): 10 an hour, of accounts under a day old,
	// counted before Registrations, so fresh throwaway accounts cannot
	// pause registration for established ones.
	YoungRegistrations int
	YoungAccount       time.Duration
}

// DefaultLimits are the numbers of PIRCAN.md.
var DefaultLimits = Limits{PerRequester: 20, Unidentified: 60, Window: time.Minute,
	Registrations: 30, RegistrationWindow: time.Hour,
	Identified: 600, LinesPerRequest: 5, UnidentifiedPerHost: 20, RegistrationsPerHost: 5,
	YoungRegistrations: 10, YoungAccount: 24 * time.Hour}

// withDefaults fills the zero fields of l from DefaultLimits.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	fill := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	fill(&l.PerRequester, d.PerRequester)
	fill(&l.Unidentified, d.Unidentified)
	fill(&l.Registrations, d.Registrations)
	fill(&l.Identified, d.Identified)
	fill(&l.LinesPerRequest, d.LinesPerRequest)
	fill(&l.UnidentifiedPerHost, d.UnidentifiedPerHost)
	fill(&l.RegistrationsPerHost, d.RegistrationsPerHost)
	fill(&l.YoungRegistrations, d.YoungRegistrations)
	if l.YoungAccount <= 0 {
		l.YoungAccount = d.YoungAccount
	}
	if l.Window <= 0 {
		l.Window = d.Window
	}
	if l.RegistrationWindow <= 0 {
		l.RegistrationWindow = d.RegistrationWindow
	}
	return l
}

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

// window is one rate window: its key in State and its limit.
type window struct {
	key   string
	limit int
}

// request counts one request of account (case-folded; "" when not
// identified) or, without one, of nick (case-folded) and host. The
// windows are counted in turn, each only when the ones before allowed
// it: the requester's own, then its host's (unidentified), then the
// ceiling of all identified or all unidentified callers together.
func (l limiter) request(ctx context.Context, account, nick, host string, now time.Time) (verdict, error) {
	start := now.UTC().Truncate(l.l.Window)
	checks := []window{{"acct:" + account, l.l.PerRequester}, {"identified", l.l.Identified}}
	if account == "" {
		checks = []window{{"nick:" + nick, l.l.PerRequester}}
		if host != "" {
			checks = append(checks, window{"host:" + host, l.l.UnidentifiedPerHost})
		}
		checks = append(checks, window{"unidentified", l.l.Unidentified})
	}
	for _, c := range checks {
		n, err := l.st.Hit(ctx, c.key, start)
		if err != nil {
			return allow, err
		}
		if v := judge(n, c.limit); v != allow {
			return v, nil
		}
	}
	return allow, nil
}

// charge counts a reply of lines lines against its requester (account,
// or nick when "", as in request): once more for every LinesPerRequest
// lines past the first.
func (l limiter) charge(ctx context.Context, account, nick string, lines int, now time.Time) error {
	if l.l.LinesPerRequest <= 0 {
		return nil
	}
	extra := (lines - 1) / l.l.LinesPerRequest
	if extra <= 0 {
		return nil
	}
	key := "acct:" + account
	if account == "" {
		key = "nick:" + nick
	}
	_, err := l.st.Charge(ctx, key, now.UTC().Truncate(l.l.Window), extra)
	return err
}

// registration counts one new registration from host ("" when unknown)
// of an account registered at registered (zero: unknown); "" when
// allowed, else the code: rate_limited when the host is over
// RegistrationsPerHost, registration_paused when young accounts are over
// YoungRegistrations or the network is over Registrations. A refusal
// leaves the windows after it untouched.
func (l limiter) registration(ctx context.Context, host string, registered, now time.Time) (string, error) {
	start := now.UTC().Truncate(l.l.RegistrationWindow)
	if host != "" {
		n, err := l.st.Hit(ctx, "registrations:host:"+host, start)
		if err != nil {
			return "", err
		}
		if n > l.l.RegistrationsPerHost {
			return line.CodeRateLimited, nil
		}
	}
	if !registered.IsZero() && now.Sub(registered) < l.l.YoungAccount {
		n, err := l.st.Hit(ctx, "registrations:young", start)
		if err != nil {
			return "", err
		}
		if n > l.l.YoungRegistrations {
			return line.CodeRegistrationPaused, nil
		}
	}
	n, err := l.st.Hit(ctx, "registrations", start)
	if err != nil {
		return "", err
	}
	if n > l.l.Registrations {
		return line.CodeRegistrationPaused, nil
	}
	return "", nil
}
