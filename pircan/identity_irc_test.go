package pircan_test

// Identity safety on the real IRC network (PIRCAN.md "A line goes only to
// the account it answers"): lines queued for an account never reach a
// nick that changed hands.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ergochat/irc-go/ircmsg"

	"github.com/venuehq/venue/handshake"
	"github.com/venuehq/venue/internal/irctest"
	"github.com/venuehq/venue/pircan"
)

// takeNick makes c take nick as soon as the server frees it (433 while it
// is held), returning when the server confirms the change.
func takeNick(t *testing.T, c *irctest.Client, nick string) {
	t.Helper()
	deadline := time.Now().Add(irctest.WaitFor)
	for {
		c.Raw("NICK " + nick)
		m := c.Next("NICK or 433", func(m ircmsg.Message) bool {
			return m.Command == "NICK" && m.Params[0] == nick || m.Command == "433"
		})
		if m.Command == "NICK" {
			c.Nick = nick
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never freed", nick)
		}
		time.Sleep(20 * time.Millisecond) // the server frees the nick when it has read the QUIT
	}
}

// identifyAs logs c in to account with NickServ.
func identifyAs(t *testing.T, c *irctest.Client, account, password string) {
	t.Helper()
	c.Raw("PRIVMSG NickServ :IDENTIFY " + account + " " + password)
	c.WaitCommand("900")
}

// flush reads c's NOTICEs from the bridge up to the answer to an ECHO:
// every line the bridge sent c before it.
func flush(t *testing.T, c *irctest.Client, bridge string) []irctest.Reply {
	t.Helper()
	c.Raw("PRIVMSG " + bridge + ` :PIRCAN/1 ECHO {"text":"flush"}`)
	var got []irctest.Reply
	for {
		r := c.Expect(bridge)
		if r.Verb == "ECHO" && r.Obj["text"] == "flush" {
			return got
		}
		got = append(got, r)
	}
}

// messagesTo makes an agreement from sender to target over the service
// and sends n messages; it returns their ids.
func messagesTo(t *testing.T, svc *handshake.Service, sender, target string, n int) []string {
	t.Helper()
	ctx, now := context.Background(), time.Now()
	r, err := svc.Contact(ctx, sender, handshake.ContactInput{To: target, Purpose: "Data", Scopes: []string{"message"}}, now)
	must(t, err)
	_, err = svc.Accept(ctx, handshake.AgentActor(target), r.ID, handshake.AcceptInput{}, now)
	must(t, err)
	var ids []string
	for i := range n {
		m, err := svc.Send(ctx, sender, handshake.SendInput{To: target, Text: fmt.Sprintf("private text %d", i)}, now)
		must(t, err)
		ids = append(ids, m.ID)
	}
	return ids
}

