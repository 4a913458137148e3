package pircan

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/venuehq/venue/clock"
	"github.com/venuehq/venue/directory"
	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/pircan/line"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/store/memory"
)

// T0 starts a minute and an hour, so windows begin with the test.
var T0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

type fixture struct {
	h     *handler
	clock *clock.Fake
	store *memory.Store
	st    *MemoryState
}

func setup(t testing.TB) *fixture {
	t.Helper()
	c := clock.NewFake(T0)
	s := memory.New()
	st := NewMemoryState()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	h := &handler{dir: &directory.Service{Store: s, Now: c.Now}, st: st, lim: limiter{l: DefaultLimits, st: st},
		clock: c, log: log, docsURL: "https://example.org/PIRCAN.md", m: newMetrics(nil)}
	return &fixture{h: h, clock: c, store: s, st: st}
}

// reply is one parsed reply line.
type reply struct {
	verb string
	obj  map[string]any
	raw  string
}

// send makes a request from nick (account "" : not identified) and parses
// every reply, checking each is a NOTICE to nick and a valid line.
func (f *fixture) send(t *testing.T, nick, account, text string) []reply {
	t.Helper()
	in := Incoming{Nick: nick, NickKey: Fold("rfc1459", nick), Account: account, AccountKey: Fold("rfc1459", account), Text: text}
	var out []reply
	for _, o := range f.h.handle(context.Background(), in) {
		if o.Sent != nil {
			o.Sent() // as the pacer does once the line went
		}
		if o.Command == "MODE" {
			out = append(out, reply{verb: "MODE", raw: strings.Join(o.Params, " ")})
			continue
		}
		if o.Command != "NOTICE" || o.Params[0] != nick {
			t.Fatalf("not a NOTICE to %s: %+v", nick, o)
		}
		s := o.Params[1]
		if strings.HasPrefix(s, "PIRCAN/1 ") {
			if !line.Valid(s, line.MaxReplyBytes) {
				t.Fatalf("invalid reply line %q", s)
			}
			rest := strings.TrimPrefix(s, "PIRCAN/1 ")
			verb, js, _ := strings.Cut(rest, " ")
			var m map[string]any
			if err := json.Unmarshal([]byte(js), &m); err != nil {
				t.Fatal(err)
			}
			out = append(out, reply{verb: verb, obj: m, raw: s})
		} else {
			out = append(out, reply{verb: "TEXT", raw: s})
		}
	}
	return out
}

func one(t *testing.T, rs []reply, verb string) map[string]any {
	t.Helper()
	if len(rs) != 1 || rs[0].verb != verb {
		t.Fatalf("want one %s, got %+v", verb, rs)
	}
	return rs[0].obj
}

func wantError(t *testing.T, rs []reply, code string) map[string]any {
	t.Helper()
	m := one(t, rs, "ERROR")
	if m["code"] != code {
		t.Fatalf("want error %s, got %v", code, m)
	}
	return m
}

