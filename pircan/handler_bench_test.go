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
)

// BenchmarkHandle: one request through the rate limit, the codec, the
// directory and the fitting of replies (memory store; no IRC).
func BenchmarkHandle(b *testing.B) {
	for _, req := range []string{`PIRCAN/1 ECHO {"text":"hello","id":"r1"}`, `PIRCAN/1 FIND {"q":"agent","limit":10}`} {
		b.Run(req[9:13], func(b *testing.B) {
			f := setup(b)
			f.h.lim.l.PerRequester = 1 << 30
			ctx := context.Background()
			for i := range 100 {
				acct := fmt.Sprintf("a%d", i)
				f.h.handle(ctx, Incoming{Nick: acct, NickKey: acct, Account: acct, AccountKey: acct,
					Text: fmt.Sprintf(`PIRCAN/1 HELLO {"name":"agent %d","description":"an agent","capabilities":["x","y"]}`, i)})
				f.clock.Advance(2 * time.Minute) // past the registration limit's hour in time
			}
			in := Incoming{Nick: "a0", NickKey: "a0", Account: "a0", AccountKey: "a0", Text: req}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if outs := f.h.handle(ctx, in); len(outs) == 0 {
					b.Fatal("no reply")
				}
			}
		})
	}
}

// BenchmarkHandleHandshake: SEND (an agreement checked, a message
// written, its event queued) and INBOX of 5 through the handler, on the
// memory stores; and taking NOTIFY (the collapse of waiting events). The
// memory store scans its messages, so figures grow with b.N: compare runs
// of one -benchtime (2000x).
func BenchmarkHandleHandshake(b *testing.B) {
	setupBench := func(b *testing.B) (*fixture, *handshake.Service, string, string) {
		f := setup(b)
		f.h.lim.l.PerRequester = 1 << 30
		svc := &handshake.Service{Store: hsmemory.New(), Agents: f.h.dir.(*directory.Service),
			Accounts: directory.IRCAccounts{Store: f.store}, NewID: directory.NewID}
		f.h.hs, f.h.portal = svc, &handshake.Portal{Service: svc}
		ctx := context.Background()
		var ids []string
		for _, acct := range []string{"alice", "bob"} {
			f.h.handle(ctx, Incoming{Nick: acct, NickKey: acct, Account: acct, AccountKey: acct, Text: "PIRCAN/1 HELLO"})
			a, err := f.store.AgentByIRCAccount(ctx, acct)
			if err != nil {
				b.Fatal(err)
			}
			ids = append(ids, a.ID)
		}
		r, err := svc.Contact(ctx, ids[0], handshake.ContactInput{To: ids[1], Purpose: "p", TTLDays: handshake.MaxTTLDays}, T0)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := svc.Accept(ctx, handshake.AgentActor(ids[1]), r.ID, handshake.AcceptInput{}, T0); err != nil {
			b.Fatal(err)
		}
		return f, svc, ids[0], ids[1]
	}
	b.Run("SEND", func(b *testing.B) {
		f, _, _, bob := setupBench(b)
		in := Incoming{Nick: "alice", NickKey: "alice", Account: "alice", AccountKey: "alice",
			Text: `PIRCAN/1 SEND {"to":"` + bob + `","text":"Sample data is ready."}`}
		b.ReportAllocs()
		for b.Loop() {
			f.clock.Advance(time.Minute) // under 120 an hour
			if outs := f.h.handle(context.Background(), in); len(outs) != 1 || !strings.Contains(outs[0].Params[1], " SEND ") {
				b.Fatalf("SEND answered %v", outs)
			}
		}
	})
	b.Run("INBOX", func(b *testing.B) {
		f, svc, alice, bob := setupBench(b)
		in := Incoming{Nick: "bob", NickKey: "bob", Account: "bob", AccountKey: "bob", Text: `PIRCAN/1 INBOX`}
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			f.clock.Advance(3 * time.Minute) // 100 an hour, under 120
			for range 5 {
				if _, err := svc.Send(context.Background(), alice, handshake.SendInput{To: bob, Text: "hello"}, f.clock.Now()); err != nil {
					b.Fatal(err)
				}
			}
			b.StartTimer()
			if outs := f.h.handle(context.Background(), in); len(outs) != 6 {
				b.Fatalf("INBOX answered %d lines", len(outs))
			}
		}
	})
	b.Run("NOTIFY", func(b *testing.B) {
		f, svc, alice, bob := setupBench(b)
		n := newNotifier(f.h.dir, svc, nil, f.clock, f.h.log, func(string) {})
		s := sighting{Nick: "bob", NickKey: "bob", AccountKey: "bob"}
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			f.clock.Advance(time.Minute)
			if _, err := svc.Send(context.Background(), alice, handshake.SendInput{To: bob, Text: "hello"}, f.clock.Now()); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			if _, outs := n.seen(context.Background(), s); len(outs) != 1 {
				b.Fatalf("NOTIFY: %d lines", len(outs))
			}
			b.StopTimer()
			if _, err := svc.Inbox(context.Background(), bob, 5, f.clock.Now()); err != nil { // read: one unread at a time
				b.Fatal(err)
			}
			b.StartTimer()
		}
	})
}
