package pircan

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/venuehq/venue/handshake"
)

// fakeEvents records subscriptions and lets the test fire an agent's.
type fakeEvents struct {
	mu   sync.Mutex
	subs map[string]func([]byte)
}

func (e *fakeEvents) SubscribeAgent(id string, fn func([]byte)) func() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.subs[id] = fn
	return func() {
		e.mu.Lock()
		delete(e.subs, id)
		e.mu.Unlock()
	}
}

func (e *fakeEvents) subscribed(id string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.subs[id] != nil
}

// notifyLines checks outs are NOTICEs to nick and returns their texts.
func notifyLines(t *testing.T, outs []Out, nick string) []string {
	t.Helper()
	var got []string
	for _, o := range outs {
		if o.Command != "NOTICE" || o.Params[0] != nick {
			t.Fatalf("not a NOTICE to %s: %+v", nick, o)
		}
		got = append(got, o.Params[1])
	}
	return got
}

// NOTIFY: waiting events collapse to one line per type with the current
// count, in a fixed order, to the nick the account was seen with; nothing
// twice; an event while present wakes the bridge; a nick that quit or
// changed is followed; events older than 24 hours are dropped.
func TestNotifier(t *testing.T) {
	t.Parallel()
	f := setupHandshake(t)
	ctx := context.Background()
	ev := &fakeEvents{subs: map[string]func([]byte){}}
	var woken []string
	n := newNotifier(f.h.dir, f.svc, ev, f.clock, slog.New(slog.NewTextHandler(io.Discard, nil)), func(id string) { woken = append(woken, id) })

	// While Bob is away: Alice asks, Bob's owner... Bob accepts from
	// elsewhere (REST), Alice sends two messages.
	rid := one(t, f.asAlice(t, `PIRCAN/1 CONTACT {"to":"`+f.bob+`","purpose":"p","scopes":["message","task:a"]}`), "CONTACT")["request_id"].(string)
	_, err := f.svc.Accept(ctx, handshake.AgentActor(f.bob), rid, handshake.AcceptInput{Scopes: []string{"message"}}, f.clock.Now())
	must(t, err)
	rid2, err := f.svc.Contact(ctx, f.alice, handshake.ContactInput{To: f.bob, Purpose: "tasks", Scopes: []string{"task:b"}}, f.clock.Now())
	must(t, err)
	for _, text := range []string{"one", "two"} {
		_, err := f.svc.Send(ctx, f.alice, handshake.SendInput{To: f.bob, Text: text}, f.clock.Now())
		must(t, err)
	}
	id, outs := n.seen(ctx, sighting{Nick: "Bobby", NickKey: "bobby", AccountKey: "bob", Channel: true})
	got := notifyLines(t, outs, "Bobby")
	want := []string{`PIRCAN/1 NOTIFY {"type":"contact_request","pending":1}`, `PIRCAN/1 NOTIFY {"type":"message","unread":2}`}
	if id != f.bob || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("NOTIFY lines\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, l := range got {
		if strings.Contains(l, "tasks") || strings.Contains(l, "one") || strings.Contains(l, "Alice") || strings.Contains(l, f.alice) {
			t.Fatalf("NOTIFY carries content: %s", l)
		}
	}
	// The nick was recorded; nothing is sent twice.
	if a, _ := f.store.Agent(ctx, f.bob); a.IRC.Nick != "Bobby" {
		t.Fatalf("nick %q", a.IRC.Nick)
	}
	if _, outs := n.seen(ctx, sighting{Nick: "Bobby", NickKey: "bobby", AccountKey: "bob", Channel: true}); len(outs) != 0 {
		t.Fatalf("sent again: %v", outs)
	}
	// Bob is followed: Alice's request being cancelled wakes the bridge.
	if !ev.subscribed(f.bob) {
		t.Fatal("not subscribed to Bob's events")
	}
	_, err = f.svc.Cancel(ctx, handshake.AgentActor(f.alice), rid2.ID, f.clock.Now())
	must(t, err)
	ev.subs[f.bob](nil)
	if len(woken) != 1 || woken[0] != f.bob {
		t.Fatalf("woken %v", woken)
	}
	// A counted type whose count fell to 0 is left out: contact_request
	// (cancelled) is not sent, contact_update is.
	acct, outs := n.woke(ctx, f.bob)
	if got := notifyLines(t, outs, "Bobby"); acct != "bob" || len(got) != 1 || got[0] != `PIRCAN/1 NOTIFY {"type":"contact_update"}` {
		t.Fatalf("woke: %q %q", acct, got)
	}
	// A nick change is followed.
	n.renamed("bobby", "Bob2", "bob2")
	_, err = f.svc.Send(ctx, f.alice, handshake.SendInput{To: f.bob, Text: "three"}, f.clock.Now())
	must(t, err)
	_, outs = n.woke(ctx, f.bob)
	if got := notifyLines(t, outs, "Bob2"); len(got) != 1 || got[0] != `PIRCAN/1 NOTIFY {"type":"message","unread":3}` {
		t.Fatalf("after rename: %q", got)
	}
	// Quit: forgotten and unsubscribed; a wake sends nothing, the events
	// wait for the next sighting.
	n.gone("bob2")
	if ev.subscribed(f.bob) {
		t.Fatal("still subscribed after QUIT")
	}
	_, err = f.svc.Send(ctx, f.alice, handshake.SendInput{To: f.bob, Text: "four"}, f.clock.Now())
	must(t, err)
	if _, outs := n.woke(ctx, f.bob); len(outs) != 0 {
		t.Fatalf("woke after QUIT: %v", outs)
	}
	// Over 24 hours later the event is dropped: nothing to send.
	f.clock.Advance(handshake.NotifyWindow + time.Second)
	if _, outs := n.seen(ctx, sighting{Nick: "Bob", NickKey: "bob", AccountKey: "bob"}); len(outs) != 0 {
		t.Fatalf("a 24-hour-old event was sent: %v", notifyLines(t, outs, "Bob"))
	}
	// Seen only by a request (no shared channel): sent what waits, and
	// followed; a later event first asks the server who holds the nick
	// (WHOX), and goes out when the answer is the account.
	n.gone("bob")
	_, err = f.svc.Send(ctx, f.alice, handshake.SendInput{To: f.bob, Text: "five"}, f.clock.Now())
	must(t, err)
	if _, outs := n.seen(ctx, sighting{Nick: "Bob", NickKey: "bob", AccountKey: "bob"}); len(outs) != 1 || !ev.subscribed(f.bob) {
		t.Fatalf("request sighting: %v, subscribed %v", outs, ev.subscribed(f.bob))
	}
	_, err = f.svc.Send(ctx, f.alice, handshake.SendInput{To: f.bob, Text: "six"}, f.clock.Now())
	must(t, err)
	if _, outs := n.woke(ctx, f.bob); len(outs) != 1 || outs[0].Command != "WHO" || strings.Join(outs[0].Params, " ") != "Bob %tna,"+whoxVerifyToken {
		t.Fatalf("woke a request-seen agent: %v", outs)
	}
	// The nick now holds another account: forgotten, nothing sent to it.
	if _, outs := n.seen(ctx, sighting{Nick: "Bob", NickKey: "bob", AccountKey: "mallory"}); len(outs) != 0 || ev.subscribed(f.bob) {
		t.Fatalf("nick taken by another account: %v, subscribed %v", outs, ev.subscribed(f.bob))
	}
	// An account without an agent: nothing, no subscription.
	if id, outs := n.seen(ctx, sighting{Nick: "Zed", NickKey: "zed", AccountKey: "zed"}); id != "" || len(outs) != 0 {
		t.Fatalf("unregistered account: %q %v", id, outs)
	}
}

