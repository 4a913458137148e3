package pircan

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/venuehq/venue/pircan/line"
)

// sendFrom is f.send from a host.
func (f *fixture) sendFrom(t *testing.T, nick, account, host, text string) []reply {
	t.Helper()
	in := Incoming{Nick: nick, NickKey: Fold("rfc1459", nick), Account: account, AccountKey: Fold("rfc1459", account), Host: host, Text: text}
	var out []reply
	for _, o := range f.h.handle(context.Background(), in) {
		rest := strings.TrimPrefix(o.Params[1], "PIRCAN/1 ")
		verb, js, _ := strings.Cut(rest, " ")
		var m map[string]any
		_ = json.Unmarshal([]byte(js), &m)
		out = append(out, reply{verb: verb, obj: m, raw: o.Params[1]})
	}
	return out
}

// A requester's queue holds PerRequester lines: past it its own oldest go,
// another's lines stay, and it hears how many it lost before its next line.
func TestPacerCapsEachRequester(t *testing.T) {
	t.Parallel()
	p := newPacer(nil, Pace{Burst: 1, PerSecond: 1, MaxQueued: 100, PerRequester: 5})
	p.push("acct:victim", notice("v", "v0"))
	dropped := 0
	for i := range 12 {
		dropped += p.push("acct:flood", notice("f", fmt.Sprintf("f%d", i)))
	}
	if dropped != 7 {
		t.Fatalf("dropped %d of the flood's 12 lines, want 7", dropped)
	}
	var got []string
	for {
		_, o, ok := p.popReady()
		if !ok {
			break
		}
		got = append(got, o.Params[0]+":"+o.Params[1])
	}
	want := []string{"v:v0",
		`f:PIRCAN/1 DROPPED {"dropped":7,"note":"Lines for you were dropped: too many were waiting. Ask again with a smaller limit."}`,
		"f:f7", "f:f8", "f:f9", "f:f10", "f:f11"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("sent\n%q\nwant\n%q", got, want)
	}
}

// When the whole queue is full, the longest queue loses its oldest line,
// not the newcomer: a victim's one reply is never the one dropped.
func TestPacerFullQueueDropsFromTheLongest(t *testing.T) {
	t.Parallel()
	p := newPacer(nil, Pace{Burst: 1, PerSecond: 1, MaxQueued: 6, PerRequester: 6})
	for i := range 4 {
		p.push("acct:a", notice("a", fmt.Sprintf("a%d", i)))
	}
	p.push("acct:b", notice("b", "b0"), notice("b", "b1"))
	if d := p.push("acct:victim", notice("v", "v0")); d != 1 {
		t.Fatalf("dropped %d, want 1", d)
	}
	var got []string
	for {
		_, o, ok := p.popReady()
		if !ok {
			break
		}
		got = append(got, o.Params[1])
	}
	joined := strings.Join(got, "|")
	if strings.Contains(joined, "a0") || !strings.Contains(joined, "v0") || !strings.Contains(joined, "a1") || !slices0(got, `PIRCAN/1 DROPPED {"dropped":1,`) {
		t.Fatalf("sent %q", got)
	}
}