func TestHelloWhoamiFind(t *testing.T) {
	t.Parallel()
	f := setup(t)
	// Not identified: not_identified, with re.
	m := wantError(t, f.send(t, "alice", "", `PIRCAN/1 HELLO {"id":"r1"}`), line.CodeNotIdentified)
	if m["re"] != "r1" || m["verb"] != "HELLO" {
		t.Fatalf("error %v", m)
	}
	// FIND before HELLO: not_registered.
	wantError(t, f.send(t, "alice", "Alice", `PIRCAN/1 FIND`), line.CodeNotRegistered)

	m = one(t, f.send(t, "alice", "Alice", `PIRCAN/1 HELLO {"name":"Hazmat Agent","description":"Chemical release assessment","capabilities":["hazmat","chemistry"],"card_url":"https://example.org/card.json","id":"r2"}`), "HELLO")
	if m["new"] != true || m["name"] != "Hazmat Agent" || m["re"] != "r2" || !strings.HasPrefix(m["agent_id"].(string), "agt_") {
		t.Fatalf("HELLO %v", m)
	}
	id := m["agent_id"]
	// Repeat, from another nick of the same account in another case: same agent.
	m = one(t, f.send(t, "alice_", "ALICE", `pircan/1 hello`), "HELLO")
	if m["new"] != false || m["agent_id"] != id {
		t.Fatalf("repeat HELLO %v", m)
	}
	m = one(t, f.send(t, "alice_", "alice", `PIRCAN/1 WHOAMI`), "WHOAMI")
	if m["agent_id"] != id || m["owner"] != nil || fmt.Sprint(m["capabilities"]) != "[hazmat chemistry]" {
		t.Fatalf("WHOAMI %v", m)
	}
	// A venue agent is in the same directory.
	must(t, f.store.CreateAgent(context.Background(), store.Agent{ID: "agt_venue", Name: "Chem Bouncer", Role: negotiation.RoleBouncer,
		KeyHash: "kh", CreatedAt: T0, Profile: store.Profile{Description: "chemical newsletter"}}))
	rs := f.send(t, "bob", "bob", `PIRCAN/1 HELLO {"name":"Bob"}`)
	one(t, rs, "HELLO")
	rs = f.send(t, "bob", "bob", `PIRCAN/1 FIND {"q":"CHEMICAL","id":"f1"}`)
	if len(rs) != 3 || rs[2].verb != "FIND-END" {
		t.Fatalf("FIND %+v", rs)
	}
	end := rs[2].obj
	if end["returned"] != 2.0 || end["total"] != 2.0 || end["offset"] != 0.0 || end["re"] != "f1" {
		t.Fatalf("FIND-END %v", end)
	}
	byName := map[string]map[string]any{}
	for _, r := range rs[:2] {
		if r.verb != "FIND-RESULT" || r.obj["re"] != "f1" {
			t.Fatalf("result %+v", r)
		}
		byName[r.obj["name"].(string)] = r.obj
	}
	if byName["Hazmat Agent"]["nick"] != "alice_" { // the nick last seen
		t.Fatalf("irc agent %v", byName["Hazmat Agent"])
	}
	if v := byName["Chem Bouncer"]; v["nick"] != nil || fmt.Sprint(v["capabilities"]) != "[bouncer]" {
		t.Fatalf("venue agent %v", v)
	}
	rs = f.send(t, "bob", "bob", `PIRCAN/1 FIND {"capability":"HAZMAT"}`)
	if len(rs) != 2 || rs[0].obj["name"] != "Hazmat Agent" {
		t.Fatalf("capability %+v", rs)
	}
	rs = f.send(t, "bob", "bob", `PIRCAN/1 FIND {"capability":"bouncer","limit":1,"offset":0}`)
	if len(rs) != 2 || rs[0].obj["agent_id"] != "agt_venue" {
		t.Fatalf("role as capability %+v", rs)
	}
	rs = f.send(t, "bob", "bob", `PIRCAN/1 FIND {"limit":1,"offset":1}`)
	if len(rs) != 2 || rs[1].obj["total"] != 3.0 || rs[1].obj["offset"] != 1.0 || rs[1].obj["returned"] != 1.0 {
		t.Fatalf("page %+v", rs)
	}
}

func TestBadInputs(t *testing.T) {
	t.Parallel()
	f := setup(t)
	one(t, f.send(t, "z", "z", `PIRCAN/1 HELLO`), "HELLO")
	long := strings.Repeat("é", 81)
	cases := []struct{ text, code string }{
		{"hello", line.CodeNotPircan},
		{"PIRCAN/1", line.CodeMissingVerb},
		{"PIRCAN/1 CONTACT {}", line.CodeUnknownVerb},
		{"PIRCAN/1 FIND {", line.CodeInvalidJSON},
		{`PIRCAN/1 FIND {"id":1}`, line.CodeInvalidID},
		{`PIRCAN/1 FIND {"limit":11}`, line.CodeInvalidArgument},
		{`PIRCAN/1 FIND {"limit":0}`, line.CodeInvalidArgument},
		{`PIRCAN/1 FIND {"offset":-1}`, line.CodeInvalidArgument},
		{`PIRCAN/1 FIND {"bogus":1}`, line.CodeInvalidArgument},
		{`PIRCAN/1 CHANNELS {"limit":21}`, line.CodeInvalidArgument},
		{`PIRCAN/1 JOIN {}`, line.CodeInvalidArgument},
		{`PIRCAN/1 JOIN {"channel":"#nope"}`, line.CodeUnknownChannel},
		{`PIRCAN/1 JOIN {"channel":"no hash"}`, line.CodeUnknownChannel},
		{`PIRCAN/1 HELLO {"name":"` + long + `"}`, line.CodeTooLong},
		{`PIRCAN/1 HELLO {"name":"  "}`, line.CodeEmpty},
		{`PIRCAN/1 HELLO {"name":"evil\u202egnp"}`, line.CodeInvalidArgument},
		{`PIRCAN/1 HELLO {"name":"a\nb"}`, line.CodeInvalidArgument},
		{`PIRCAN/1 HELLO {"card_url":"http://example.org/x"}`, line.CodeInvalidArgument},
		{`PIRCAN/1 HELLO {"capabilities":[""]}`, line.CodeEmpty},
		{`PIRCAN/1 HELLO {"capabilities":["` + strings.Repeat("c", 65) + `"]}`, line.CodeTooLong},
		{`PIRCAN/1 HELLO {"capabilities":` + strings.Repeat(`"a",`, 0) + `[` + strings.TrimSuffix(strings.Repeat(`"a",`, 21), ",") + `]}`, line.CodeInvalidArgument},
		{"PIRCAN/1 ECHO " + strings.Repeat("x", 400), line.CodeTooLong},
	}
	for _, c := range cases {
		rs := f.send(t, "z", "z", c.text)
		if len(rs) != 1 || rs[0].verb != "ERROR" || rs[0].obj["code"] != c.code {
			t.Errorf("%.60s: got %+v, want %s", c.text, rs, c.code)
		}
		f.clock.Advance(4 * time.Second) // stay under 20 a minute
	}
	// Refused HELLOs registered nothing.
	_, total, _ := f.store.Agents(context.Background(), store.AgentQuery{Limit: 50})
	if total != 1 {
		t.Fatalf("%d agents after refused HELLOs", total)
	}
}

