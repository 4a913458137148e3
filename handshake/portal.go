package handshake

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"time"

	"github.com/venuehq/venue/wire"
)

// Limits of the owner portal's sign-in (PIRCAN.md "The owner portal").
const (
	CodeLifetime         = 10 * time.Minute
	SessionLifetime      = 12 * time.Hour
	LoginAttemptsPerHour = 10 // LOGIN per account
	SignInStartsPerHour  = 10 // codes shown per client address
	MaxBrowserChars      = 200
)

// Hit kinds counted in the store.
const (
	hitLogin       = "login"
	hitSignInStart = "signin_start"
)

// codeAlphabet has no vowels (no words) and no look-alikes.
const codeAlphabet = "BCDFGHJKLMNPQRSTVWXZ"

// Sign-in states of a browser (Portal.Status).
const (
	SignInPending  = "pending"   // showing its code, waiting for LOGIN
	SignInSignedIn = "signed_in" // approved, until ExpiresAt
	SignInExpired  = "expired"   // the code or the session ran out
	SignInEnded    = "ended"     // LOGOUT (or sign out) ended it
)

// Portal is the owner portal's sign-in over the handshake's store:
// a browser starts with a secret and a code; LOGIN with the code from the
// identified IRC account approves that browser for 12 hours; LOGOUT ends
// every session of the account. Nothing secret crosses IRC: the code only
// approves the browser that already holds the secret.
type Portal struct {
	Service *Service
}

// Started is a new sign-in: the Secret for the browser (a cookie; never
// shown), the Code it displays, valid until CodeExpiresAt.
type Started struct {
	Secret        string
	Code          string
	CodeExpiresAt time.Time
}

// Start begins a sign-in for a browser at address (its user agent is
// kept for the audit log, never shown over IRC). Errors: rate_limited (10 starts an
// hour per address: the REST route passes the venue's client key, an
// IPv6 client by its /64).
func (p *Portal) Start(ctx context.Context, address, browser string, now time.Time) (Started, error) {
	secret, code := newSecret(), newCode()
	si := SignIn{
		SecretHash: hashSecret(secret), Code: code, Address: address, Browser: truncate(strings.ReplaceAll(browser, "\x00", ""), MaxBrowserChars),
		CreatedAt: now, CodeExpiresAt: now.Add(CodeLifetime),
	}
	err := p.Service.Store.Atomically(ctx, []string{"address:" + address}, func(tx Tx) error {
		if n, err := tx.Hits(hitSignInStart, address, now.Add(-time.Hour)); err != nil {
			return err
		} else if n >= SignInStartsPerHour {
			return errorf(CodeRateLimited, "at most %d sign-ins an hour from one address", SignInStartsPerHour)
		}
		if err := tx.Hit(hitSignInStart, address, now); err != nil {
			return err
		}
		return tx.CreateSignIn(si)
	})
	if err != nil {
		return Started{}, err
	}
	return Started{Secret: secret, Code: code, CodeExpiresAt: si.CodeExpiresAt}, nil
}

// State is what a browser's secret stands for now.
type State struct {
	State     string    // SignInPending, SignInSignedIn, SignInExpired, SignInEnded
	Code      string    // while pending
	Account   string    // once signed in
	ExpiresAt time.Time // of the code while pending, of the session after
}

// Status tells the browser holding secret where its sign-in stands (the
// page polls it). Errors: unauthorized (no such sign-in).
func (p *Portal) Status(ctx context.Context, secret string, now time.Time) (State, error) {
	var si SignIn
	err := p.Service.Store.Atomically(ctx, nil, func(tx Tx) error {
		var err error
		si, err = tx.SignInBySecret(hashSecret(secret))
		return err
	})
	if errors.Is(err, ErrNotFound) {
		return State{}, errorf(wire.CodeUnauthorized, "no such sign-in: start again")
	}
	if err != nil {
		return State{}, err
	}
	return stateOf(si, now), nil
}

func stateOf(si SignIn, now time.Time) State {
	switch {
	case !si.EndedAt.IsZero():
		return State{State: SignInEnded, Account: si.Account}
	case si.Account == "" && now.Before(si.CodeExpiresAt):
		return State{State: SignInPending, Code: si.Code, ExpiresAt: si.CodeExpiresAt}
	case si.Account == "":
		return State{State: SignInExpired}
	case now.Before(si.ExpiresAt):
		return State{State: SignInSignedIn, Account: si.Account, ExpiresAt: si.ExpiresAt}
	}
	return State{State: SignInExpired, Account: si.Account}
}

// Owner returns the account the browser holding secret is signed in as.
// Errors: unauthorized (unknown, pending, expired or ended).
func (p *Portal) Owner(ctx context.Context, secret string, now time.Time) (string, error) {
	st, err := p.Status(ctx, secret, now)
	if err != nil {
		return "", err
	}
	if st.State != SignInSignedIn {
		return "", errorf(wire.CodeUnauthorized, "not signed in (%s)", st.State)
	}
	return st.Account, nil
}

// LoginResult is what LOGIN answers: the account signed in, the browser
// it approved (its user agent) and when that browser started, and when
// the session ends.
type LoginResult struct {
	Account   string
	Browser   string
	StartedAt time.Time
	ExpiresAt time.Time
}

