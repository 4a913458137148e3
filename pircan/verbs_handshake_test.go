package pircan

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/venuehq/venue/directory"
	"github.com/venuehq/venue/handshake"
	hsmemory "github.com/venuehq/venue/handshake/memory"
	"github.com/venuehq/venue/pircan/line"
	"github.com/venuehq/venue/store"
)

// hsFixture is the handler with the handshake (memory stores, fake clock)
// and two registered IRC agents.
type hsFixture struct {
	*fixture
	svc          *handshake.Service
	portal       *handshake.Portal
	alice, bob   string // agent ids (accounts "alice", "bob")
	aliceN, bobN string // nicks
}

func setupHandshake(t *testing.T) *hsFixture {
	t.Helper()
	f := setup(t)
	svc := &handshake.Service{Store: hsmemory.New(), Agents: f.h.dir.(*directory.Service),
		Accounts: directory.IRCAccounts{Store: f.store}, NewID: directory.NewID}
	f.h.hs, f.h.portal = svc, &handshake.Portal{Service: svc}
	hf := &hsFixture{fixture: f, svc: svc, portal: f.h.portal, aliceN: "Alice", bobN: "Bob"}
	hf.alice = one(t, f.send(t, "Alice", "alice", `PIRCAN/1 HELLO {"name":"Alice"}`), "HELLO")["agent_id"].(string)
	hf.bob = one(t, f.send(t, "Bob", "bob", `PIRCAN/1 HELLO {"name":"Bob"}`), "HELLO")["agent_id"].(string)
	return hf
}

func (f *hsFixture) asAlice(t *testing.T, text string) []reply {
	t.Helper()
	return f.send(t, f.aliceN, "alice", text)
}
func (f *hsFixture) asBob(t *testing.T, text string) []reply {
	t.Helper()
	return f.send(t, f.bobN, "bob", text)
}

// list checks a list reply: items of verb, then one end line; it returns
// the items and the end line.
func list(t *testing.T, rs []reply, verb, end string) ([]map[string]any, map[string]any) {
	t.Helper()
	if len(rs) == 0 || rs[len(rs)-1].verb != end {
		t.Fatalf("want %s items then %s, got %+v", verb, end, rs)
	}
	var items []map[string]any
	for _, r := range rs[:len(rs)-1] {
		if r.verb != verb {
			t.Fatalf("want %s, got %s", verb, r.raw)
		}
		items = append(items, r.obj)
	}
	return items, rs[len(rs)-1].obj
}