func TestEchoHelpAndControlCharacters(t *testing.T) {
	t.Parallel()
	f := setup(t)
	m := one(t, f.send(t, "anon", "", "PIRCAN/1 ECHO {\"text\":\"a\\r\\nQUIT :bye\\u0000\"}"), "ECHO")
	if m["text"] != "a\r\nQUIT :bye\x00" || m["identified"] != false || m["account"] != nil {
		t.Fatalf("ECHO %v", m)
	}
	m = one(t, f.send(t, "ann", "Ann", `PIRCAN/1 ECHO {"text":"hi","id":"e"}`), "ECHO")
	if m["account"] != "Ann" || m["identified"] != true || m["re"] != "e" {
		t.Fatalf("identified ECHO %v", m)
	}
	m = one(t, f.send(t, "ann", "Ann", `PIRCAN/1 HELP`), "HELP")
	if fmt.Sprint(m["verbs"]) != "[HELP HELLO WHOAMI FIND CHANNELS JOIN ECHO]" || m["docs"] != "https://example.org/PIRCAN.md" {
		t.Fatalf("HELP %v", m)
	}
	rs := f.send(t, "ann", "Ann", " Help ")
	if len(rs) != len(helpText) || rs[0].verb != "TEXT" {
		t.Fatalf("plain help %+v", rs)
	}
	// A long multi-byte echo is cut, valid, and says so.
	m = one(t, f.send(t, "ann", "Ann", `PIRCAN/1 ECHO {"text":"`+strings.Repeat("😀", 90)+`"}`), "ECHO")
	if m["truncated"] != true || !strings.HasPrefix(strings.Repeat("😀", 90), m["text"].(string)) {
		t.Fatalf("cut ECHO %v", m)
	}
}

func TestChannelsAndJoin(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	must(t, f.st.PutChannel(ctx, Channel{Name: "#Hazmat", Topic: "Spills"}, T0))
	must(t, f.st.PutChannel(ctx, Channel{Name: "#secret", Private: true, Topic: "hush"}, T0))
	a := one(t, f.send(t, "a", "a", `PIRCAN/1 HELLO`), "HELLO")
	one(t, f.send(t, "b", "b", `PIRCAN/1 HELLO`), "HELLO")
	must(t, f.st.Invite(ctx, ChannelKey("#secret"), a["agent_id"].(string), T0))

	rs := f.send(t, "b", "b", `PIRCAN/1 CHANNELS`)
	if len(rs) != 2 || rs[0].obj["name"] != "#Hazmat" || rs[1].verb != "CHANNELS-END" || rs[1].obj["total"] != 1.0 {
		t.Fatalf("b's CHANNELS %+v", rs)
	}
	rs = f.send(t, "a", "a", `PIRCAN/1 CHANNELS {"q":"HUSH"}`)
	if len(rs) != 2 || rs[0].obj["name"] != "#secret" || rs[0].obj["private"] != true {
		t.Fatalf("a's CHANNELS %+v", rs)
	}
	// Public: recorded, told to /join.
	m := one(t, f.send(t, "b", "b", `PIRCAN/1 JOIN {"channel":"#hazmat"}`), "JOIN")
	if m["channel"] != "#Hazmat" || m["private"] != false || m["next"] != "/join #Hazmat" {
		t.Fatalf("JOIN %v", m)
	}
	ch, _ := f.st.Channel(ctx, "#hazmat")
	if ch.Members != 1 {
		t.Fatalf("members %d", ch.Members)
	}
	// Private, not invited: the same answer as no channel.
	wantError(t, f.send(t, "b", "b", `PIRCAN/1 JOIN {"channel":"#secret"}`), line.CodeUnknownChannel)
	// Private, invited: the account admitted (an invite exception for the
	// account extban, never an INVITE to the nick), then the reply.
	rs = f.send(t, "a", "a", `PIRCAN/1 JOIN {"channel":"#SECRET"}`)
	if len(rs) != 2 || rs[0].verb != "MODE" || rs[0].raw != "#secret +I R:a" || rs[1].obj["invited"] != true {
		t.Fatalf("private JOIN %+v", rs)
	}
}