// Login is the IRC verb LOGIN {"code"} from the identified account: it
// signs in the browser showing code as account for 12 hours. Codes are
// case-insensitive, the dash optional. Every attempt counts, good or bad.
// Errors: invalid_argument (no account, malformed code), rate_limited (10
// attempts an hour per account), not_authorized (an account whose agent
// has a confirmed named owner), not_found (no such code, or it expired,
// or it was used).
func (p *Portal) Login(ctx context.Context, account, code string, now time.Time) (LoginResult, error) {
	if account == "" {
		return LoginResult{}, errorf(CodeInvalidArgument, "LOGIN needs an identified account")
	}
	norm, ok := normalizeCode(code)
	var bound []string
	if p.Service.Accounts != nil {
		var err error
		if bound, err = p.Service.Accounts.AgentsOf(ctx, account); err != nil {
			return LoginResult{}, err
		}
	}
	var res LoginResult
	// A refused attempt counts too: the transaction commits its hit and
	// the refusal is returned after it.
	var refused error
	err := p.Service.Store.Atomically(ctx, []string{"account:" + account, "code:" + norm}, func(tx Tx) error {
		refused = nil
		if n, err := tx.Hits(hitLogin, account, now.Add(-time.Hour)); err != nil {
			return err
		} else if n >= LoginAttemptsPerHour {
			refused = errorf(CodeRateLimited, "at most %d sign-in attempts an hour", LoginAttemptsPerHour)
			return nil
		}
		if err := tx.Hit(hitLogin, account, now); err != nil {
			return err
		}
		if !ok {
			refused = errorf(CodeInvalidArgument, "code must look like BCDF-GHJK")
			return nil
		}
		// The agent's own account cannot sign in for an agent whose named
		// owner confirmed: only the owner does (PIRCAN.md "Owners").
		for _, id := range bound {
			if o, named, err := ownerOf(tx, id); err != nil {
				return err
			} else if named && o.Confirmed() && o.Account != account {
				refused = errorf(CodeNotAuthorized, "your agent %s has a confirmed owner: only its owner signs in to the portal", id)
				return nil
			}
		}
		si, err := tx.SignInByCode(norm)
		if errors.Is(err, ErrNotFound) || err == nil && (si.Account != "" || !now.Before(si.CodeExpiresAt) || !si.EndedAt.IsZero()) {
			refused = errorf(CodeNotFound, "no such code, or it expired or was used: open /owner again")
			return nil
		}
		if err != nil {
			return err
		}
		si.Account, si.ApprovedAt, si.ExpiresAt = account, now, now.Add(SessionLifetime)
		if err := tx.UpdateSignIn(si); err != nil {
			return err
		}
		res = LoginResult{Account: account, Browser: si.Browser, StartedAt: si.CreatedAt, ExpiresAt: si.ExpiresAt}
		return audit(tx, now, "owner:"+account, "login", si.Address, si.Browser)
	})
	if err == nil {
		err = refused
	}
	return res, err
}

// Logout ends every portal session of account (LOGOUT) and returns how
// many were open.
func (p *Portal) Logout(ctx context.Context, account string, now time.Time) (int, error) {
	if account == "" {
		return 0, errorf(CodeInvalidArgument, "LOGOUT needs an identified account")
	}
	var n int
	err := p.Service.Store.Atomically(ctx, []string{"account:" + account}, func(tx Tx) error {
		var err error
		if n, err = tx.EndSessions(account, now); err != nil {
			return err
		}
		return audit(tx, now, "owner:"+account, "logout", account, "")
	})
	return n, err
}

// SignOut ends the one sign-in of the browser holding secret (the page's
// sign-out button). Unknown secrets are ignored.
func (p *Portal) SignOut(ctx context.Context, secret string, now time.Time) error {
	return p.Service.Store.Atomically(ctx, nil, func(tx Tx) error {
		si, err := tx.SignInBySecret(hashSecret(secret))
		if errors.Is(err, ErrNotFound) || (err == nil && !si.EndedAt.IsZero()) {
			return nil
		}
		if err != nil {
			return err
		}
		si.EndedAt = now
		return tx.UpdateSignIn(si)
	})
}

// normalizeCode upper-cases code, drops spaces and dashes and checks it is
// 8 letters of the code alphabet; it returns it as XXXX-XXXX.
func normalizeCode(code string) (string, bool) {
	var b strings.Builder
	for _, r := range strings.ToUpper(code) {
		switch {
		case r == '-' || r == ' ':
		case strings.ContainsRune(codeAlphabet, r):
			b.WriteRune(r)
		default:
			return "", false
		}
	}
	s := b.String()
	if len(s) != 8 {
		return "", false
	}
	return s[:4] + "-" + s[4:], true
}

// newCode returns a random XXXX-XXXX code (20^8, about 2.6e10 codes).
func newCode() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	out := make([]byte, 0, 9)
	for i, c := range b {
		if i == 4 {
			out = append(out, '-')
		}
		out = append(out, codeAlphabet[int(c)%len(codeAlphabet)])
	}
	return string(out)
}

func newSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func hashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}