// CONTACT's refusals, then a request accepted with narrowed scopes and a
// shorter ttl; the agreement names the other party's IRC account.
func TestContactAcceptAgreements(t *testing.T) {
	t.Parallel()
	f := setupHandshake(t)
	for _, c := range []struct{ req, code string }{
		{`PIRCAN/1 CONTACT {"to":"` + f.alice + `","purpose":"x"}`, handshake.CodeSelfContact},
		{`PIRCAN/1 CONTACT {"to":"agt_nobody","purpose":"x"}`, handshake.CodeUnknownAgent},
		{`PIRCAN/1 CONTACT {"purpose":"x"}`, line.CodeInvalidArgument},
		{`PIRCAN/1 CONTACT {"to":"` + f.bob + `","purpose":"  "}`, line.CodeInvalidArgument},
		{`PIRCAN/1 CONTACT {"to":"` + f.bob + `","purpose":"x","scopes":["write"]}`, handshake.CodeInvalidScope},
		{`PIRCAN/1 CONTACT {"to":"` + f.bob + `","purpose":"x","ttl_days":366}`, line.CodeInvalidArgument},
		{`PIRCAN/1 CONTACT {"to":"` + f.bob + `","purpose":"x","color":"red"}`, line.CodeInvalidArgument},
		{`PIRCAN/1 CONTACT {"to":"` + f.bob + `","purpose":"x","scopes":"message"}`, line.CodeInvalidArgument},
	} {
		wantError(t, f.asAlice(t, c.req), c.code)
	}
	// Nothing was made by the refusals.
	if _, end := list(t, f.asBob(t, `PIRCAN/1 CONTACTS`), "CONTACT-ITEM", "CONTACTS-END"); end["total"] != 0.0 {
		t.Fatalf("refused CONTACTs left requests: %v", end)
	}
	// Not registered: not_registered.
	wantError(t, f.send(t, "carol", "carol", `PIRCAN/1 CONTACTS`), line.CodeNotRegistered)

	c := one(t, f.asAlice(t, `PIRCAN/1 CONTACT {"to":"`+f.bob+`","purpose":"Share data","scopes":["message","task:assess"],"ttl_days":30,"id":"c1"}`), "CONTACT")
	if c["status"] != "pending" || c["re"] != "c1" || c["to"] != f.bob {
		t.Fatalf("CONTACT %v", c)
	}
	rid := c["request_id"].(string)
	wantError(t, f.asAlice(t, `PIRCAN/1 CONTACT {"to":"`+f.bob+`","purpose":"again"}`), handshake.CodeDuplicateRequest)

	items, end := list(t, f.asBob(t, `PIRCAN/1 CONTACTS {"direction":"incoming","id":"l"}`), "CONTACT-ITEM", "CONTACTS-END")
	if len(items) != 1 || items[0]["request_id"] != rid || items[0]["from"] != f.alice || items[0]["purpose"] != "Share data" ||
		items[0]["re"] != "l" || end["returned"] != 1.0 || end["total"] != 1.0 || end["offset"] != 0.0 || end["re"] != "l" {
		t.Fatalf("CONTACTS %v %v", items, end)
	}
	if _, end := list(t, f.asAlice(t, `PIRCAN/1 CONTACTS {"direction":"outgoing","status":"any","offset":1}`), "CONTACT-ITEM", "CONTACTS-END"); end["total"] != 1.0 || end["returned"] != 0.0 {
		t.Fatalf("outgoing page 2: %v", end)
	}
	wantError(t, f.asBob(t, `PIRCAN/1 CONTACTS {"limit":11}`), line.CodeInvalidArgument)
	wantError(t, f.asBob(t, `PIRCAN/1 CONTACTS {"direction":"sideways"}`), line.CodeInvalidArgument)

	// Only the target accepts; never more than asked.
	wantError(t, f.asAlice(t, `PIRCAN/1 ACCEPT {"request_id":"`+rid+`"}`), handshake.CodeNotFound)
	wantError(t, f.asBob(t, `PIRCAN/1 ACCEPT {}`), line.CodeInvalidArgument)
	wantError(t, f.asBob(t, `PIRCAN/1 ACCEPT {"request_id":"`+rid+`","scopes":["resource:read"]}`), handshake.CodeInvalidScope)
	wantError(t, f.asBob(t, `PIRCAN/1 ACCEPT {"request_id":"`+rid+`","ttl_days":31}`), line.CodeInvalidArgument)
	wantError(t, f.asAlice(t, `PIRCAN/1 CANCEL {"request_id":"nope"}`), handshake.CodeNotFound)
	a := one(t, f.asBob(t, `PIRCAN/1 ACCEPT {"request_id":"`+rid+`","scopes":["message"],"ttl_days":7}`), "ACCEPT")
	if a["request_id"] != rid || fmt.Sprint(a["scopes"]) != "[message]" || a["status"] != "active" || a["role"] != "target" {
		t.Fatalf("ACCEPT %v", a)
	}
	if want := handshakeTime(T0.Add(7 * 24 * time.Hour)); a["expires_at"] != want {
		t.Fatalf("ACCEPT expires_at %v, want %s", a["expires_at"], want)
	}
	wantError(t, f.asBob(t, `PIRCAN/1 DECLINE {"request_id":"`+rid+`"}`), handshake.CodeNotPending)
	wantError(t, f.asAlice(t, `PIRCAN/1 CONTACT {"to":"`+f.bob+`","purpose":"more"}`), handshake.CodeAlreadyAgreed)

	items, end = list(t, f.asAlice(t, `PIRCAN/1 AGREEMENTS`), "AGREEMENT", "AGREEMENTS-END")
	with, _ := items[0]["with"].(map[string]any)
	if len(items) != 1 || with["agent_id"] != f.bob || with["name"] != "Bob" || fmt.Sprint(with["irc_accounts"]) != "[bob]" ||
		items[0]["role"] != "requester" || end["total"] != 1.0 {
		t.Fatalf("AGREEMENTS %v %v", items, end)
	}
}

func handshakeTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// A decline stops the requester for 24 hours (cooldown); a cancel is the
// requester's only; a request expires after 7 days.
func TestDeclineCancelCooldownExpiry(t *testing.T) {
	t.Parallel()
	f := setupHandshake(t)
	rid := one(t, f.asAlice(t, `PIRCAN/1 CONTACT {"to":"`+f.bob+`","purpose":"p"}`), "CONTACT")["request_id"].(string)
	wantError(t, f.asBob(t, `PIRCAN/1 CANCEL {"request_id":"`+rid+`"}`), handshake.CodeNotFound)
	if d := one(t, f.asBob(t, `PIRCAN/1 DECLINE {"request_id":"`+rid+`"}`), "DECLINE"); d["status"] != "declined" || d["request_id"] != rid {
		t.Fatalf("DECLINE %v", d)
	}
	f.clock.Advance(handshake.DeclineCooldown - time.Second)
	wantError(t, f.asAlice(t, `PIRCAN/1 CONTACT {"to":"`+f.bob+`","purpose":"p"}`), handshake.CodeCooldown)
	f.clock.Advance(time.Second)
	rid = one(t, f.asAlice(t, `PIRCAN/1 CONTACT {"to":"`+f.bob+`","purpose":"p"}`), "CONTACT")["request_id"].(string)
	if c := one(t, f.asAlice(t, `PIRCAN/1 CANCEL {"request_id":"`+rid+`"}`), "CANCEL"); c["status"] != "cancelled" {
		t.Fatalf("CANCEL %v", c)
	}
	rid = one(t, f.asAlice(t, `PIRCAN/1 CONTACT {"to":"`+f.bob+`","purpose":"p"}`), "CONTACT")["request_id"].(string)
	f.clock.Advance(handshake.RequestLifetime)
	wantError(t, f.asBob(t, `PIRCAN/1 ACCEPT {"request_id":"`+rid+`"}`), handshake.CodeNotPending)
	items, _ := list(t, f.asAlice(t, `PIRCAN/1 CONTACTS {"direction":"outgoing","status":"expired"}`), "CONTACT-ITEM", "CONTACTS-END")
	if len(items) != 1 || items[0]["request_id"] != rid {
		t.Fatalf("expired %v", items)
	}
}

// agree makes an active agreement from alice to bob with scopes.
func (f *hsFixture) agree(t *testing.T, scopes string) string {
	t.Helper()
	rid := one(t, f.asAlice(t, `PIRCAN/1 CONTACT {"to":"`+f.bob+`","purpose":"p","scopes":`+scopes+`}`), "CONTACT")["request_id"].(string)
	return one(t, f.asBob(t, `PIRCAN/1 ACCEPT {"request_id":"`+rid+`"}`), "ACCEPT")["agreement_id"].(string)
}

