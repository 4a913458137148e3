package hub

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/venuehq/venue/bus"
	"github.com/venuehq/venue/bus/bustest"
	"github.com/venuehq/venue/bus/redisbus"
	"github.com/venuehq/venue/clock"
	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/store/memory"
	"github.com/venuehq/venue/timers"
)

// wait bounds how long a test waits for something that should happen at
// once; it only fails a broken hub, never a slow machine.
const wait = 10 * time.Second

var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

// sink is a Transport that records what it is given.
type sink struct {
	mu     sync.Mutex
	frames [][]byte
	closed int
	got    chan []byte
}

func newSink() *sink { return &sink{got: make(chan []byte, 1024)} }

func (s *sink) Write(b []byte) bool {
	s.mu.Lock()
	s.frames = append(s.frames, b)
	s.mu.Unlock()
	s.got <- b
	return true
}

func (s *sink) Close(code int, _ string) {
	s.mu.Lock()
	s.closed = code
	s.mu.Unlock()
}

// next returns the next frame of type typ, failing after wait.
func (s *sink) next(t *testing.T, typ string) map[string]any {
	t.Helper()
	deadline := time.After(wait)
	for {
		select {
		case b := <-s.got:
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatalf("frame %s: %v", b, err)
			}
			if m["type"] == typ {
				return m
			}
		case <-deadline:
			t.Fatalf("no %s within %v", typ, wait)
		}
	}
}

// gatedStore blocks Transcript reads of one negotiation until released.
type gatedStore struct {
	store.Store
	gated   string
	entered chan struct{}
	release chan struct{}
}

