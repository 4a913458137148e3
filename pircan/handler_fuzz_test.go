package pircan

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/venuehq/venue/directory"
	"github.com/venuehq/venue/handshake"
	hsmemory "github.com/venuehq/venue/handshake/memory"
	"github.com/venuehq/venue/pircan/line"
)

// FuzzHandle: whatever a request holds, every line the bridge would send
// is free of CR, LF and NUL, and every reply is one valid line of at most
// 350 bytes.
func FuzzHandle(f *testing.F) {
	for _, s := range []string{
		`PIRCAN/1 HELLO {"name":"a\r\nQUIT","capabilities":["\u0000"],"card_url":"https://x.org/\n"}`,
		"PIRCAN/1 ECHO {\"text\":\"\\r\\nPRIVMSG #x :hi\\u0000\"}", `PIRCAN/1 FIND {"q":"\u2028"}`,
		`PIRCAN/1 JOIN {"channel":"#a\r\nb"}`, "help", "PIRCAN/1 WHOAMI", `PIRCAN/1 CHANNELS {"q":"é"}`,
		"PIRCAN/1 ECHO {\"text\":\"\xff\xfe\"}", `PIRCAN/1 HELLO {"name":"` + strings.Repeat("😀", 80) + `"}`,
	} {
		f.Add(s, "acct")
		f.Add(s, "")
	}
	fx := setup(f)
	ctx := context.Background()
	if err := fx.st.PutChannel(ctx, Channel{Name: "#a", Topic: "t\r\n"}, T0); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text, account string) {
		fx.clock.Advance(time.Minute) // a fresh rate-limit window each time
		in := Incoming{Nick: "n", NickKey: "n", Account: account, AccountKey: Fold("rfc1459", account), Text: text}
		for _, o := range fx.h.handle(ctx, in) {
			for _, p := range o.Params {
				if strings.ContainsAny(p, "\r\n\x00") {
					t.Fatalf("%s param %q holds CR, LF or NUL", o.Command, p)
				}
			}
			if o.Command == "NOTICE" && strings.HasPrefix(o.Params[1], line.Prefix) && !line.Valid(o.Params[1], line.MaxReplyBytes) {
				t.Fatalf("invalid reply %q", o.Params[1])
			}
		}
	})
}

// FuzzHandshakeVerbs: the same for the handshake verbs, on a handler with
// the handshake and two agents with an agreement and a message whose text
// (sent over REST) holds CR, LF and NUL-like characters.
func FuzzHandshakeVerbs(f *testing.F) {
	for _, s := range []string{
		`PIRCAN/1 CONTACT {"to":"x","purpose":"a\r\nQUIT","scopes":["task:\n"]}`, `PIRCAN/1 INBOX`, `PIRCAN/1 AGREEMENTS {"all":true}`,
		`PIRCAN/1 SEND {"to":"x","text":"\r\nPRIVMSG #x :hi"}`, `PIRCAN/1 CONTACTS {"status":"any","direction":"outgoing"}`,
		`PIRCAN/1 LOGIN {"code":"\u0000"}`, `PIRCAN/1 REPORT {"agent_id":"x","category":"spam","details":"` + strings.Repeat("😀", 200) + `"}`,
		`PIRCAN/1 RESOURCES {"q":"\u2028"}`, `PIRCAN/1 POLICY {"policy":"deny"}`, `PIRCAN/1 TASKS`, `PIRCAN/1 LOGOUT`,
	} {
		f.Add(s, "alice")
		f.Add(s, "")
	}
	fx := setup(f)
	ctx := context.Background()
	svc := &handshake.Service{Store: hsmemory.New(), Agents: fx.h.dir.(*directory.Service),
		Accounts: directory.IRCAccounts{Store: fx.store}, NewID: directory.NewID}
	fx.h.hs, fx.h.portal = svc, &handshake.Portal{Service: svc}
	for _, acct := range []string{"alice", "bob"} {
		fx.h.handle(ctx, Incoming{Nick: acct, NickKey: acct, Account: acct, AccountKey: acct, Text: "PIRCAN/1 HELLO"})
	}
	alice, err := fx.store.AgentByIRCAccount(ctx, "alice")
	if err != nil {
		f.Fatal(err)
	}
	bob, err := fx.store.AgentByIRCAccount(ctx, "bob")
	if err != nil {
		f.Fatal(err)
	}
	r, err := svc.Contact(ctx, bob.ID, handshake.ContactInput{To: alice.ID, Purpose: "p\r\n", Scopes: []string{"message"}}, T0)
	if err != nil {
		f.Fatal(err)
	}
	if _, err := svc.Accept(ctx, handshake.AgentActor(alice.ID), r.ID, handshake.AcceptInput{}, T0); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text, account string) {
		fx.clock.Advance(time.Minute)
		if _, err := svc.Send(ctx, bob.ID, handshake.SendInput{To: alice.ID, Text: "a\r\n\u2028b" + strings.Repeat("é", 300)}, fx.clock.Now()); err != nil {
			t.Fatal(err)
		}
		in := Incoming{Nick: "n", NickKey: "n", Account: account, AccountKey: Fold("rfc1459", account), Text: text}
		for _, o := range fx.h.handle(ctx, in) {
			for _, p := range o.Params {
				if strings.ContainsAny(p, "\r\n\x00") {
					t.Fatalf("%s param %q holds CR, LF or NUL", o.Command, p)
				}
			}
			if o.Command == "NOTICE" && strings.HasPrefix(o.Params[1], line.Prefix) && !line.Valid(o.Params[1], line.MaxReplyBytes) {
				t.Fatalf("invalid reply %q", o.Params[1])
			}
		}
	})
}
