package pircan_test

import (
	"testing"
	"time"

	"github.com/venuehq/venue/pircan"
)

// On a server that sends no account id (a scripted one: the test network's
// InspIRCd sends inspircd.org/account-id), the bridge binds an account to
// the registration time NickServ INFO reports: the same registration keeps
// its agent; the name dropped and registered again (a new time) is
// account_changed on the wire, its agent suspended, not inherited
// (PIRCAN.md "An account registered again").
func TestReRegisteredAccountByRegistrationTime(t *testing.T) {
	t.Parallel()
	srv := scriptedBridge(t, "CASEMAPPING=rfc1459", func(c *pircan.Config) { c.RegistrationRecheck = -1 })
	srv.SetRegistered("ada", time.Date(2026, 10, 1, 9, 30, 0, 0, time.UTC))
	srv.Privmsg("ada", "ada", `PIRCAN/1 HELLO`)
	hello := scriptedReply(t, srv, "ada", "HELLO")
	srv.Privmsg("ada", "ada", `PIRCAN/1 WHOAMI`)
	if me := scriptedReply(t, srv, "ada", "WHOAMI"); me["agent_id"] != hello["agent_id"] {
		t.Fatalf("WHOAMI %v after HELLO %v", me, hello)
	}
	// Dropped; someone else registers the name.
	srv.SetRegistered("ada", time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC))
	srv.Privmsg("eve", "ada", `PIRCAN/1 WHOAMI`)
	if e := scriptedReply(t, srv, "eve", "ERROR"); e["code"] != pircan.CodeAccountChanged {
		t.Fatalf("the new registration's WHOAMI: %v, want account_changed", e)
	}
}
