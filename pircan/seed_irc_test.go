package pircan_test

// PIRCAN exact to PIRCAN.md on the real network: whole texts over IRC,
// "re" on every reply, the lobby as a channel.

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/venuehq/venue/handshake"
	"github.com/venuehq/venue/internal/irctest"
	"github.com/venuehq/venue/pircan"
)

// readWhole sends text and reads the list it answers, joining each item's
// text with its <item>-MORE continuation lines (which must follow it at
// once, with its id): the texts, keyed by id, and the -END line.
func readWhole(t *testing.T, c *irctest.Client, bridge, text, item, idKey, end string) (map[string]string, map[string]any) {
	t.Helper()
	c.Raw("PRIVMSG " + bridge + " :" + text)
	texts := map[string]string{}
	var cur string
	more := false
	for {
		r := c.Expect(bridge)
		switch r.Verb {
		case "NOTIFY":
			continue
		case item:
			if more {
				t.Fatalf("%s before the end of %s: %s", item, cur, r.Raw)
			}
			cur = r.Obj[idKey].(string)
			texts[cur] = r.Obj["text"].(string)
		case item + "-MORE":
			if !more || r.Obj[idKey] != cur {
				t.Fatalf("unexpected continuation %s", r.Raw)
			}
			texts[cur] += r.Obj["text"].(string)
		case end:
			if more {
				t.Fatalf("%s before the last part of %s", end, cur)
			}
			return texts, r.Obj
		default:
			t.Fatalf("%q answered %s", text, r.Raw)
		}
		if r.Obj["re"] != "w" {
			t.Fatalf("no re on %s", r.Raw)
		}
		more = r.Obj["more"] == true
	}
}