// SEND needs an agreement; replies chain to 8 hops (the 9th is
// loop_limit); INBOX gives the oldest unread first and marks them read;
// REVOKE ends it for both.
func TestSendInboxHopsRevoke(t *testing.T) {
	t.Parallel()
	f := setupHandshake(t)
	wantError(t, f.asAlice(t, `PIRCAN/1 SEND {"to":"`+f.bob+`","text":"hi"}`), handshake.CodeNotAuthorized)
	agr := f.agree(t, `["message"]`)
	wantError(t, f.asAlice(t, `PIRCAN/1 SEND {"to":"`+f.bob+`","text":"`+strings.Repeat("x", 201)+`"}`), handshake.CodeTooLong)
	wantError(t, f.asAlice(t, `PIRCAN/1 SEND {"to":"`+f.bob+`","text":" "}`), line.CodeInvalidArgument)
	wantError(t, f.asAlice(t, `PIRCAN/1 SEND {"to":"`+f.bob+`","text":"x","reply_to":"msg_nope"}`), handshake.CodeNotFound)

	s := one(t, f.asAlice(t, `PIRCAN/1 SEND {"to":"`+f.bob+`","text":"hop 0","id":"s0"}`), "SEND")
	if s["hop"] != 0.0 || s["agreement_id"] != agr || s["conversation_id"] != s["message_id"] || s["re"] != "s0" {
		t.Fatalf("SEND %v", s)
	}
	conv, last := s["conversation_id"], s["message_id"].(string)
	for hop := 1; hop <= handshake.MaxHops; hop++ {
		send := f.asBob
		if hop%2 == 0 {
			send = f.asAlice
		}
		f.clock.Advance(time.Second)
		s = one(t, send(t, fmt.Sprintf(`PIRCAN/1 SEND {"to":"%s","text":"hop %d","reply_to":"%s"}`, map[bool]string{true: f.bob, false: f.alice}[hop%2 == 0], hop, last)), "SEND")
		if s["hop"] != float64(hop) || s["conversation_id"] != conv {
			t.Fatalf("reply %d: %v", hop, s)
		}
		last = s["message_id"].(string)
	}
	wantError(t, f.asBob(t, `PIRCAN/1 SEND {"to":"`+f.alice+`","text":"hop 9","reply_to":"`+last+`"}`), handshake.CodeLoopLimit)

	// Bob has hops 0, 2, 4, 6, 8 unread: 2 now, then 3, oldest first.
	items, end := list(t, f.asBob(t, `PIRCAN/1 INBOX {"limit":2}`), "MESSAGE", "INBOX-END")
	from, _ := items[0]["from"].(map[string]any)
	if len(items) != 2 || items[0]["text"] != "hop 0" || items[1]["text"] != "hop 2" || from["name"] != "Alice" ||
		from["agent_id"] != f.alice || end["total"] != 5.0 || end["unread"] != 3.0 {
		t.Fatalf("INBOX %v %v", items, end)
	}
	items, end = list(t, f.asBob(t, `PIRCAN/1 INBOX`), "MESSAGE", "INBOX-END")
	if len(items) != 3 || items[2]["hop"] != 8.0 || end["unread"] != 0.0 {
		t.Fatalf("INBOX 2 %v %v", items, end)
	}
	wantError(t, f.asBob(t, `PIRCAN/1 INBOX {"limit":0}`), line.CodeInvalidArgument)

	r := one(t, f.asBob(t, `PIRCAN/1 REVOKE {"agreement_id":"`+agr+`"}`), "REVOKE")
	if r["status"] != "revoked" {
		t.Fatalf("REVOKE %v", r)
	}
	wantError(t, f.asAlice(t, `PIRCAN/1 SEND {"to":"`+f.bob+`","text":"still?"}`), handshake.CodeNotAuthorized)
	wantError(t, f.asAlice(t, `PIRCAN/1 REVOKE {"agreement_id":"`+agr+`"}`), handshake.CodeNotActive)
	if items, _ := list(t, f.asAlice(t, `PIRCAN/1 AGREEMENTS`), "AGREEMENT", "AGREEMENTS-END"); len(items) != 0 {
		t.Fatalf("active agreements after REVOKE: %v", items)
	}
	if items, _ := list(t, f.asAlice(t, `PIRCAN/1 AGREEMENTS {"all":true}`), "AGREEMENT", "AGREEMENTS-END"); len(items) != 1 || items[0]["status"] != "revoked" {
		t.Fatalf("all agreements after REVOKE: %v", items)
	}
}

// A long text from REST reaches IRC whole: the MESSAGE line carries its
// head and "more", MESSAGE-MORE lines the rest, its identifiers whole.
func TestInboxSendsLongTextWhole(t *testing.T) {
	t.Parallel()
	f := setupHandshake(t)
	f.agree(t, `["message"]`)
	long := strings.Repeat("é水", 2000)
	m, err := f.svc.Send(context.Background(), f.alice, handshake.SendInput{To: f.bob, Text: long}, f.clock.Now())
	must(t, err)
	rs := f.asBob(t, `PIRCAN/1 INBOX`)
	if rs[0].verb != "MESSAGE" || rs[0].obj["more"] != true || rs[0].obj["message_id"] != m.ID || rs[0].obj["conversation_id"] != m.ID ||
		len(rs[0].obj["text"].(string)) < 50 || rs[len(rs)-1].verb != "INBOX-END" {
		t.Fatalf("long MESSAGE %v", rs[0])
	}
	text := ""
	for _, r := range rs[:len(rs)-1] {
		if r.obj["message_id"] != m.ID {
			t.Fatalf("line %s", r.raw)
		}
		text += r.obj["text"].(string)
	}
	if text != long || rs[len(rs)-2].verb != "MESSAGE-MORE" || rs[len(rs)-2].obj["more"] != nil {
		t.Fatalf("%d lines, %d of %d bytes", len(rs), len(text), len(long))
	}
}