func (g *gatedStore) Transcript(ctx context.Context, id string, since int64) ([]negotiation.Entry, error) {
	if id == g.gated {
		g.entered <- struct{}{}
		select {
		case <-g.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return g.Store.Transcript(ctx, id, since)
}

type fixture struct {
	hub   *Hub
	store *gatedStore
	clock *clock.Fake
}

func setup(t *testing.T) *fixture { return setupOn(t, bus.NewLocal()) }

func setupOn(t *testing.T, b bus.Bus) *fixture {
	t.Helper()
	clk := clock.NewFake(t0)
	gs := &gatedStore{Store: memory.New(), entered: make(chan struct{}, 16), release: make(chan struct{})}
	h := New(Config{Store: gs, Bus: b, Timers: timers.NewLocal(clk), Clock: clk})
	return &fixture{hub: h, store: gs, clock: clk}
}

// redisBus is the Redis bus under a test prefix: one delivery goroutine for
// every topic of the node, as in production.
func redisBus(t *testing.T) bus.Bus {
	t.Helper()
	url := bustest.RedisURL(t)
	b, err := redisbus.New(context.Background(), url, redisbus.Options{Prefix: bustest.KeyPrefix(t, url)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// live creates a live negotiation between two new parties and returns it.
func (f *fixture) live(t *testing.T, id string) negotiation.State {
	t.Helper()
	ctx := context.Background()
	brand := negotiation.Party{AgentID: id + "-brand", Name: "B"}
	bouncer := negotiation.Party{AgentID: id + "-bouncer", Name: "K"}
	for _, p := range []negotiation.Party{brand, bouncer} {
		role := negotiation.RoleBrand
		if strings.HasSuffix(p.AgentID, "bouncer") {
			role = negotiation.RoleBouncer
		}
		if err := f.store.CreateAgent(ctx, store.Agent{ID: p.AgentID, Name: p.Name, Role: role, KeyHash: p.AgentID, CreatedAt: t0}); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.store.CreateOffer(ctx, store.Offer{ID: "off-" + id, Brand: brand.AgentID, Bouncer: bouncer.AgentID, Body: json.RawMessage(`{"title":"t"}`), CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	st := negotiation.NewRequest(id, "off-"+id, json.RawMessage(`{"title":"t"}`), brand, bouncer, true, f.clock.Now())
	if err := f.hub.Create(ctx, st); err != nil {
		t.Fatal(err)
	}
	st, _, err := f.hub.Update(ctx, id, func(_ store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
		return st.Start(f.clock.Now())
	})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// talk lands n messages in negotiation id, each by the party on turn.
func (f *fixture) talk(t *testing.T, id string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		if _, _, err := f.hub.Update(context.Background(), id, func(_ store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
			return st.Apply(st.Turn, message(t, "m"), f.clock.Now(), nil)
		}); err != nil {
			t.Fatal(err)
		}
	}
}

func message(t *testing.T, text string) negotiation.Frame {
	t.Helper()
	f, werr := negotiation.DecodeFrame([]byte(`{"type":"message","content":"` + text + `"}`))
	if werr != nil {
		t.Fatal(werr)
	}
	return f
}

// TestSlowStoreReadDelaysNoOtherRoom: a subscription of negotiation A that
// is stuck in a store read (filling a gap) holds up neither the bus nor the
// delivery of negotiation B; A catches up once the read returns.
func TestSlowStoreReadDelaysNoOtherRoom(t *testing.T) {
	t.Run("local", func(t *testing.T) { testSlowStoreRead(t, setup(t)) })
	t.Run("redis", func(t *testing.T) { testSlowStoreRead(t, setupOn(t, redisBus(t))) })
}

func testSlowStoreRead(t *testing.T, f *fixture) {
	a, b := f.live(t, "neg_a"), f.live(t, "neg_b")
	f.store.gated = a.ID

	obsA, obsB := newSink(), newSink()
	subA := f.hub.Subscribe(a.ID, &a, "", -1, obsA)
	defer subA.Close()
	subB := f.hub.Subscribe(b.ID, &b, "", -1, obsB)
	defer subB.Close()
	obsA.next(t, negotiation.TypeNegotiationStarted)
	obsB.next(t, negotiation.TypeNegotiationStarted)

	// A frame lands in A, but its bus message is lost: A's next message
	// shows a gap, and A's subscription reads the store, which hangs.
	partyA := f.hub.Subscribe(a.ID, &a, a.Brand.AgentID, -1, newSink())
	defer partyA.Close()
	ctx := context.Background()
	_, _, err := f.store.Update(ctx, a.ID, func(_ store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
		return st.Apply(a.Brand.AgentID, message(t, "lost on the bus"), f.clock.Now(), nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	acked := make(chan error, 1)
	go f.hub.Update(ctx, a.ID, func(_ store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
		return st.Apply(a.Bouncer.AgentID, message(t, "after the gap"), f.clock.Now(), nil)
	})
	select {
	case <-f.store.entered:
	case <-time.After(wait):
		t.Fatal("A's subscription never read the store to fill its gap")
	}

	// B goes on: its frame is published and delivered while A's read hangs.
	partyB := f.hub.Subscribe(b.ID, &b, b.Brand.AgentID, -1, newSink())
	defer partyB.Close()
	partyB.Submit(ctx, message(t, "hello B"), func(out negotiation.Outcome, err error) { acked <- err })
	if err := <-acked; err != nil {
		t.Fatal(err)
	}
	m := obsB.next(t, negotiation.TypeNegotiationMessage)
	if m["content"] != "hello B" {
		t.Fatalf("B's observer got %v", m)
	}
	obsA.mu.Lock()
	n := len(obsA.frames)
	obsA.mu.Unlock()
	if n != 1 {
		t.Fatalf("A's observer got %d frames while its store read hung, want only negotiation_started", n)
	}

	// Released, A delivers both frames in seq order, none twice.
	close(f.store.release)
	first, second := obsA.next(t, negotiation.TypeNegotiationMessage), obsA.next(t, negotiation.TypeNegotiationMessage)
	if first["content"] != "lost on the bus" || second["content"] != "after the gap" || first["seq"].(float64)+1 != second["seq"].(float64) {
		t.Fatalf("A caught up with %v then %v", first, second)
	}
}

// TestSubscribeReplaysThenLive: frames published while a subscription is
// replaying come after the replay, each once.
func TestSubscribeReplaysThenLive(t *testing.T) {
	f := setup(t)
	a := f.live(t, "neg_r")
	ctx := context.Background()
	f.talk(t, a.ID, 3)
	obs := newSink()
	sub := f.hub.Subscribe(a.ID, &a, "", 1, obs)
	defer sub.Close()
	if _, _, err := f.hub.Update(ctx, a.ID, func(_ store.Tx, st *negotiation.State) (negotiation.Outcome, error) {
		return st.Apply(st.Turn, message(t, "live"), f.clock.Now(), nil)
	}); err != nil {
		t.Fatal(err)
	}
	obs.next(t, negotiation.TypeNegotiationStarted)
	var seqs []float64
	for len(seqs) < 3 {
		seqs = append(seqs, obs.next(t, negotiation.TypeNegotiationMessage)["seq"].(float64))
	}
	if seqs[0] != 2 || seqs[1] != 3 || seqs[2] != 4 {
		t.Fatalf("seqs %v, want 2 3 4 (replay after 1, then live)", seqs)
	}
}

// TestMailboxOverflowCatchesUp: a subscription far behind drops its mailbox
// and reads the store instead, losing no transcript frame.
func TestMailboxOverflowCatchesUp(t *testing.T) {
	f := setup(t)
	a := f.live(t, "neg_o")
	obs := newSink()
	sub := f.hub.Subscribe(a.ID, &a, "", -1, obs)
	defer sub.Close()
	obs.next(t, negotiation.TypeNegotiationStarted)
	sub.mu.Lock()
	sub.running = true // hold delivery, as a drain stuck elsewhere would
	sub.mu.Unlock()
	f.talk(t, a.ID, 3)
	for i := 0; i < maxMailbox+10; i++ {
		sub.enqueue([]byte("junk"))
	}
	sub.mu.Lock()
	if len(sub.mailbox) > maxMailbox {
		t.Fatalf("mailbox grew to %d", len(sub.mailbox))
	}
	sub.mu.Unlock()
	sub.release()
	var seqs []float64
	for len(seqs) < 3 {
		seqs = append(seqs, obs.next(t, negotiation.TypeNegotiationMessage)["seq"].(float64))
	}
	if seqs[0] != 1 || seqs[2] != 3 {
		t.Fatalf("caught up with seqs %v", seqs)
	}
}

func TestEnvelopeRoundTrip(t *testing.T) {
	for _, e := range []envelope{
		{Kind: KindEntry, Seq: 7, Hash: "sha256:ab", From: "agt_1", Frame: json.RawMessage(`{"a":1}`)},
		{Kind: KindPrivate, To: "agt_2", Frame: json.RawMessage(`{}`)},
		{Kind: KindThinking, From: "agt_3", Frame: json.RawMessage("{\"x\":\"a\nb\"}")},
	} {
		got, ok := decodeEnvelope(e.encode())
		if !ok || got.Kind != e.Kind || got.Seq != e.Seq || got.Hash != e.Hash || got.From != e.From || got.To != e.To || string(got.Frame) != string(e.Frame) {
			t.Fatalf("round trip of %+v gave %+v (%v)", e, got, ok)
		}
	}
	for _, bad := range []string{"", "e 1 - -\n{}", "e x - - -\n{}", "no newline", "e 1 - - - -\n{}", "e 1 - - - \n{}"} {
		if _, ok := decodeEnvelope([]byte(bad)); ok {
			t.Fatalf("decoded %q", bad)
		}
	}
}

// TestIsEnded: only a frame whose type is negotiation_ended, however its
// other members spell the same words.
func TestIsEnded(t *testing.T) {
	for frame, want := range map[string]bool{
		`{"at":"2026-12-01T08:00:00Z","reason":"deal","seq":9,"type":"negotiation_ended"}`:              true,
		`{"content":"type:\"negotiation_ended\"","seq":3,"type":"negotiation_message"}`:                 false,
		`{"content":"x","seq":3,"terms":{"k":"negotiation_ended"},"type":"negotiation_message"}`:        false,
		`{"content":"\":\"negotiation_ended\"","from":"a","seq":3,"type":"negotiation_message"}`:        false,
		`{"at":"2026-12-01T08:00:00Z","seq":9,"type":"negotiation_message","x":":\"negotiation_ended"}`: false,
	} {
		if got := isEnded(json.RawMessage(frame)); got != want {
			t.Errorf("isEnded(%s) = %v, want %v", frame, got, want)
		}
	}
}

// answeredStore runs answer once, right after the commit of a step in
// negotiation id and before Update returns: the other party's answer lands
// between the sender's commit and its reply, as the house agent's does
// when it read the sender's frame from the store (joining the room at that
// moment) before the frame was published.
type answeredStore struct {
	store.Store
	id     string
	answer func()
	armed  atomic.Bool
}

func (a *answeredStore) Update(ctx context.Context, id string, step store.Step) (negotiation.State, negotiation.Outcome, error) {
	st, out, err := a.Store.Update(ctx, id, step)
	if id == a.id && a.armed.CompareAndSwap(true, false) {
		a.answer()
	}
	return st, out, err
}

// TestAckBeforeTheAnswer: the other party's answer, committed between the
// sender's commit and its reply, reaches the sender's socket only after
// the reply (PROTOCOL.md "What the sender gets back": the ack is sent
// before the events the frame causes); meanwhile no delivery to that
// socket starts.
func TestAckBeforeTheAnswer(t *testing.T) {
	clk := clock.NewFake(t0)
	as := &answeredStore{Store: memory.New(), id: "neg-ack"}
	gs := &gatedStore{Store: as, entered: make(chan struct{}, 16), release: make(chan struct{})}
	h := New(Config{Store: gs, Bus: bus.NewLocal(), Timers: timers.NewLocal(clk), Clock: clk})
	f := &fixture{hub: h, store: gs, clock: clk}
	st := f.live(t, "neg-ack")
	snk := newSink()
	sub := h.Subscribe(st.ID, &st, st.Turn, -1, snk)
	t.Cleanup(sub.Close)
	snk.next(t, "negotiation_started")

	as.answer = func() {
		f.talk(t, "neg-ack", 1) // the other party, now on turn
		sub.mu.Lock()
		started := sub.running
		sub.mu.Unlock()
		if started {
			t.Error("delivery to the sender's socket started before its reply")
		}
	}
	as.armed.Store(true)
	sub.Submit(t.Context(), message(t, "first"), func(out negotiation.Outcome, err error) {
		if err != nil {
			t.Errorf("the sender's frame: %v", err)
		}
		snk.Write([]byte(`{"type":"reply"}`))
	})
	for i, want := range []string{"reply", "negotiation_message"} {
		select {
		case b := <-snk.got:
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil || m["type"] != want {
				t.Fatalf("frame %d after negotiation_started: %s, want %s", i, b, want)
			}
			if want == "negotiation_message" && (m["seq"] != 2.0 || m["from"] == st.Turn) {
				t.Fatalf("after the reply: %s, want the other party's seq 2", b)
			}
		case <-time.After(wait):
			t.Fatalf("no %s within %v", want, wait)
		}
	}
}