func slices0(got []string, prefix string) bool {
	for _, s := range got {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

// A list counts once more for every 5 lines past the first: 4 FINDs of 10
// results (11 lines, 3 each) use 12 of the 20 a minute.
func TestListsChargedByLines(t *testing.T) {
	t.Parallel()
	f := setup(t)
	one(t, f.send(t, "lister", "lister", `PIRCAN/1 HELLO {"capabilities":["x"]}`), "HELLO")
	for i := range 11 {
		one(t, f.send(t, fmt.Sprint("n", i), fmt.Sprint("acct", i), `PIRCAN/1 HELLO {"capabilities":["x"]}`), "HELLO")
	}
	f.clock.Advance(time.Minute) // a fresh window: HELLO counted 1
	for i := range 6 {
		rs := f.send(t, "lister", "lister", `PIRCAN/1 FIND {"capability":"x","limit":10}`)
		if len(rs) != 11 {
			t.Fatalf("FIND %d: %d lines", i, len(rs))
		}
	}
	// 6 × 3 = 18 counted: two more requests, then rate_limited.
	one(t, f.send(t, "lister", "lister", `PIRCAN/1 ECHO`), "ECHO")
	one(t, f.send(t, "lister", "lister", `PIRCAN/1 ECHO`), "ECHO")
	wantError(t, f.send(t, "lister", "lister", `PIRCAN/1 ECHO`), line.CodeRateLimited)
}

// All identified accounts together have a ceiling; unidentified callers
// from one host share one budget whatever their nicks.
func TestCeilingsTogether(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.h.lim.l.Identified = 30
	served := 0
	for n := range 3 {
		for range 15 {
			if rs := f.send(t, fmt.Sprint("t", n), fmt.Sprint("throwaway", n), `PIRCAN/1 ECHO`); len(rs) == 1 && rs[0].verb == "ECHO" {
				served++
			}
		}
	}
	if served != 30 {
		t.Fatalf("served %d identified requests together, want 30", served)
	}
	f.clock.Advance(time.Minute)
	served = 0
	for n := range 4 {
		for range 10 {
			if rs := f.sendFrom(t, fmt.Sprint("anon", n), "", "one.example", `PIRCAN/1 ECHO`); len(rs) == 1 && rs[0].verb == "ECHO" {
				served++
			}
		}
	}
	if served != 20 {
		t.Fatalf("served %d requests of one host's 4 nicks, want 20", served)
	}
	one(t, f.sendFrom(t, "anon", "", "other.example", `PIRCAN/1 ECHO`), "ECHO") // another host is served
}

// One host registers RegistrationsPerHost agents an hour; past it HELLO is
// rate_limited and the network-wide count is not touched, so another
// host still registers.
func TestRegistrationsPerHost(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.h.lim.l.RegistrationsPerHost = 2
	f.h.lim.l.Registrations = 3
	one(t, f.sendFrom(t, "a", "a", "farm.example", `PIRCAN/1 HELLO`), "HELLO")
	one(t, f.sendFrom(t, "b", "b", "farm.example", `PIRCAN/1 HELLO`), "HELLO")
	for _, n := range []string{"c", "d", "e"} {
		rs := f.sendFrom(t, n, n, "farm.example", `PIRCAN/1 HELLO {"id":"r"}`)
		if len(rs) != 1 || rs[0].obj["code"] != line.CodeRateLimited || rs[0].obj["re"] != "r" {
			t.Fatalf("HELLO past the host's limit: %+v", rs)
		}
	}
	if m := one(t, f.sendFrom(t, "x", "x", "home.example", `PIRCAN/1 HELLO`), "HELLO"); m["new"] != true {
		t.Fatalf("another host was paused: %v", m)
	}
	wantError(t, f.sendFrom(t, "y", "y", "home2.example", `PIRCAN/1 HELLO`), line.CodeRegistrationPaused)
}

func TestParseRegistered(t *testing.T) {
	t.Parallel()
	at, ok := parseRegistered("Registered: Dec 03 11:44:58 2026 UTC (1 second ago)")
	if !ok || !at.Equal(time.Date(2026, 12, 3, 11, 44, 58, 0, time.UTC)) {
		t.Fatalf("%v %v", at, ok)
	}
	if _, ok := parseRegistered("   Time registered: Nov 30 09:00:00 2026 UTC (3 days ago)"); !ok {
		t.Fatal("Time registered: not read")
	}
	for _, bad := range []string{"Account: x", "Registered: yesterday", ""} {
		if _, ok := parseRegistered(bad); ok {
			t.Fatalf("%q read as a time", bad)
		}
	}
}

// Accounts the services say are under a day old register YoungRegistrations
// an hour together, before the network-wide limit; older accounts, and
// those whose age is unknown, are not held by it.
func TestYoungAccountsRegistrations(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.h.lim.l.YoungRegistrations = 1
	ages := map[string]time.Duration{"young1": time.Hour, "young2": time.Minute, "old": 30 * 24 * time.Hour}
	f.h.registeredAt = func(_ context.Context, account string) (time.Time, bool) {
		d, ok := ages[account]
		return f.clock.Now().Add(-d), ok
	}
	one(t, f.send(t, "young1", "young1", `PIRCAN/1 HELLO`), "HELLO")
	wantError(t, f.send(t, "young2", "young2", `PIRCAN/1 HELLO`), line.CodeRegistrationPaused)
	one(t, f.send(t, "old", "old", `PIRCAN/1 HELLO`), "HELLO")
	one(t, f.send(t, "unknown", "unknown", `PIRCAN/1 HELLO`), "HELLO")
	if n, _ := f.st.Hit(context.Background(), "registrations", T0); n != 4 {
		t.Fatalf("network-wide count %d, want 3 counted (+1 this hit)", n)
	}
}