// A 200-character SEND over IRC, a 5,000-byte message and task sent over
// the service (as REST does) are read whole over IRC; a ttl_days of 0 is
// refused.
func TestWholeTextsOverIRC(t *testing.T) {
	t.Parallel()
	n := irctest.Shared(t)
	v := startVenueBridge(t, n)
	id := irctest.RandHex(3)
	cs := agents(t, n, []string{"wan" + id, "wen" + id}, []bool{false, false})
	ann, ben := cs[0], cs[1]
	annID := ann.Ask(v.nick, `PIRCAN/1 HELLO`, "HELLO")["agent_id"].(string)
	benID := ben.Ask(v.nick, `PIRCAN/1 HELLO`, "HELLO")["agent_id"].(string)
	// ttl_days outside 1-365, 0 included, is refused, not made 30.
	for _, ttl := range []string{"0", "-1", "366"} {
		askErr(t, ann, v.nick, `PIRCAN/1 CONTACT {"to":"`+benID+`","ttl_days":`+ttl+`}`, "invalid_argument")
	}
	c, _ := ask(t, ann, v.nick, `PIRCAN/1 CONTACT {"to":"`+benID+`","purpose":"Texts","scopes":["message","task:assess"],"ttl_days":30}`, "CONTACT")
	askErr(t, ben, v.nick, `PIRCAN/1 ACCEPT {"request_id":"`+c["request_id"].(string)+`","ttl_days":0}`, "invalid_argument")
	ask(t, ben, v.nick, `PIRCAN/1 ACCEPT {"request_id":"`+c["request_id"].(string)+`"}`, "ACCEPT")

	short := strings.Repeat("0123456789", 19) + "é€😀\u2028\"\\xyzw" // 200 characters
	if n := len([]rune(short)); n != 200 {
		t.Fatal(n)
	}
	s, _ := ask(t, ann, v.nick, `PIRCAN/1 SEND {"to":"`+benID+`","text":"`+strings.ReplaceAll(strings.ReplaceAll(short, `\`, `\\`), `"`, `\"`)+`"}`, "SEND")
	long := strings.Repeat("The quick brown fox — jumps over 😀 the lazy dog. ", 100)
	m, err := v.svc.Send(t.Context(), annID, handshake.SendInput{To: benID, Text: long}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	tk, err := v.svc.CreateTask(t.Context(), annID, handshake.TaskInput{To: benID, Skill: "assess", Text: long}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	texts, end := readWhole(t, ben, v.nick, `PIRCAN/1 INBOX {"limit":10,"id":"w"}`, "MESSAGE", "message_id", "INBOX-END")
	if texts[s["message_id"].(string)] != short || texts[m.ID] != long || end["returned"] != 2.0 {
		t.Fatalf("INBOX read %d texts; the 200-character one %q", len(texts), texts[s["message_id"].(string)])
	}
	texts, _ = readWhole(t, ben, v.nick, `PIRCAN/1 TASKS {"id":"w"}`, "TASK", "task_id", "TASKS-END")
	if texts[tk.ID] != long {
		t.Fatalf("TASK text %d bytes of %d", len(texts[tk.ID]), len(long))
	}
}

// Every reply to a request with an id carries "re": too_long (over 400
// bytes), rate_limited (the 21st request of a minute), an unknown verb;
// an id too long in bytes once escaped is invalid_id.
func TestReOnEveryReply(t *testing.T) {
	t.Parallel()
	n := irctest.Shared(t)
	// Paced faster than the default: this test is about the replies.
	b := startBridgeWith(t, n, false, nil, func(c *pircan.Config) { c.Pace = pircan.Pace{Burst: 30, PerSecond: 30, MaxQueued: 2000} })
	c := agents(t, n, []string{"re" + irctest.RandHex(3)}, []bool{false})[0]
	if m := c.AskError(b.nick, `PIRCAN/1 ECHO {"id":"t1","text":"`+strings.Repeat("x", 420)+`"}`, "too_long"); m["re"] != "t1" {
		t.Fatalf("too_long %v", m)
	}
	if m := c.AskError(b.nick, `PIRCAN/1 EC!HO {"id":"t2"}`, "unknown_verb"); m["re"] != "t2" {
		t.Fatalf("unknown_verb %v", m)
	}
	if m := c.AskError(b.nick, `PIRCAN/1 ECHO {"id":"`+strings.Repeat("\u2028", 64)+`"}`, "invalid_id"); m["re"] != nil {
		t.Fatalf("invalid_id %v", m)
	}
	if m := c.AskError(b.nick, `PIRCAN/1 ECHO {"id":"`+strings.Repeat("\x7f", 64)+`"}`, "invalid_id"); m["re"] != nil {
		t.Fatalf("invalid_id %v", m)
	}
	// The 21st request of the minute (the ones above count) is refused.
	for i := 4; ; i++ {
		id := fmt.Sprintf("e%d", i)
		c.Raw("PRIVMSG " + b.nick + " :PIRCAN/1 ECHO {\"id\":\"" + id + "\"}")
		r := c.Expect(b.nick)
		if r.Verb == "ECHO" && i <= 20 {
			continue
		}
		if r.Verb != "ERROR" || r.Obj["code"] != "rate_limited" || r.Obj["re"] != id {
			t.Fatalf("request %d: %s", i, r.Raw)
		}
		break
	}
}

// joinLobby joins the lobby and reads the welcome NOTICE it brings (the
// first join of the hour), which points to HELP and HELLO.
func joinLobby(t *testing.T, c *irctest.Client, bridge, lobby string) {
	t.Helper()
	c.Raw("JOIN " + lobby)
	r := c.Expect(bridge)
	if r.Verb != "TEXT" || !strings.Contains(r.Raw, "Welcome to "+lobby) || !strings.Contains(r.Raw, "/msg "+bridge+" help") ||
		!strings.Contains(r.Raw, "PIRCAN/1 HELLO") {
		t.Fatalf("%s joined %s: got %s, want the welcome", c.Nick, lobby, r.Raw)
	}
}

// The lobby is a known public channel: CHANNELS lists it with its topic
// and counts the agents in it, JOIN answers it; a nick joining it is
// welcomed once an hour.
func TestLobbyIsAChannel(t *testing.T) {
	t.Parallel()
	n := irctest.Shared(t)
	b := startBridge(t, n, false, nil)
	lobby := "#agents-" + strings.TrimPrefix(b.nick, "PIRCAN")
	id := irctest.RandHex(3)
	cs := agents(t, n, []string{"lo" + id, "lu" + id, "ly" + id}, []bool{false, false, false})
	lo, lu, ly := cs[0], cs[1], cs[2]
	lo.Ask(b.nick, `PIRCAN/1 HELLO`, "HELLO")
	lu.Ask(b.nick, `PIRCAN/1 HELLO`, "HELLO")

	// Bidi and zero-width controls are refused in every text field HELLO
	// sets, and the refusal registers nothing (ly stays without an agent).
	ly.AskError(b.nick, `PIRCAN/1 HELLO {"description":"safe \u202egnp.exe"}`, "invalid_argument")
	ly.AskError(b.nick, `PIRCAN/1 HELLO {"capabilities":["ha\u200bzmat"]}`, "invalid_argument")
	ly.AskError(b.nick, `PIRCAN/1 WHOAMI`, "not_registered")

	channels := func() map[string]any {
		t.Helper()
		lo.Raw("PRIVMSG " + b.nick + ` :PIRCAN/1 CHANNELS {"q":"agents"}`)
		r := lo.Expect(b.nick)
		if r.Verb != "CHANNEL" || r.Obj["name"] != lobby || r.Obj["private"] != false || r.Obj["topic"] != "The lobby of agents: /msg PIRCAN help" {
			t.Fatalf("CHANNEL %s", r.Raw)
		}
		if e := lo.Expect(b.nick); e.Verb != "CHANNELS-END" || e.Obj["total"] != 1.0 {
			t.Fatalf("CHANNELS-END %s", e.Raw)
		}
		return r.Obj
	}
	if m := channels(); m["members"] != 0.0 {
		t.Fatalf("members before anyone joined: %v", m)
	}
	joinLobby(t, lo, b.nick, lobby)
	joinLobby(t, ly, b.nick, lobby) // identified, no agent: not counted
	if m := lu.Ask(b.nick, `PIRCAN/1 JOIN {"channel":"`+lobby+`"}`, "JOIN"); m["private"] != false || m["next"] != "/join "+lobby {
		t.Fatalf("JOIN %v", m)
	}
	joinLobby(t, lu, b.nick, lobby)
	if m := channels(); m["members"] != 2.0 {
		t.Fatalf("members with two agents in: %v", m)
	}
	// Once an hour per nick: leaving and coming back brings no second
	// welcome (the next NOTICE is the answer to ECHO).
	lu.Raw("PART " + lobby)
	lu.Raw("JOIN " + lobby)
	lu.WaitCommand("366")
	lu.Ask(b.nick, `PIRCAN/1 ECHO`, "ECHO")
	// One left: the count follows.
	lo.Raw("PART " + lobby)
	lo.WaitCommand("PART")
	deadline := time.Now().Add(irctest.WaitFor)
	for channels()["members"] != 1.0 {
		if time.Now().After(deadline) {
			t.Fatal("members never fell to 1 after a PART")
		}
	}
}

// NOTIFY reaches the nick last seen with the account, in a shared channel
// or not: an agent that only messages PIRCAN, and one that sat in the
// lobby before its HELLO, get their lines within seconds of the event.
// A request-seen nick is confirmed with WHOX before each send; MONITOR
// (loaded in testdata/irc) tells the bridge when it goes.
func TestNotifyReachesRecentlySeenNick(t *testing.T) {
	t.Parallel()
	n := irctest.Shared(t)
	v := startVenueBridge(t, n)
	id := irctest.RandHex(3)
	cs := agents(t, n, []string{"kim" + id, "lee" + id, "nat" + id}, []bool{false, false, false})
	kim, lee, nat := cs[0], cs[1], cs[2]
	joinLobby(t, nat, v.nick, v.lobby) // in the lobby before it has an agent
	kimID := kim.Ask(v.nick, `PIRCAN/1 HELLO`, "HELLO")["agent_id"].(string)
	lee.Ask(v.nick, `PIRCAN/1 HELLO`, "HELLO")
	natID := nat.Ask(v.nick, `PIRCAN/1 HELLO`, "HELLO")["agent_id"].(string)

	for _, c := range []struct {
		who *irctest.Client
		id  string
	}{{kim, kimID}, {nat, natID}} {
		start := time.Now()
		ask(t, lee, v.nick, `PIRCAN/1 CONTACT {"to":"`+c.id+`","purpose":"p"}`, "CONTACT")
		expectNotify(t, c.who, v.nick, `{"type":"contact_request","pending":1}`)
		if d := time.Since(start); d > 8*time.Second {
			t.Fatalf("%s: NOTIFY after %v", c.who.Nick, d)
		}
	}
}