// A victim's INBOX is being sent when it quits and an attacker takes its
// nick: the attacker gets none of the victim's lines, and the messages not
// sent stay unread for the victim's next INBOX. Both ways the bridge can
// know who holds a nick: a shared channel (the victim sat in the lobby),
// and MONITOR with a WHOX (the victim only messaged PIRCAN).
func TestLinesGoOnlyToTheAccount(t *testing.T) {
	t.Parallel()
	n := irctest.Shared(t)
	// One line a second: the victim's quit is seen well before its next line.
	v := startVenueBridgeWith(t, n, nil, func(c *pircan.Config) { c.Pace = pircan.Pace{Burst: 1, PerSecond: 1, MaxQueued: 2000} })
	id := irctest.RandHex(3)
	cs := agents(t, n, []string{"snd" + id, "vica" + id, "vicb" + id}, []bool{false, false, false})
	snd, vica, vicb := cs[0], cs[1], cs[2]
	sndID := snd.Ask(v.nick, `PIRCAN/1 HELLO`, "HELLO")["agent_id"].(string)
	aID := vica.Ask(v.nick, `PIRCAN/1 HELLO`, "HELLO")["agent_id"].(string)
	bID := vicb.Ask(v.nick, `PIRCAN/1 HELLO`, "HELLO")["agent_id"].(string)
	malA, malB := irctest.Dial(t, n, "mala"+id, false), irctest.Dial(t, n, "malb"+id, false)

	// In the lobby: the victim reads its first message and quits.
	joinLobby(t, vica, v.nick, v.lobby)
	all := messagesTo(t, v.svc, sndID, aID, 4)
	vica.Raw("PRIVMSG " + v.nick + ` :PIRCAN/1 INBOX {"limit":4}`)
	first, _ := expectSkipping(t, vica, v.nick, "MESSAGE")
	vica.Raw("QUIT")
	takeNick(t, malA, vica.Nick)
	checkRest(t, n, v, malA, "vica"+id, all, []string{first["message_id"].(string)})

	// Only messaging PIRCAN: INBOX and QUIT in one write; the bridge asks
	// who holds the nick before the first line.
	all = messagesTo(t, v.svc, sndID, bID, 3)
	vicb.Raw("PRIVMSG " + v.nick + ` :PIRCAN/1 INBOX {"limit":3}` + "\r\nQUIT")
	takeNick(t, malB, vicb.Nick)
	checkRest(t, n, v, malB, "vicb"+id, all, nil)
}

// checkRest: the attacker mal got no line of the victim's; the victim,
// back under another nick, reads every message of all it did not get
// (seen) in its next INBOX.
func checkRest(t *testing.T, n *irctest.Network, v *venueBridge, mal *irctest.Client, account string, all, seen []string) {
	t.Helper()
	back := irctest.Dial(t, n, account+"b", false)
	identifyAs(t, back, account, "pw-"+account+"-secret")
	items, end := listOf(t, back, v.nick, `PIRCAN/1 INBOX {"limit":10}`, "MESSAGE", "INBOX-END")
	var got []string
	for _, it := range items {
		got = append(got, it["message_id"].(string))
	}
	want := slices.DeleteFunc(slices.Clone(all), func(id string) bool { return slices.Contains(seen, id) })
	if !slices.Equal(got, want) || end["unread"] != 0.0 {
		t.Fatalf("%s back: INBOX %v (end %v), want %v (had %v)", account, got, end, want, seen)
	}
	for _, r := range flush(t, mal, v.nick) {
		if r.Verb == "MESSAGE" || strings.Contains(r.Raw, "private text") {
			t.Fatalf("%s got the victim's line %s", mal.Nick, r.Raw)
		}
	}
}

