package pircan

import (
	"context"
	"testing"
	"time"
)

// TestRegistrationTimeWhenNoAccountID: on a server that sends no account
// id, the bridge binds an account name to the registration time NickServ
// INFO reports (PIRCAN.md "An account registered again"): the same time is
// the same registration; a name dropped and registered again (a new time)
// is account_changed once the cached time has aged out (regIDTTL); services
// that report nothing check nothing.
func TestRegistrationTimeWhenNoAccountID(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.h.reg = &regCache{ttl: regIDTTL}
	first := T0.Add(-30 * 24 * time.Hour)
	regAt := map[string]time.Time{"ada": first}
	asked := 0
	f.h.registeredAt = func(_ context.Context, account string) (time.Time, bool) {
		asked++
		at, ok := regAt[account]
		return at, ok
	}
	one(t, f.send(t, "ada", "ada", `PIRCAN/1 HELLO`), "HELLO")
	if asked == 0 {
		t.Fatal("INFO never asked: the registration was not bound")
	}
	asked = 0
	one(t, f.send(t, "ada", "ada", `PIRCAN/1 WHOAMI`), "WHOAMI")
	one(t, f.send(t, "ada", "ada", `PIRCAN/1 WHOAMI`), "WHOAMI")
	if asked != 0 {
		t.Fatalf("INFO asked %d times within %s of the last answer, want 0 (cached)", asked, regIDTTL)
	}

	// Dropped and registered again by someone else: a new time.
	regAt["ada"] = T0.Add(time.Minute)
	f.clock.Advance(regIDTTL + time.Second)
	wantError(t, f.send(t, "ada2", "ada", `PIRCAN/1 WHOAMI`), CodeAccountChanged)

	// Services that do not say: nothing to check, nothing refused.
	one(t, f.send(t, "bob", "bob", `PIRCAN/1 HELLO`), "HELLO")
	one(t, f.send(t, "bob", "bob", `PIRCAN/1 WHOAMI`), "WHOAMI")
}
