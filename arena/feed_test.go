package arena

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/venuehq/venue/bus"
	"github.com/venuehq/venue/negotiation"
)

func liveState(t *testing.T, arena bool) negotiation.State {
	t.Helper()
	brand := negotiation.Party{AgentID: "agt_b", Name: "Brand", Reputation: 2}
	bouncer := negotiation.Party{AgentID: "agt_k", Name: "Bouncer", Reputation: -5}
	st := negotiation.NewRequest("neg_1", "off_1", json.RawMessage(`{"title":"Spring"}`), brand, bouncer, arena, t0)
	if _, err := st.Start(t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	return st
}

func TestEventOfAndSummary(t *testing.T) {
	t.Parallel()
	st := liveState(t, true)
	if got := EventOf(st, negotiation.Outcome{Started: true}); got != EventStarted {
		t.Fatalf("start: %q", got)
	}
	f, werr := negotiation.DecodeFrame([]byte(`{"type":"propose_terms","terms":{"amount_usd":3200.5},"content":"SECRET"}`))
	if werr != nil {
		t.Fatal(werr)
	}
	out, err := st.Apply("agt_b", f, t0.Add(2*time.Second), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := EventOf(st, out); got != EventUpdated {
		t.Fatalf("propose: %q", got)
	}
	s := Summarize(st)
	if s.Title != "Spring" || *s.StandingAmountUSD != "3200.50" || *s.StandingBy != "agt_b" || *s.Turn != "agt_k" ||
		s.LastActivityAt != "2026-11-30T09:00:02.000Z" || s.LastSeq != 1 || s.Brand.Reputation != 2 || s.DealAmountUSD != nil {
		t.Fatalf("summary %+v", s)
	}
	// The summary carries no content: nothing said in the room.
	if b, _ := json.Marshal(s); strings.Contains(string(b), "SECRET") {
		t.Fatalf("summary leaks content: %s", b)
	}
	if got := EventOf(liveState(t, false), negotiation.Outcome{Started: true}); got != "" {
		t.Fatalf("a live negotiation in the arena feed: %q", got)
	}
	if got := EventOf(st, negotiation.Outcome{}); got != "" {
		t.Fatalf("nothing changed: %q", got)
	}
	if got := EventOf(st, negotiation.Outcome{Ended: true, Entries: out.Entries}); got != EventEnded {
		t.Fatalf("ended: %q", got)
	}
}

// TestFeed: a feed socket gets what is published on the bus, and a resync
// when the bus says it may have lost messages.
func TestFeed(t *testing.T) {
	t.Parallel()
	b := bus.NewLocal()
	f := NewFeed(b, nil)
	srv := httptest.NewServer(f)
	defer srv.Close()
	defer f.Close()
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	// The subscription is in place once the upgrade returned; publish
	// until the socket is registered (the handler runs concurrently).
	st := liveState(t, true)
	got := make(chan map[string]any, 16)
	go func() {
		for {
			var m map[string]any
			if err := ws.ReadJSON(&m); err != nil {
				close(got)
				return
			}
			got <- m
		}
	}()
	deadline := time.After(5 * time.Second)
	for received := false; !received; {
		f.Publish(context.Background(), st, negotiation.Outcome{Started: true})
		select {
		case m := <-got:
			if m["type"] != EventStarted || m["negotiation"].(map[string]any)["negotiation_id"] != "neg_1" {
				t.Fatalf("frame %v", m)
			}
			received = true
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			t.Fatal("no feed frame")
		}
	}
	_ = b.Publish(context.Background(), Topic, nil)
	resynced := false
	for m := range got {
		if m["type"] == EventResync {
			resynced = true
			break
		}
		if m["type"] != EventStarted {
			t.Fatalf("frame %v", m)
		}
	}
	if !resynced {
		t.Fatal("the socket closed before the resync")
	}
	// Closing the feed closes its sockets with 1001.
	f.Close()
	for range got {
	}
	if _, _, err := ws.ReadMessage(); !websocket.IsCloseError(err, websocket.CloseGoingAway) {
		t.Fatalf("after Close: %v", err)
	}
}

// countingBus counts the publishes on a Local bus.
type countingBus struct {
	*bus.Local
	n atomic.Int64
}

func (c *countingBus) Publish(ctx context.Context, topic string, data []byte) error {
	c.n.Add(1)
	return c.Local.Publish(ctx, topic, data)
}

// TestFeedIdleWithoutSockets: with no feed socket anywhere the feed
// publishes nothing (and subscribes to nothing); with one it publishes, and
// after the last one closes it stops again.
func TestFeedIdleWithoutSockets(t *testing.T) {
	t.Parallel()
	b := &countingBus{Local: bus.NewLocal()}
	f := NewFeed(b, nil)
	defer f.Close()
	st := liveState(t, true)
	f.Publish(context.Background(), st, negotiation.Outcome{Started: true})
	if n := b.n.Load(); n != 0 || b.Watched(Topic) {
		t.Fatalf("no socket: %d publishes, subscribed %v", n, b.Watched(Topic))
	}
	srv := httptest.NewServer(f)
	defer srv.Close()
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	// The handler joins after the upgrade returned: wait for the subscription.
	for deadline := time.Now().Add(5 * time.Second); !b.Watched(Topic); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the socket never subscribed the feed")
		}
	}
	f.Publish(context.Background(), st, negotiation.Outcome{Started: true})
	var m map[string]any
	if err := ws.ReadJSON(&m); err != nil || m["type"] != EventStarted {
		t.Fatalf("with a socket: %v %v", m, err)
	}
	ws.Close()
	for deadline := time.Now().Add(5 * time.Second); b.Watched(Topic); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("still subscribed after the last socket closed")
		}
	}
	before := b.n.Load()
	f.Publish(context.Background(), st, negotiation.Outcome{Started: true})
	if n := b.n.Load(); n != before {
		t.Fatalf("published %d with no socket left", n-before)
	}
}