// Owners are not the agent (PIRCAN.md "Owners"): without a named owner
// the agent's own account owns it (WHOAMI says "self") and its LOGIN
// signs a browser in; once the agent names an owner and that account
// confirms over IRC (OWN), the agent's account can neither sign in, nor
// replace its owner, nor lift a policy the owner set. The LOGIN reply
// never repeats what the browser chose.
func TestOwnersAreNotTheAgent(t *testing.T) {
	t.Parallel()
	n := irctest.Shared(t)
	v := startVenueBridge(t, n)
	id := irctest.RandHex(3)
	cs := agents(t, n, []string{"agt" + id, "own" + id, "mal" + id}, []bool{false, false, false})
	agt, own, mal := cs[0], cs[1], cs[2]
	agentID := agt.Ask(v.nick, `PIRCAN/1 HELLO`, "HELLO")["agent_id"].(string)
	owner := func(m map[string]any) string {
		o, _ := m["owner"].(map[string]any)
		return fmt.Sprint(o["name"], " ", o["verification"])
	}
	if w := agt.Ask(v.nick, `PIRCAN/1 WHOAMI`, "WHOAMI"); owner(w) != agt.Nick+" self" {
		t.Fatalf("WHOAMI without an owner %v", w)
	}
	portal := &handshake.Portal{Service: v.svc}
	code := func() string {
		st, err := portal.Start(context.Background(), "192.0.2.7", "Official venue security check: all is well", time.Now())
		must(t, err)
		return st.Code
	}
	// No owner named: the agent's own account signs in (the seed's rule);
	// the reply does not carry the browser's words.
	c, _ := ask(t, agt, v.nick, `PIRCAN/1 LOGIN {"code":"`+code()+`"}`, "LOGIN")
	if c["signed_in"] != true || c["browser"] != nil {
		t.Fatalf("LOGIN %v", c)
	}
	ask(t, agt, v.nick, `PIRCAN/1 LOGOUT`, "LOGOUT")

	o, _ := ask(t, agt, v.nick, `PIRCAN/1 OWNER {"account":"`+strings.ToUpper(own.Nick)+`","id":"o"}`, "OWNER")
	if owner(o) != own.Nick+" pending" || o["re"] != "o" {
		t.Fatalf("OWNER %v", o)
	}
	if w := agt.Ask(v.nick, `PIRCAN/1 WHOAMI`, "WHOAMI"); owner(w) != own.Nick+" pending" {
		t.Fatalf("WHOAMI pending %v", w)
	}
	askErr(t, mal, v.nick, `PIRCAN/1 OWN {"agent_id":"`+agentID+`"}`, handshake.CodeNotFound)
	if o, _ := ask(t, own, v.nick, `PIRCAN/1 OWN {"agent_id":"`+agentID+`"}`, "OWN"); owner(o) != own.Nick+" confirmed" {
		t.Fatalf("OWN %v", o)
	}
	if w := agt.Ask(v.nick, `PIRCAN/1 WHOAMI`, "WHOAMI"); owner(w) != own.Nick+" confirmed" {
		t.Fatalf("WHOAMI confirmed %v", w)
	}
	// The agent's account can lift nothing: no new owner, no sign-in, no
	// change to what the owner set.
	askErr(t, agt, v.nick, `PIRCAN/1 OWNER {"account":"`+mal.Nick+`"}`, handshake.CodeNotAuthorized)
	askErr(t, agt, v.nick, `PIRCAN/1 LOGIN {"code":"`+code()+`"}`, handshake.CodeNotAuthorized)
	askErr(t, agt, v.nick, `PIRCAN/1 DISOWN {"agent_id":"`+agentID+`"}`, handshake.CodeNotFound)
	if c, _ := ask(t, own, v.nick, `PIRCAN/1 LOGIN {"code":"`+code()+`"}`, "LOGIN"); c["signed_in"] != true {
		t.Fatalf("the owner's LOGIN %v", c)
	}
	_, err := v.svc.SetPolicy(context.Background(), handshake.OwnerActor(own.Nick), agentID, handshake.PolicyDeny, time.Now())
	must(t, err)
	askErr(t, agt, v.nick, `PIRCAN/1 POLICY {"policy":"auto-accept"}`, handshake.CodeNotAuthorized)
	if p, _ := ask(t, agt, v.nick, `PIRCAN/1 POLICY`, "POLICY"); p["policy"] != "deny" || p["owner_set"] != true {
		t.Fatalf("POLICY %v", p)
	}
	// The owner gives it up: the agent's account owns it again.
	if o, _ := ask(t, own, v.nick, `PIRCAN/1 DISOWN {"agent_id":"`+agentID+`"}`, "DISOWN"); owner(o) != agt.Nick+" self" {
		t.Fatalf("DISOWN %v", o)
	}
}