// POLICY: read, set, refused when bad; owner-decides set by the owner
// binds the agent; deny declines at once; auto-accept accepts message.
func TestPolicy(t *testing.T) {
	t.Parallel()
	f := setupHandshake(t)
	if p := one(t, f.asBob(t, `PIRCAN/1 POLICY`), "POLICY"); p["policy"] != "agent-decides" || p["agent_id"] != f.bob {
		t.Fatalf("POLICY %v", p)
	}
	wantError(t, f.asBob(t, `PIRCAN/1 POLICY {"policy":"maybe"}`), line.CodeInvalidArgument)
	one(t, f.asBob(t, `PIRCAN/1 POLICY {"policy":"deny"}`), "POLICY")
	if c := one(t, f.asAlice(t, `PIRCAN/1 CONTACT {"to":"`+f.bob+`","purpose":"p"}`), "CONTACT"); c["status"] != "declined" {
		t.Fatalf("CONTACT to deny %v", c)
	}
	one(t, f.asAlice(t, `PIRCAN/1 POLICY {"policy":"auto-accept"}`), "POLICY")
	if c := one(t, f.asBob(t, `PIRCAN/1 CONTACT {"to":"`+f.alice+`","purpose":"p"}`), "CONTACT"); c["status"] != "accepted" || c["agreement_id"] == nil {
		t.Fatalf("CONTACT to auto-accept %v", c)
	}
	// Bob's owner (account bob) sets owner-decides in the portal: Bob can
	// no longer change it, nor accept.
	_, err := f.svc.SetPolicy(context.Background(), handshake.OwnerActor("bob"), f.bob, handshake.PolicyOwnerDecides, f.clock.Now())
	must(t, err)
	wantError(t, f.asBob(t, `PIRCAN/1 POLICY {"policy":"agent-decides"}`), handshake.CodeNotAuthorized)
	if p := one(t, f.asBob(t, `PIRCAN/1 POLICY`), "POLICY"); p["policy"] != "owner-decides" || p["owner_set"] != true {
		t.Fatalf("POLICY %v", p)
	}
	f.clock.Advance(handshake.DeclineCooldown)
	rid := one(t, f.asAlice(t, `PIRCAN/1 CONTACT {"to":"`+f.bob+`","purpose":"p","scopes":["task:x"]}`), "CONTACT")["request_id"].(string)
	wantError(t, f.asBob(t, `PIRCAN/1 ACCEPT {"request_id":"`+rid+`"}`), handshake.CodeNotAuthorized)
}

// LOGIN approves the browser showing the code, once, for the caller's
// account; LOGOUT ends the account's sessions.
func TestLoginLogout(t *testing.T) {
	t.Parallel()
	f := setupHandshake(t)
	ctx := context.Background()
	st, err := f.portal.Start(ctx, "203.0.113.7", "Mozilla/5.0 Test", f.clock.Now())
	must(t, err)
	wantError(t, f.send(t, "anon", "", `PIRCAN/1 LOGIN {"code":"`+st.Code+`"}`), line.CodeNotIdentified)
	wantError(t, f.asBob(t, `PIRCAN/1 LOGIN {}`), line.CodeInvalidArgument)
	wantError(t, f.asBob(t, `PIRCAN/1 LOGIN {"code":"BCDF-GHJ"}`), line.CodeInvalidArgument)
	wantError(t, f.asBob(t, `PIRCAN/1 LOGIN {"code":"BBBB-BBBB"}`), handshake.CodeNotFound)
	// An account with no agent may sign in (it owns nothing yet).
	l := one(t, f.send(t, "Dana", "DANA", `PIRCAN/1 LOGIN {"code":"`+strings.ToLower(st.Code)+`","id":"l"}`), "LOGIN")
	if l["signed_in"] != true || l["account"] != "dana" || l["browser"] != nil || l["started_at"] != "09:00 UTC" ||
		l["re"] != "l" || !strings.Contains(l["warning"].(string), "LOGOUT") {
		t.Fatalf("LOGIN %v", l)
	}
	owner, err := f.portal.Owner(ctx, st.Secret, f.clock.Now())
	if err != nil || owner != "dana" {
		t.Fatalf("portal owner %q %v", owner, err)
	}
	wantError(t, f.asBob(t, `PIRCAN/1 LOGIN {"code":"`+st.Code+`"}`), handshake.CodeNotFound) // used
	st2, err := f.portal.Start(ctx, "203.0.113.7", "B", f.clock.Now())
	must(t, err)
	f.clock.Advance(handshake.CodeLifetime)
	wantError(t, f.asBob(t, `PIRCAN/1 LOGIN {"code":"`+st2.Code+`"}`), handshake.CodeNotFound) // expired
	if o := one(t, f.send(t, "Dana", "dana", `PIRCAN/1 LOGOUT`), "LOGOUT"); o["sessions_ended"] != 1.0 {
		t.Fatalf("LOGOUT %v", o)
	}
	if _, err := f.portal.Owner(ctx, st.Secret, f.clock.Now()); err == nil {
		t.Fatal("the session survived LOGOUT")
	}
	// 10 attempts an hour per account, wrong ones included.
	for range handshake.LoginAttemptsPerHour - 4 { // 4 made above: a malformed, an unknown, a used, an expired code
		wantError(t, f.asBob(t, `PIRCAN/1 LOGIN {"code":"BBBB-BBBB"}`), handshake.CodeNotFound)
	}
	wantError(t, f.asBob(t, `PIRCAN/1 LOGIN {"code":"BBBB-BBBB"}`), line.CodeRateLimited)
}

