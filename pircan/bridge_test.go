package pircan_test

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ergochat/irc-go/ircmsg"

	"github.com/venuehq/venue/clock"
	"github.com/venuehq/venue/directory"
	"github.com/venuehq/venue/internal/irctest"
	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/pircan"
	"github.com/venuehq/venue/pircan/line"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/store/memory"
)

func TestMain(m *testing.M) {
	// The IRC tests spend their time waiting on the network, not the CPU:
	// run more of them at once than GOMAXPROCS unless -parallel says.
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		_ = flag.Set("test.parallel", strconv.Itoa(max(8, runtime.GOMAXPROCS(0))))
	}
	code := m.Run()
	irctest.StopAll()
	os.Exit(code)
}

// windowClock reads a minute boundary when the test starts and runs with
// the wall clock from there: one test's requests fall in one fixed
// rate-limit window whatever the time of day (tests take well under a
// minute).
type windowClock struct {
	clock.Real
	base, start time.Time
}

func newWindowClock() windowClock {
	now := time.Now()
	return windowClock{base: now.Truncate(time.Minute).Add(time.Minute), start: now}
}

func (c windowClock) Now() time.Time { return c.base.Add(time.Since(c.start)) }

// testBridge is a running bridge with its own NickServ account and nick.
type testBridge struct {
	*pircan.Bridge
	nick  string
	store *memory.Store
	state *pircan.MemoryState
}

// startBridge registers a NickServ account for a new bridge, runs the
// bridge on n (TLS with the network's CA, or plaintext) and waits until it
// is connected, identified and in the lobby. setup runs on the state
// before the bridge connects (operator channels).
func startBridge(t *testing.T, n *irctest.Network, useTLS bool, setup func(*pircan.MemoryState)) *testBridge {
	t.Helper()
	return startBridgeWith(t, n, useTLS, setup, nil)
}