func TestRateLimits(t *testing.T) {
	t.Parallel()
	f := setup(t)
	answered0 := testutil.ToFloat64(f.h.m.rateLimited.WithLabelValues("answered"))
	silent0 := testutil.ToFloat64(f.h.m.rateLimited.WithLabelValues("silent"))
	errors0 := testutil.ToFloat64(f.h.m.errors.WithLabelValues(line.CodeRateLimited))
	// 20 a minute per account, then one rate_limited, then silence.
	for i := range 20 {
		if rs := f.send(t, "flood", "flood", `PIRCAN/1 ECHO`); len(rs) != 1 || rs[0].verb != "ECHO" {
			t.Fatalf("request %d: %+v", i+1, rs)
		}
	}
	wantError(t, f.send(t, "flood", "flood", `PIRCAN/1 ECHO`), line.CodeRateLimited)
	for range 5 {
		if rs := f.send(t, "flood2", "FLOOD", `PIRCAN/1 ECHO`); len(rs) != 0 { // another nick, same account
			t.Fatalf("not silent: %+v", rs)
		}
	}
	// Another account is served.
	one(t, f.send(t, "other", "other", `PIRCAN/1 ECHO`), "ECHO")
	// The next window serves the flooder again.
	f.clock.Advance(time.Minute)
	one(t, f.send(t, "flood", "flood", `PIRCAN/1 ECHO`), "ECHO")

	// Unidentified: 20 per nick, 60 together; nick changes do not reset it.
	f.clock.Advance(time.Minute)
	served := 0
	for n := range 4 {
		for range 20 {
			if rs := f.send(t, fmt.Sprintf("anon%d", n), "", `PIRCAN/1 ECHO`); len(rs) == 1 && rs[0].verb == "ECHO" {
				served++
			}
		}
	}
	if served != 60 {
		t.Fatalf("served %d unidentified requests, want 60", served)
	}
	if rs := f.send(t, "anon9", "", `PIRCAN/1 ECHO`); len(rs) != 0 {
		t.Fatalf("a new nick reset the unidentified limit: %+v", rs)
	}
	one(t, f.send(t, "ident", "ident", `PIRCAN/1 ECHO`), "ECHO") // identified callers are counted apart

	// /metrics counted the refusals (other tests run beside: at least).
	if d := testutil.ToFloat64(f.h.m.rateLimited.WithLabelValues("answered")) - answered0; d < 2 {
		t.Fatalf("answered refusals counted %v, want at least 2", d)
	}
	if d := testutil.ToFloat64(f.h.m.rateLimited.WithLabelValues("silent")) - silent0; d < 5 {
		t.Fatalf("silent refusals counted %v, want at least 5", d)
	}
	if d := testutil.ToFloat64(f.h.m.errors.WithLabelValues(line.CodeRateLimited)) - errors0; d < 2 {
		t.Fatalf("rate_limited errors counted %v", d)
	}
}

func TestLimitsSurviveARestart(t *testing.T) {
	t.Parallel()
	f := setup(t)
	for range 20 {
		f.send(t, "x", "x", `PIRCAN/1 ECHO`)
	}
	// A new handler on the same State (a restarted bridge) keeps counting.
	h2 := *f.h
	f.h = &h2
	wantError(t, f.send(t, "x", "x", `PIRCAN/1 ECHO`), line.CodeRateLimited)
}

func TestRegistrationPaused(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.h.lim.l.Registrations = 2
	one(t, f.send(t, "a", "a", `PIRCAN/1 HELLO`), "HELLO")
	one(t, f.send(t, "b", "b", `PIRCAN/1 HELLO`), "HELLO")
	wantError(t, f.send(t, "c", "c", `PIRCAN/1 HELLO {"id":"x"}`), line.CodeRegistrationPaused)
	// Repeats are not registrations.
	if m := one(t, f.send(t, "a", "a", `PIRCAN/1 HELLO`), "HELLO"); m["new"] != false {
		t.Fatal(m)
	}
	f.clock.Advance(time.Hour)
	if m := one(t, f.send(t, "c", "c", `PIRCAN/1 HELLO`), "HELLO"); m["new"] != true {
		t.Fatal(m)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