// Channel chatter is looked at once a minute per present account; joins
// and requests every time.
func TestNotifierSpokeThrottle(t *testing.T) {
	t.Parallel()
	f := setupHandshake(t)
	ctx := context.Background()
	n := newNotifier(f.h.dir, f.svc, nil, f.clock, slog.New(slog.NewTextHandler(io.Discard, nil)), func(string) {})
	f.agree(t, `["message"]`)
	spoke := sighting{Nick: "Bob", NickKey: "bob", AccountKey: "bob", Channel: true, Spoke: true}
	n.seen(ctx, spoke)
	_, err := f.svc.Send(ctx, f.alice, handshake.SendInput{To: f.bob, Text: "x"}, f.clock.Now())
	must(t, err)
	if _, outs := n.seen(ctx, spoke); len(outs) != 0 {
		t.Fatalf("chatter within a minute looked: %v", outs)
	}
	f.clock.Advance(spokeRecheck)
	if _, outs := n.seen(ctx, spoke); len(outs) != 1 {
		t.Fatalf("chatter a minute later: %v", outs)
	}
	_, err = f.svc.Send(ctx, f.alice, handshake.SendInput{To: f.bob, Text: "y"}, f.clock.Now())
	must(t, err)
	spoke.Spoke = false // a join or a request: every time
	if _, outs := n.seen(ctx, spoke); len(outs) != 1 {
		t.Fatalf("join: %v", outs)
	}
	n.reset()
	if len(n.byAgent) != 0 || len(n.byNick) != 0 {
		t.Fatal("reset kept presence")
	}
}