// startBridgeWith is startBridge with configure(&cfg) run on the
// configuration before the bridge starts.
func startBridgeWith(t *testing.T, n *irctest.Network, useTLS bool, setup func(*pircan.MemoryState), configure func(*pircan.Config)) *testBridge {
	t.Helper()
	id := irctest.RandHex(3)
	account, password := "pb"+id, "pw-"+irctest.RandHex(8)
	reg := irctest.Dial(t, n, account, false)
	reg.Register(password)
	reg.Raw("QUIT")

	st := pircan.NewMemoryState()
	if setup != nil {
		setup(st)
	}
	s := memory.New()
	cfg := pircan.Config{
		Addr: n.Addr(useTLS), TLS: useTLS, Nick: "PIRCAN" + id, Account: account, Password: password,
		ServerPassword: n.BridgePass, Lobby: "#agents-" + id, DocsURL: "https://example.org/PIRCAN.md",
		BackoffMin: 100 * time.Millisecond, BackoffMax: 500 * time.Millisecond,
		Clock: newWindowClock(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if useTLS {
		cfg.CAFile = n.CAFile
	}
	if testing.Verbose() {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if configure != nil {
		configure(&cfg)
	}
	b := pircan.New(cfg, &directory.Service{Store: s, Now: time.Now}, st)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	tb := &testBridge{Bridge: b, nick: cfg.Nick, store: s, state: st}
	tb.waitStatus(t, pircan.Status{Connected: true, Identified: true, Joined: true, Nick: cfg.Nick})
	return tb
}

// waitStatus polls Status until it is want (a state reached over the
// network, not a timer: polling is the only way to observe it).
func (b *testBridge) waitStatus(t *testing.T, want pircan.Status) {
	t.Helper()
	deadline := time.Now().Add(irctest.WaitFor)
	for b.Status() != want {
		if time.Now().After(deadline) {
			t.Fatalf("bridge status %+v, want %+v", b.Status(), want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// agents dials identified agents in parallel (each 001 takes about a second).
func agents(t *testing.T, n *irctest.Network, nicks []string, useTLS []bool) []*irctest.Client {
	t.Helper()
	out := make([]*irctest.Client, len(nicks))
	var wg sync.WaitGroup
	for i, nick := range nicks {
		wg.Go(func() {
			c := irctest.Dial(t, n, nick, useTLS[i])
			c.Register("pw-" + nick + "-secret")
			out[i] = c
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return out
}

// Two identified agents register, find each other (and a venue agent),
// list channels and join a public and a private channel; the bridge on the
// TLS port, one agent on each port.
func TestTwoAgentsMeet(t *testing.T) {
	t.Parallel()
	n := irctest.Shared(t)
	id := irctest.RandHex(3)
	pub, priv := "#chem-"+id, "#secret-"+id
	b := startBridge(t, n, true, func(st *pircan.MemoryState) {
		must(t, st.PutChannel(context.Background(), pircan.Channel{Name: pub, Topic: "Chemical releases"}, time.Now()))
		must(t, st.PutChannel(context.Background(), pircan.Channel{Name: priv, Private: true, Topic: "Invited only"}, time.Now()))
	})
	must(t, b.store.CreateAgent(context.Background(), store.Agent{ID: "agt_venue" + id, Name: "Chemical Bouncer " + id,
		Role: negotiation.RoleBouncer, KeyHash: "kh" + id, CreatedAt: time.Now(), Profile: store.Profile{Description: "newsletter"}}))
	cs := agents(t, n, []string{"alice" + id, "bob" + id}, []bool{true, false})
	alice, bob := cs[0], cs[1]

	ha := alice.Ask(b.nick, `PIRCAN/1 HELLO {"name":"Hazmat `+id+`","description":"Chemical release assessment","capabilities":["hazmat","chemistry"],"card_url":"https://example.org/card.json","id":"r1"}`, "HELLO")
	if ha["new"] != true || ha["re"] != "r1" {
		t.Fatalf("HELLO %v", ha)
	}
	hb := bob.Ask(b.nick, `PIRCAN/1 HELLO {"name":"Logistics `+id+`","capabilities":["trucks"]}`, "HELLO")
	if again := bob.Ask(b.nick, `pircan/1 hello`, "HELLO"); again["new"] != false || again["agent_id"] != hb["agent_id"] {
		t.Fatalf("repeat HELLO %v", again)
	}

	// Bob finds Alice by capability, Alice finds Bob by name.
	bob.Raw("PRIVMSG " + b.nick + ` :PIRCAN/1 FIND {"capability":"HAZMAT","id":"f"}`)
	r := bob.Expect(b.nick)
	if r.Verb != "FIND-RESULT" || r.Obj["agent_id"] != ha["agent_id"] || r.Obj["nick"] != alice.Nick || r.Obj["re"] != "f" {
		t.Fatalf("FIND-RESULT %s", r.Raw)
	}
	if end := bob.Expect(b.nick); end.Verb != "FIND-END" || end.Obj["total"] != 1.0 {
		t.Fatalf("FIND-END %s", end.Raw)
	}
	alice.Raw("PRIVMSG " + b.nick + ` :PIRCAN/1 FIND {"q":"` + id + `","limit":10}`)
	found := map[string]string{}
	for {
		r := alice.Expect(b.nick)
		if r.Verb == "FIND-END" {
			if r.Obj["returned"] != 3.0 || r.Obj["total"] != 3.0 {
				t.Fatalf("FIND-END %s", r.Raw)
			}
			break
		}
		found[r.Obj["name"].(string)] = fmt.Sprint(r.Obj["capabilities"])
	}
	if found["Logistics "+id] != "[trucks]" || found["Chemical Bouncer "+id] != "[bouncer]" || len(found) != 3 {
		t.Fatalf("FIND by q: %v", found)
	}

	// CHANNELS: Bob sees the lobby and the public channel; Alice, once
	// invited, the private one too.
	lobby := "#agents-" + strings.TrimPrefix(b.nick, "PIRCAN")
	must(t, b.state.Invite(context.Background(), pircan.ChannelKey(priv), ha["agent_id"].(string), time.Now()))
	bob.Raw("PRIVMSG " + b.nick + " :PIRCAN/1 CHANNELS")
	for _, want := range []string{lobby, pub} {
		if r := bob.Expect(b.nick); r.Verb != "CHANNEL" || r.Obj["name"] != want {
			t.Fatalf("CHANNEL %s, want %s", r.Raw, want)
		}
	}
	if r := bob.Expect(b.nick); r.Verb != "CHANNELS-END" || r.Obj["total"] != 2.0 {
		t.Fatalf("CHANNELS-END %s", r.Raw)
	}
	alice.Raw("PRIVMSG " + b.nick + " :PIRCAN/1 CHANNELS")
	for _, want := range []string{lobby, pub, priv} {
		if r := alice.Expect(b.nick); r.Verb != "CHANNEL" || r.Obj["name"] != want {
			t.Fatalf("alice's CHANNEL %s, want %s", r.Raw, want)
		}
	}
	alice.Expect(b.nick) // CHANNELS-END

	// JOIN public: told to /join, and can.
	if j := bob.Ask(b.nick, `PIRCAN/1 JOIN {"channel":"`+pub+`"}`, "JOIN"); j["next"] != "/join "+pub {
		t.Fatalf("JOIN %v", j)
	}
	bob.Raw("JOIN " + pub)
	bob.Next("JOIN "+pub, func(m ircmsg.Message) bool { return m.Command == "JOIN" && m.Nick() == bob.Nick })
	// JOIN private: Bob (not invited) is told it does not exist; Alice's
	// account is admitted (+I R:<account>), never an INVITE to her nick,
	// and she joins the +i channel under another nick.
	bob.AskError(b.nick, `PIRCAN/1 JOIN {"channel":"`+priv+`"}`, line.CodeUnknownChannel)
	alice.Raw("PRIVMSG " + b.nick + ` :PIRCAN/1 JOIN {"channel":"` + priv + `"}`)
	j := alice.Next("the JOIN reply", func(m ircmsg.Message) bool {
		if m.Command == "INVITE" {
			t.Fatalf("the bridge sent an INVITE to a nick: %v", m)
		}
		return m.Command == "NOTICE" && strings.EqualFold(m.Nick(), b.nick)
	})
	if txt := j.Params[len(j.Params)-1]; !strings.HasPrefix(txt, "PIRCAN/1 JOIN ") || !strings.Contains(txt, `"invited":true`) {
		t.Fatalf("private JOIN %s", txt)
	}
	alice.Raw("NICK " + alice.Nick + "x")
	alice.Raw("JOIN " + priv)
	alice.Next("JOIN "+priv, func(m ircmsg.Message) bool { return m.Command == "JOIN" && m.Nick() == alice.Nick+"x" })
	alice.Raw("NICK " + alice.Nick)
	alice.Next("NICK back", func(m ircmsg.Message) bool { return m.Command == "NICK" && m.Params[0] == alice.Nick })
	// Without an invitation the +i channel refuses Bob (473).
	bob.Raw("JOIN " + priv)
	bob.WaitCommand("473")

	if w := alice.Ask(b.nick, "PIRCAN/1 WHOAMI", "WHOAMI"); w["agent_id"] != ha["agent_id"] || w["owner"] != nil {
		t.Fatalf("WHOAMI %v", w)
	}
}

// An unidentified client is refused HELLO but can ECHO; NOTICEs and CTCP
// (well formed or not) get no answer: the next reply is the sentinel's.
func TestUnidentifiedNoticeAndCTCP(t *testing.T) {
	t.Parallel()
	n := irctest.Shared(t)
	b := startBridge(t, n, false, nil)
	c := irctest.Dial(t, n, "anon"+irctest.RandHex(3), true)
	m := c.AskError(b.nick, `PIRCAN/1 HELLO {"id":"h"}`, line.CodeNotIdentified)
	if m["re"] != "h" {
		t.Fatalf("error %v", m)
	}
	c.AskError(b.nick, `PIRCAN/1 FIND`, line.CodeNotIdentified)
	e := c.Ask(b.nick, `PIRCAN/1 ECHO {"text":"hi"}`, "ECHO")
	if e["identified"] != false || e["account"] != nil || e["text"] != "hi" {
		t.Fatalf("ECHO %v", e)
	}
	c.Raw("NOTICE " + b.nick + " :PIRCAN/1 HELP")
	c.Raw("PRIVMSG " + b.nick + " :\x01VERSION\x01")
	c.Raw("PRIVMSG " + b.nick + " :\x01PING 123")
	c.Raw("PRIVMSG " + b.nick + " :\x01")
	c.Raw("PRIVMSG " + b.nick + " :\x01ACTION PIRCAN/1 HELP\x01")
	if e := c.Ask(b.nick, `PIRCAN/1 ECHO {"text":"sentinel"}`, "ECHO"); e["text"] != "sentinel" {
		t.Fatalf("the first reply after NOTICE and CTCP is %v", e)
	}
	// Once identified, ECHO shows the account.
	c.Register("pw-" + c.Nick + "-x")
	if e := c.Ask(b.nick, `PIRCAN/1 ECHO`, "ECHO"); e["identified"] != true || !strings.EqualFold(e["account"].(string), c.Nick) {
		t.Fatalf("identified ECHO %v", e)
	}
	// Plain help answers text for people.
	c.Raw("PRIVMSG " + b.nick + " :help")
	if r := c.Expect(b.nick); r.Verb != "TEXT" || !strings.Contains(r.Raw, "PIRCAN/1") {
		t.Fatalf("help %q", r.Raw)
	}
}

// A flood from one account gets 20 answers, one rate_limited and then
// silence, while another account is served in between (the queue is fair).
func TestFloodIsLimitedOthersServed(t *testing.T) {
	t.Parallel()
	n := irctest.Shared(t)
	b := startBridge(t, n, false, nil)
	id := irctest.RandHex(3)
	cs := agents(t, n, []string{"flood" + id, "calm" + id}, []bool{false, false})
	flood, calm := cs[0], cs[1]
	for i := range 25 {
		flood.Raw(fmt.Sprintf(`PRIVMSG %s :PIRCAN/1 ECHO {"text":"%d"}`, b.nick, i))
	}
	for i := range 5 { // the burst
		if r := flood.Expect(b.nick); r.Verb != "ECHO" || r.Obj["text"] != fmt.Sprint(i) {
			t.Fatalf("flood reply %d: %s", i, r.Raw)
		}
	}
	// While the flood's replies are paced, another account is served
	// before the flood's queue drains.
	calm.Ask(b.nick, `PIRCAN/1 ECHO {"text":"calm"}`, "ECHO")
	rest := flood.Pending(b.nick)
	if len(rest) >= 16 {
		t.Fatalf("the calm agent waited for the whole flood (%d flood lines first)", len(rest))
	}
	got := 5 + len(rest)
	var last irctest.Reply
	for got < 21 {
		last = flood.Expect(b.nick)
		got++
		if got <= 20 && last.Verb != "ECHO" {
			t.Fatalf("reply %d: %s", got, last.Raw)
		}
	}
	if last.Verb != "ERROR" || last.Obj["code"] != line.CodeRateLimited {
		t.Fatalf("21st reply %s", last.Raw)
	}
	// Silence: the calm agent's next answer comes, the flood gets nothing more.
	calm.Ask(b.nick, `PIRCAN/1 ECHO`, "ECHO")
	flood.Raw("PRIVMSG " + b.nick + " :PIRCAN/1 ECHO")
	calm.Ask(b.nick, `PIRCAN/1 ECHO`, "ECHO")
	if extra := flood.Pending(b.nick); len(extra) != 0 {
		t.Fatalf("flood got %q after rate_limited", extra)
	}
}

// A nick change keeps the account: the same agent, now seen with the new nick.
func TestNickChangeKeepsAccount(t *testing.T) {
	t.Parallel()
	n := irctest.Shared(t)
	b := startBridge(t, n, false, nil)
	id := irctest.RandHex(3)
	c := agents(t, n, []string{"nc" + id}, []bool{true})[0]
	h := c.Ask(b.nick, `PIRCAN/1 HELLO {"capabilities":["nicks"]}`, "HELLO")
	c.Raw("NICK renamed" + id)
	c.Next("NICK", func(m ircmsg.Message) bool { return m.Command == "NICK" })
	c.Nick = "renamed" + id
	w := c.Ask(b.nick, "PIRCAN/1 WHOAMI", "WHOAMI")
	if w["agent_id"] != h["agent_id"] {
		t.Fatalf("after a nick change WHOAMI is %v, want agent %v", w, h["agent_id"])
	}
	c.Raw("PRIVMSG " + b.nick + ` :PIRCAN/1 FIND {"capability":"nicks"}`)
	if r := c.Expect(b.nick); r.Obj["nick"] != "renamed"+id {
		t.Fatalf("FIND shows nick %v", r.Obj["nick"])
	}
}

// The bridge reconnects after the IRC server restarts.
func TestReconnectAfterServerRestart(t *testing.T) {
	t.Parallel()
	n := irctest.Start(t)
	b := startBridge(t, n, false, nil)
	c := irctest.Dial(t, n, "rc"+irctest.RandHex(3), false)
	c.Ask(b.nick, "PIRCAN/1 ECHO", "ECHO")

	n.Run(t, "stop-ircd")
	b.waitStatus(t, pircan.Status{})
	n.Run(t, "start-ircd")
	// Back: connected, in the lobby and identified again once services
	// have linked (SASL, or NickServ IDENTIFY when SASL failed meanwhile).
	b.waitStatus(t, pircan.Status{Connected: true, Identified: true, Joined: true, Nick: b.nick})
	c2 := irctest.Dial(t, n, "rc"+irctest.RandHex(3), false)
	if e := c2.Ask(b.nick, `PIRCAN/1 ECHO {"text":"back"}`, "ECHO"); e["text"] != "back" {
		t.Fatalf("ECHO after restart %v", e)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
