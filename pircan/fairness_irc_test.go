package pircan_test

import (
	"fmt"
	"testing"

	"github.com/venuehq/venue/internal/irctest"
	"github.com/venuehq/venue/pircan"
	"github.com/venuehq/venue/pircan/line"
)

// On the real network: a flooder whose queue is full loses its own oldest
// lines and is told how many (every reply is either received or counted
// in a DROPPED line), while another account's reply comes; a second
// registration from the same host in the hour is rate_limited.
func TestFloodDropsOwnOldestAndSaysSo(t *testing.T) {
	t.Parallel()
	n := irctest.Shared(t)
	b := startBridgeWith(t, n, false, nil, func(c *pircan.Config) {
		c.Pace = pircan.Pace{Burst: 1, PerSecond: 4, MaxQueued: 2000, PerRequester: 3}
		c.Limits = pircan.Limits{RegistrationsPerHost: 1}
	})
	id := irctest.RandHex(3)
	cs := agents(t, n, []string{"flood" + id, "calm" + id, "late" + id}, []bool{false, false, false})
	flood, calm, late := cs[0], cs[1], cs[2]
	const sent = 20
	for i := range sent {
		flood.Raw(fmt.Sprintf(`PRIVMSG %s :PIRCAN/1 ECHO {"text":"%d","id":"e%d"}`, b.nick, i, i))
	}
	calm.Ask(b.nick, `PIRCAN/1 ECHO {"text":"calm"}`, "ECHO")
	echoes, dropped := 0, 0
	for last := ""; last != fmt.Sprint("e", sent-1); {
		r := flood.Expect(b.nick)
		switch r.Verb {
		case "ECHO":
			echoes++
			last = r.Obj["re"].(string)
		case "DROPPED":
			dropped += int(r.Obj["dropped"].(float64))
		default:
			t.Fatalf("flood got %s", r.Raw)
		}
	}
	if dropped == 0 || echoes+dropped != sent {
		t.Fatalf("%d echoes received and %d said dropped, want some dropped and %d together", echoes, dropped, sent)
	}

	// Registrations per host: both agents connect from 127.0.0.1.
	calm.Ask(b.nick, `PIRCAN/1 HELLO`, "HELLO")
	if m := late.AskError(b.nick, `PIRCAN/1 HELLO {"id":"h"}`, line.CodeRateLimited); m["re"] != "h" {
		t.Fatalf("no re: %v", m)
	}
}

// On the real network: Anope's NickServ INFO tells the bridge the
// accounts were registered seconds ago, so with one young registration an
// hour the second fresh account's HELLO is registration_paused.
func TestYoungAccountsOverIRC(t *testing.T) {
	t.Parallel()
	n := irctest.Shared(t)
	b := startBridgeWith(t, n, false, nil, func(c *pircan.Config) {
		c.Limits = pircan.Limits{YoungRegistrations: 1, RegistrationsPerHost: 10}
	})
	id := irctest.RandHex(3)
	cs := agents(t, n, []string{"new1" + id, "new2" + id}, []bool{false, false})
	cs[0].Ask(b.nick, `PIRCAN/1 HELLO`, "HELLO")
	if m := cs[1].AskError(b.nick, `PIRCAN/1 HELLO {"id":"y"}`, line.CodeRegistrationPaused); m["re"] != "y" {
		t.Fatalf("no re: %v", m)
	}
}