// TASKS and COMPLETE; RESOURCES; REPORT and its refusals.
func TestTasksResourcesReport(t *testing.T) {
	t.Parallel()
	f := setupHandshake(t)
	ctx := context.Background()
	f.agree(t, `["task:assess","resource:read"]`)
	task, err := f.svc.CreateTask(ctx, f.alice, handshake.TaskInput{To: f.bob, Skill: "assess", Text: "Assess sample 4"}, f.clock.Now())
	must(t, err)
	items, end := list(t, f.asBob(t, `PIRCAN/1 TASKS`), "TASK", "TASKS-END")
	if len(items) != 1 || items[0]["task_id"] != task.ID || items[0]["skill"] != "assess" || items[0]["text"] != "Assess sample 4" || end["total"] != 1.0 {
		t.Fatalf("TASKS %v %v", items, end)
	}
	wantError(t, f.asBob(t, `PIRCAN/1 COMPLETE {"task_id":"`+task.ID+`","outcome":"done"}`), line.CodeInvalidArgument)
	wantError(t, f.asAlice(t, `PIRCAN/1 COMPLETE {"task_id":"`+task.ID+`","outcome":"completed"}`), handshake.CodeNotFound)
	if c := one(t, f.asBob(t, `PIRCAN/1 COMPLETE {"task_id":"`+task.ID+`","outcome":"completed","text":"Low risk."}`), "COMPLETE"); c["status"] != "completed" {
		t.Fatalf("COMPLETE %v", c)
	}
	wantError(t, f.asBob(t, `PIRCAN/1 COMPLETE {"task_id":"`+task.ID+`","outcome":"failed"}`), handshake.CodeNotPending)

	_, err = f.svc.AddResource(ctx, f.bob, handshake.ResourceInput{Title: "Ammonia safety", Tags: []string{"safety"}, Access: handshake.AccessAgreement, Content: "abc"}, f.clock.Now())
	must(t, err)
	items, end = list(t, f.asAlice(t, `PIRCAN/1 RESOURCES {"tag":"SAFETY"}`), "RESOURCE", "RESOURCES-END")
	if len(items) != 1 || items[0]["readable"] != true || items[0]["size"] != 3.0 || items[0]["by"] != f.bob || end["total"] != 1.0 {
		t.Fatalf("RESOURCES %v %v", items, end)
	}
	wantError(t, f.asAlice(t, `PIRCAN/1 RESOURCES {"q":"`+strings.Repeat("q", 101)+`"}`), line.CodeTooLong)

	wantError(t, f.asAlice(t, `PIRCAN/1 REPORT {"agent_id":"`+f.alice+`","category":"spam"}`), handshake.CodeSelfReport)
	wantError(t, f.asAlice(t, `PIRCAN/1 REPORT {"agent_id":"`+f.bob+`","category":"rude"}`), line.CodeInvalidArgument)
	wantError(t, f.asAlice(t, `PIRCAN/1 REPORT {"agent_id":"agt_nobody","category":"spam"}`), handshake.CodeUnknownAgent)
	r := one(t, f.asAlice(t, `PIRCAN/1 REPORT {"agent_id":"`+f.bob+`","category":"spam","details":"ads"}`), "REPORT")
	if r["agent_id"] != f.bob || r["open"] != true || r["report_id"] == nil {
		t.Fatalf("REPORT %v", r)
	}
	wantError(t, f.asAlice(t, `PIRCAN/1 REPORT {"agent_id":"`+f.bob+`","category":"abuse"}`), handshake.CodeDuplicateReport)
}

