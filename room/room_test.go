package room

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/venuehq/venue/admission"
	"github.com/venuehq/venue/bus"
	"github.com/venuehq/venue/clock"
	"github.com/venuehq/venue/hub"
	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/store/memory"
	"github.com/venuehq/venue/timers"
)

// wait bounds how long a test waits for what should happen at once.
const wait = 10 * time.Second

var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

// sink is a transport that hands over what it is given.
type sink struct {
	got    chan map[string]any
	mu     sync.Mutex
	closed int
}

func newSink() *sink { return &sink{got: make(chan map[string]any, 256)} }

func (s *sink) Write(b []byte) bool {
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		panic(string(b))
	}
	s.got <- m
	return true
}

func (s *sink) Close(code int, _ string) {
	s.mu.Lock()
	s.closed = code
	s.mu.Unlock()
}

func (s *sink) code() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// next returns the next frame, which must be of type typ.
func (s *sink) next(t *testing.T, typ string) map[string]any {
	t.Helper()
	select {
	case m := <-s.got:
		if m["type"] != typ {
			t.Fatalf("got %v, want a %s", m, typ)
		}
		return m
	case <-time.After(wait):
		t.Fatalf("no %s within %v", typ, wait)
	}
	return nil
}

// live makes a hub with one live negotiation "n1" between "b" and "k".
func live(t *testing.T) (*hub.Hub, negotiation.State) {
	t.Helper()
	ctx := context.Background()
	clk := clock.NewFake(t0)
	st := memory.New()
	h := hub.New(hub.Config{Store: st, Bus: bus.NewLocal(), Timers: timers.NewLocal(clk), Clock: clk})
	brand, bouncer := negotiation.Party{AgentID: "b", Name: "B"}, negotiation.Party{AgentID: "k", Name: "K"}
	for _, a := range []store.Agent{{ID: "b", Name: "B", Role: negotiation.RoleBrand, KeyHash: "b", CreatedAt: t0},
		{ID: "k", Name: "K", Role: negotiation.RoleBouncer, KeyHash: "k", CreatedAt: t0}} {
		if err := st.CreateAgent(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.CreateOffer(ctx, store.Offer{ID: "o1", Brand: "b", Bouncer: "k", Body: json.RawMessage(`{"title":"t"}`), CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	n := negotiation.NewRequest("n1", "o1", json.RawMessage(`{"title":"t"}`), brand, bouncer, true, t0)
	if err := h.Create(ctx, n); err != nil {
		t.Fatal(err)
	}
	if werr := Join(&n, "b"); werr == nil || werr.Code != "invalid_state" {
		t.Fatalf("joining a pending negotiation: %v", werr)
	}
	n, _, err := h.Update(ctx, "n1", func(_ store.Tx, s *negotiation.State) (negotiation.Outcome, error) { return s.Start(t0) })
	if err != nil {
		t.Fatal(err)
	}
	return h, n
}

func TestJoin(t *testing.T) {
	_, n := live(t)
	for agent, want := range map[string]string{"b": "", "k": "", "": "", "x": "forbidden"} {
		got := ""
		if werr := Join(&n, agent); werr != nil {
			got = werr.Code
		}
		if got != want {
			t.Errorf("Join(%q) = %q, want %q", agent, got, want)
		}
	}
}

// TestSessionParty: a party's frames are decoded (a bad one gets error and
// changes nothing), submitted (message_ack to the sender, the message to
// the other party) and counted.
func TestSessionParty(t *testing.T) {
	ctx := context.Background()
	h, n := live(t)
	bt, kt := newSink(), newSink()
	var counted []string
	b := Open(h, &n, "b", -1, bt, Options{Count: func(typ string) { counted = append(counted, typ) }})
	defer b.Close()
	k := Open(h, &n, "k", -1, kt, Options{})
	defer k.Close()
	bt.next(t, "negotiation_started")
	kt.next(t, "negotiation_started")

	if !b.Receive(ctx, []byte(`{"type":"message","id":"x1","contents":"hello"}`)) {
		t.Fatal("a bad frame ended the session")
	}
	if e := bt.next(t, "error"); e["re"] != "x1" || e["code"] == nil {
		t.Fatalf("bad frame: %v", e)
	}
	b.Receive(ctx, []byte(`{"type":"message","id":"m1","content":"hello"}`))
	if ack := bt.next(t, "message_ack"); ack["re"] != "m1" || ack["seq"] != 1.0 {
		t.Fatalf("ack: %v", ack)
	}
	if m := kt.next(t, "negotiation_message"); m["content"] != "hello" || m["from"] != "b" {
		t.Fatalf("relayed: %v", m)
	}
	// Nothing stands to accept: an error to the sender only.
	b.Receive(ctx, []byte(`{"type":"accept","id":"a1"}`))
	if e := bt.next(t, "error"); e["re"] != "a1" {
		t.Fatalf("accepting nothing: %v", e)
	}
	select {
	case m := <-kt.got:
		t.Fatalf("the other party got %v", m)
	default:
	}
	if strings.Join(counted, ",") != "invalid,message,accept" {
		t.Fatalf("counted %v", counted)
	}
}

// TestSessionRate: over the frame rate a party gets rate_limited (also when
// the shared budget says no), and sustained refusals close with 1008; an
// observer's every frame is a refusal.
func TestSessionRate(t *testing.T) {
	ctx := context.Background()
	h, n := live(t)
	now := t0
	clk := func() time.Time { return now }
	bt := newSink()
	shared := true
	b := Open(h, &n, "b", -1, bt, Options{Rate: admission.NewFrameRate(1, 1, 2, clk), Shared: func(context.Context) bool { return shared }})
	defer b.Close()
	bt.next(t, "negotiation_started")
	b.Receive(ctx, []byte(`{"type":"message","id":"m1","content":"one"}`))
	bt.next(t, "message_ack")
	if !b.Receive(ctx, []byte(`{"type":"message","id":"m2","content":"two"}`)) {
		t.Fatal("the first refusal closed")
	}
	if e := bt.next(t, "error"); e["code"] != "rate_limited" || e["re"] != "m2" {
		t.Fatalf("over the rate: %v", e)
	}
	now = now.Add(time.Second)
	shared = false
	b.Receive(ctx, []byte(`{"type":"thinking","id":"t1"}`))
	if e := bt.next(t, "error"); e["code"] != "rate_limited" {
		t.Fatalf("over the shared budget: %v", e)
	}
	if !b.Receive(ctx, []byte(`{"type":"thinking","id":"t2"}`)) || bt.code() != 0 {
		t.Fatal("the second refusal within the abuse burst closed")
	}
	if e := bt.next(t, "error"); e["code"] != "rate_limited" || e["re"] != "t2" {
		t.Fatalf("over the rate: %v", e)
	}
	if b.Receive(ctx, []byte(`{"type":"thinking"}`)) || bt.code() != hub.ClosePolicy {
		t.Fatalf("sustained refusals: closed %d", bt.code())
	}

	ot := newSink()
	o := Open(h, &n, "", -1, ot, Options{Rate: admission.NewFrameRate(100, 100, 2, clk)})
	defer o.Close()
	ot.next(t, "negotiation_started")
	for i := range 2 {
		if !o.Receive(ctx, []byte(`{"type":"message","content":"hi"}`)) {
			t.Fatalf("observer frame %d closed", i)
		}
	}
	if o.Receive(ctx, []byte(`{}`)) || ot.code() != hub.ClosePolicy {
		t.Fatalf("observer's sustained sending: closed %d", ot.code())
	}
	select {
	case m := <-ot.got:
		t.Fatalf("an observer's frame was answered: %v", m)
	default:
	}
}
