package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/venuehq/venue/bus"
	"github.com/venuehq/venue/clock"
	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/store/memory"
	"github.com/venuehq/venue/timers"
)

// counter is a Transport that only signals each frame it is given.
type counter chan struct{}

func (c counter) Write([]byte) bool { c <- struct{}{}; return true }
func (c counter) Close(int, string) {}

// BenchmarkFrameFanOut is the hot path of one party frame on one node,
// without sockets: decode it from bytes, run the room's step through the
// store (memory), ack the sender, publish on the bus (local) and encode it
// for every receiver (the other party and the observers), waiting until
// every receiver's transport has it. Receivers: the other party plus 0 or
// 10 observers.
func BenchmarkFrameFanOut(b *testing.B) {
	for _, observers := range []int{0, 10} {
		b.Run(fmt.Sprintf("observers=%d", observers), func(b *testing.B) { benchFanOut(b, observers) })
	}
}

func benchFanOut(b *testing.B, observers int) {
	ctx := context.Background()
	clk := clock.NewFake(t0)
	ms := memory.New()
	h := New(Config{Store: ms, Bus: bus.NewLocal(), Timers: timers.NewLocal(clk), Clock: clk})
	brand := negotiation.Party{AgentID: "brand", Name: "B"}
	bouncer := negotiation.Party{AgentID: "bouncer", Name: "K"}
	for _, a := range []store.Agent{{ID: "brand", Name: "B", Role: negotiation.RoleBrand, KeyHash: "b", CreatedAt: t0},
		{ID: "bouncer", Name: "K", Role: negotiation.RoleBouncer, KeyHash: "k", CreatedAt: t0}} {
		if err := ms.CreateAgent(ctx, a); err != nil {
			b.Fatal(err)
		}
	}
	got := make(counter, 64)
	var subs [2]*Subscription
	var observing []*Subscription
	turn := 0
	rooms := 0
	// open starts a new negotiation and subscribes its parties and
	// observers (a transcript holds 2,000 frames: a new room every 1,500).
	open := func() {
		for _, s := range append(observing, subs[:]...) {
			if s != nil {
				s.Close()
			}
		}
		rooms++
		id, off := fmt.Sprintf("neg-%d", rooms), fmt.Sprintf("off-%d", rooms)
		if err := ms.CreateOffer(ctx, store.Offer{ID: off, Brand: "brand", Bouncer: "bouncer", Body: json.RawMessage(`{"title":"t"}`), CreatedAt: t0}); err != nil {
			b.Fatal(err)
		}
		if err := h.Create(ctx, negotiation.NewRequest(id, off, json.RawMessage(`{"title":"t"}`), brand, bouncer, true, t0)); err != nil {
			b.Fatal(err)
		}
		st, _, err := h.Update(ctx, id, func(_ store.Tx, st *negotiation.State) (negotiation.Outcome, error) { return st.Start(t0) })
		if err != nil {
			b.Fatal(err)
		}
		subs = [2]*Subscription{h.Subscribe(id, &st, "brand", -1, got), h.Subscribe(id, &st, "bouncer", -1, got)}
		observing = observing[:0]
		for range observers {
			observing = append(observing, h.Subscribe(id, &st, "", -1, got))
		}
		for range 2 + observers { // negotiation_started on subscribing
			<-got
		}
		turn = 0
		if st.Turn == "bouncer" {
			turn = 1
		}
	}
	open()
	defer func() {
		for _, s := range append(observing, subs[:]...) {
			s.Close()
		}
	}()
	data := []byte(`{"type":"message","content":"bench:1764489600000000000 lorem ipsum dolor sit amet"}`)
	receivers := 1 + observers
	acked := make(chan error, 1)
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		if n++; n%1500 == 0 {
			b.StopTimer()
			open()
			b.StartTimer()
		}
		f, werr := negotiation.DecodeFrame(data)
		if werr != nil {
			b.Fatal(werr)
		}
		subs[turn].Submit(ctx, f, func(out negotiation.Outcome, err error) {
			if err == nil && out.Ack == nil {
				err = fmt.Errorf("no ack")
			}
			acked <- err
		})
		if err := <-acked; err != nil {
			b.Fatal(err)
		}
		for range receivers {
			<-got
		}
		turn = 1 - turn
	}
}

// BenchmarkIsEnded is the check every receiver of every transcript frame
// makes (is it negotiation_ended, whose receipt may need the store?) on a
// delivered negotiation_message of the load generator's size.
func BenchmarkIsEnded(b *testing.B) {
	frame := json.RawMessage(`{"at":"2026-12-01T08:00:00.123456789Z","content":"bench:1764576000000000000 lorem ipsum dolor sit amet","from":"agt_0123456789abcdef","negotiation_id":"neg_0123456789abcdef","seq":42,"type":"negotiation_message"}`)
	b.ReportAllocs()
	for b.Loop() {
		if isEnded(frame) {
			b.Fatal("a message is not an ending")
		}
	}
}