// HELP lists the handshake verbs when the bridge has the handshake.
func TestHelpListsHandshakeVerbs(t *testing.T) {
	t.Parallel()
	f := setupHandshake(t)
	m := one(t, f.asBob(t, `PIRCAN/1 HELP`), "HELP")
	if !strings.Contains(fmt.Sprint(m["verbs"]), "CONTACT CONTACTS ACCEPT") || !strings.Contains(fmt.Sprint(m["verbs"]), "LOGIN LOGOUT") {
		t.Fatalf("HELP %v", m)
	}
}

// The handshake's limits reach IRC with their codes: conversation_budget
// (40 messages in a conversation an hour), rate_limited (10 requests an
// hour), too_many_pending (20).
func TestHandshakeLimitsOnIRC(t *testing.T) {
	t.Parallel()
	f := setupHandshake(t)
	ctx := context.Background()
	f.agree(t, `["message"]`)
	root, err := f.svc.Send(ctx, f.bob, handshake.SendInput{To: f.alice, Text: "root"}, f.clock.Now())
	must(t, err)
	for range handshake.ConversationPerHour - 1 {
		_, err := f.svc.Send(ctx, f.bob, handshake.SendInput{To: f.alice, Text: "r", ReplyTo: root.ID}, f.clock.Now())
		must(t, err)
	}
	wantError(t, f.asAlice(t, `PIRCAN/1 SEND {"to":"`+f.bob+`","text":"one more","reply_to":"`+root.ID+`"}`), handshake.CodeConversationBudget)

	f.clock.Advance(time.Hour)
	for i := range 21 {
		must(t, f.store.CreateAgent(ctx, store.Agent{ID: fmt.Sprintf("agt_v%02d", i), Name: "V", Role: "bouncer", KeyHash: fmt.Sprint("kh", i), CreatedAt: T0}))
	}
	contact := func(i int) []reply {
		return f.asAlice(t, fmt.Sprintf(`PIRCAN/1 CONTACT {"to":"agt_v%02d","purpose":"p"}`, i))
	}
	for i := range 10 {
		one(t, contact(i), "CONTACT")
	}
	wantError(t, contact(10), line.CodeRateLimited)
	f.clock.Advance(time.Hour)
	for i := 10; i < 20; i++ {
		one(t, contact(i), "CONTACT")
	}
	f.clock.Advance(time.Hour)
	wantError(t, contact(20), handshake.CodeTooManyPending)
}

// INBOX marks a message read only when its last line was sent: lines
// never sent (dropped because the nick changed hands) leave it unread.
func TestInboxReadOnlyOnceSent(t *testing.T) {
	t.Parallel()
	f := setupHandshake(t)
	c := one(t, f.asAlice(t, `PIRCAN/1 CONTACT {"to":"`+f.bob+`","purpose":"x"}`), "CONTACT")
	one(t, f.asBob(t, `PIRCAN/1 ACCEPT {"request_id":"`+c["request_id"].(string)+`"}`), "ACCEPT")
	one(t, f.asAlice(t, `PIRCAN/1 SEND {"to":"`+f.bob+`","text":"secret"}`), "SEND")
	in := Incoming{Nick: f.bobN, NickKey: Fold("rfc1459", f.bobN), Account: "bob", AccountKey: "bob", Text: "PIRCAN/1 INBOX"}
	for range 2 { // built, never sent
		if outs := f.h.handle(context.Background(), in); len(outs) != 2 || outs[0].Sent == nil || outs[1].Sent != nil {
			t.Fatalf("INBOX lines %+v", outs)
		}
	}
	items, end := list(t, f.asBob(t, `PIRCAN/1 INBOX`), "MESSAGE", "INBOX-END") // sent
	if len(items) != 1 || items[0]["text"] != "secret" || end["unread"] != 0.0 {
		t.Fatalf("INBOX %v %v", items, end)
	}
	if items, _ = list(t, f.asBob(t, `PIRCAN/1 INBOX`), "MESSAGE", "INBOX-END"); len(items) != 0 {
		t.Fatalf("read twice: %v", items)
	}
}
