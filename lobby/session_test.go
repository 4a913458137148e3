package lobby

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/venuehq/venue/bus"
	"github.com/venuehq/venue/clock"
	"github.com/venuehq/venue/directory"
	"github.com/venuehq/venue/hub"
	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/store/memory"
	"github.com/venuehq/venue/timers"
)

var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

// transport records what a session writes and how it closes.
type transport struct {
	mu     sync.Mutex
	frames []map[string]any
	code   int
}

func (tr *transport) Write(b []byte) bool {
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		panic(err)
	}
	tr.mu.Lock()
	tr.frames = append(tr.frames, m)
	tr.mu.Unlock()
	return true
}

func (tr *transport) Close(code int, _ string) {
	tr.mu.Lock()
	tr.code = code
	tr.mu.Unlock()
}

func (tr *transport) all() []map[string]any {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]map[string]any(nil), tr.frames...)
}

type fixture struct {
	svc     *Service
	hub     *hub.Hub
	clock   *clock.Fake
	brand   store.Agent
	bouncer store.Agent
}

func setup(t *testing.T) *fixture {
	t.Helper()
	clk := clock.NewFake(t0)
	st := memory.New()
	h := hub.New(hub.Config{Store: st, Bus: bus.NewLocal(), Timers: timers.NewLocal(clk), Clock: clk})
	dir := &directory.Service{Store: st, Now: clk.Now}
	ctx := context.Background()
	brand, _, err := dir.Register(ctx, directory.Registration{Name: "Acme", Role: negotiation.RoleBrand})
	if err != nil {
		t.Fatal(err)
	}
	bouncer, _, err := dir.Register(ctx, directory.Registration{Name: "Bob", Role: negotiation.RoleBouncer})
	if err != nil {
		t.Fatal(err)
	}
	svc := &Service{Store: st, Rooms: h, Now: clk.Now, NewID: directory.NewID,
		SocketURL: func(id string) string { return "ws://x/" + id }, ObserveURL: func(id string) string { return "ws://x/" + id + "/observe" }}
	return &fixture{svc: svc, hub: h, clock: clk, brand: brand, bouncer: bouncer}
}

// request has the brand ask the bouncer; it returns the negotiation id.
func (f *fixture) request(t *testing.T, brandTr *transport, brand *Session) string {
	t.Helper()
	ctx := context.Background()
	brand.Receive(ctx, []byte(`{"type":"submit_offer","to":"`+f.bouncer.ID+`","offer":{"title":"slot"},"arena":true}`))
	frames := brandTr.all()
	offerID, _ := frames[len(frames)-1]["offer_id"].(string)
	brand.Receive(ctx, []byte(`{"type":"create_negotiation","offer_id":"`+offerID+`"}`))
	frames = brandTr.all()
	id, _ := frames[len(frames)-1]["negotiation_id"].(string)
	if id == "" {
		t.Fatalf("no negotiation created: %v", frames[len(frames)-1])
	}
	return id
}

func count(frames []map[string]any, typ, negID string) int {
	n := 0
	for _, m := range frames {
		if m["type"] == typ && (negID == "" || m["negotiation_id"] == negID) {
			n++
		}
	}
	return n
}

func lim() Limits { return Limits{FramesPerSecond: 100, FrameBurst: 100} }