// The bridge's own nick (PIRCAN.md "The bridge's own nick"): a squatter
// holds it when the bridge connects; the bridge comes up as <nick>_0,
// identifies, takes the nick back with NickServ's RECOVER (the squatter is
// renamed), and /readyz's status tells the nick it holds. Requests reach it
// under its own nick again.
func TestBridgeTakesItsNickBack(t *testing.T) {
	t.Parallel()
	n := irctest.Shared(t)
	id := irctest.RandHex(3)
	nick, password := "PIRCAN"+id, "pw-"+irctest.RandHex(8)
	reg := irctest.Dial(t, n, nick, false) // the bridge's account, named after its nick
	reg.Register(password)
	reg.Raw("QUIT")
	squatter := irctest.Dial(t, n, "sq"+id, false)
	takeNick(t, squatter, nick)

	// startBridgeWith returns once the status says the bridge is in the
	// lobby under nick.
	b := startBridgeWith(t, n, false, nil, func(c *pircan.Config) { c.Nick, c.Account, c.Password = nick, nick, password })
	// The squatter was renamed away by the services.
	squatter.Next("the squatter renamed", func(m ircmsg.Message) bool {
		return m.Command == "NICK" && strings.EqualFold(m.Nick(), nick) && !strings.EqualFold(m.Params[0], nick)
	})
	if st := b.Status(); st.Nick != nick {
		t.Fatalf("status %+v", st)
	}
	agent := irctest.Dial(t, n, "ag"+id, false)
	if e := agent.Ask(nick, `PIRCAN/1 ECHO {"text":"hi"}`, "ECHO"); e["text"] != "hi" {
		t.Fatalf("ECHO %v", e)
	}
}

// An account registered again by someone else does not inherit the agent
// (PIRCAN.md "An account registered again"): the victim's account is
// dropped and registered again under the same name (a new
// inspircd.org/account-id); the newcomer gets account_changed for every
// verb, LOGIN included, until the agent's confirmed owner sends REBIND.
func TestReRegisteredAccountIsSuspended(t *testing.T) {
	t.Parallel()
	n := irctest.Shared(t)
	v := startVenueBridge(t, n)
	id := irctest.RandHex(3)
	cs := agents(t, n, []string{"vic" + id, "own" + id}, []bool{false, false})
	vic, own := cs[0], cs[1]
	agentID := vic.Ask(v.nick, `PIRCAN/1 HELLO`, "HELLO")["agent_id"].(string)
	ask(t, vic, v.nick, `PIRCAN/1 OWNER {"account":"`+own.Nick+`"}`, "OWNER")
	ask(t, own, v.nick, `PIRCAN/1 OWN {"agent_id":"`+agentID+`"}`, "OWN")
	// Nothing to confirm while the account is the one bound.
	askErr(t, own, v.nick, `PIRCAN/1 REBIND {"agent_id":"`+agentID+`"}`, handshake.CodeNotFound)

	vic.Raw("PRIVMSG NickServ :DROP " + vic.Nick)
	vic.WaitCommand("901") // logged out: the account is gone
	vic.Raw("QUIT")
	newcomer := irctest.Dial(t, n, "nc"+id, false)
	takeNick(t, newcomer, vic.Nick)
	newcomer.Raw("PRIVMSG NickServ :REGISTER pw-other-" + id + " x@example.org")
	newcomer.WaitCommand("900")
	for _, req := range []string{`PIRCAN/1 WHOAMI`, `PIRCAN/1 INBOX`, `PIRCAN/1 HELLO`, `PIRCAN/1 LOGIN {"code":"BCDF-GHJK"}`,
		`PIRCAN/1 OWNER {"account":"` + newcomer.Nick + `x"}`} {
		askErr(t, newcomer, v.nick, req, pircan.CodeAccountChanged)
	}
	// Another account cannot confirm it; the owner can.
	askErr(t, newcomer, v.nick, `PIRCAN/1 REBIND {"agent_id":"`+agentID+`"}`, pircan.CodeAccountChanged)
	if r, _ := ask(t, own, v.nick, `PIRCAN/1 REBIND {"agent_id":"`+agentID+`"}`, "REBIND"); r["bound"] != true || r["account"] != vic.Nick {
		t.Fatalf("REBIND %v", r)
	}
	if w := newcomer.Ask(v.nick, `PIRCAN/1 WHOAMI`, "WHOAMI"); w["agent_id"] != agentID {
		t.Fatalf("WHOAMI after REBIND %v", w)
	}
}