func TestSessionReplaysPendingOnceAndPushesLive(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	brandTr := &transport{}
	brand := f.svc.Open(ctx, f.brand, brandTr, lim())
	defer brand.Close()
	lapsed := f.request(t, brandTr, brand)
	f.clock.Advance(negotiation.RequestLapse + time.Second) // lapses (no timer runs here)
	pending := f.request(t, brandTr, brand)

	bouncerTr := &transport{}
	bouncer := f.svc.Open(ctx, f.bouncer, bouncerTr, lim())
	defer bouncer.Close()
	got := bouncerTr.all()
	if count(got, TypeNegotiationReq, pending) != 1 || count(got, TypeNegotiationReq, lapsed) != 0 {
		t.Fatalf("replay on open: %v", got)
	}
	// The same request pushed again (another node, a retry) is not repeated.
	st, err := f.svc.Store.Negotiation(ctx, pending)
	if err != nil {
		t.Fatal(err)
	}
	f.hub.Push(ctx, f.bouncer.ID, st.RequestedFrame())
	// A new request arrives live, once.
	third := f.request(t, brandTr, brand)
	got = bouncerTr.all()
	if count(got, TypeNegotiationReq, pending) != 1 || count(got, TypeNegotiationReq, third) != 1 {
		t.Fatalf("pushes: %v", got)
	}
	// A brand gets no replay of requests.
	if count(brandTr.all(), TypeNegotiationReq, "") != 0 {
		t.Fatal("the brand was sent negotiation_requested")
	}
	bouncer.Receive(ctx, []byte(`{"type":"accept_negotiation","negotiation_id":"`+third+`","id":"a1"}`))
	last := bouncerTr.all()[len(bouncerTr.all())-1]
	if last["type"] != TypeNegotiationAccepted || last["re"] != "a1" {
		t.Fatalf("accept reply %v", last)
	}
	if count(brandTr.all(), TypeNegotiationAccepted, third) != 1 {
		t.Fatal("the brand was not told of the accept")
	}
}

func TestSessionRateLimitThenPolicyClose(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	now := t0
	tr := &transport{}
	s := f.svc.Open(ctx, f.brand, tr, Limits{FramesPerSecond: 1, FrameBurst: 2, AbuseBurst: 2, Now: func() time.Time { return now }})
	defer s.Close()
	browse := []byte(`{"type":"browse_bouncers","id":"b"}`)
	for i := 0; i < 2; i++ {
		if !s.Receive(ctx, browse) {
			t.Fatal("closed within the burst")
		}
	}
	for i := 0; i < 2; i++ {
		if !s.Receive(ctx, browse) {
			t.Fatal("closed at the first refusals")
		}
	}
	frames := tr.all()
	if frames[0]["type"] != TypeBouncers || frames[0]["re"] != "b" {
		t.Fatalf("first reply %v", frames[0])
	}
	if frames[2]["type"] != "error" || frames[2]["code"] != "rate_limited" || frames[2]["re"] != "b" {
		t.Fatalf("over the limit: %v", frames[2])
	}
	if s.Receive(ctx, browse) {
		t.Fatal("sustained abuse did not close the session")
	}
	if tr.code != hub.ClosePolicy {
		t.Fatalf("closed with %d, want %d", tr.code, hub.ClosePolicy)
	}
	// A second later the limit has refilled.
	now = now.Add(2 * time.Second)
	tr2 := &transport{}
	s2 := f.svc.Open(ctx, f.brand, tr2, Limits{FramesPerSecond: 1, FrameBurst: 1, Now: func() time.Time { return now }})
	defer s2.Close()
	s2.Receive(ctx, browse)
	now = now.Add(time.Second)
	s2.Receive(ctx, browse)
	if n := count(tr2.all(), TypeBouncers, ""); n != 2 {
		t.Fatalf("%d answers after the refill, want 2", n)
	}
}

func TestSessionBadFrames(t *testing.T) {
	f := setup(t)
	ctx := context.Background()
	tr := &transport{}
	s := f.svc.Open(ctx, f.bouncer, tr, lim())
	defer s.Close()
	for _, tt := range []struct{ in, code string }{
		{`not json`, "invalid_json"},
		{`{"type":"browse_bouncers","id":5}`, "invalid_argument"},
		{`{"type":"nope","id":"x"}`, "unknown_type"},
		{`{"type":"submit_offer","to":"x","offer":{"title":"t"}}`, "forbidden"},
		{`{"type":"get_profile","agent_id":"agt_none"}`, "not_found"},
	} {
		s.Receive(ctx, []byte(tt.in))
		frames := tr.all()
		if last := frames[len(frames)-1]; last["type"] != "error" || last["code"] != tt.code {
			t.Errorf("%s: %v, want %s", tt.in, last, tt.code)
		}
	}
}
