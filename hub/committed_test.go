package hub

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/venuehq/venue/bus"
	"github.com/venuehq/venue/negotiation"
)

// TestAfterCommitOrderAndWait: hooks queued from several goroutines all
// run, each producer's in its order, and wait returns only once every hook
// queued before it has run; with a linger of a nanosecond the worker ends
// and starts again between rounds (or is woken while it lingers), and no
// hook is lost either way.
func TestAfterCommitOrderAndWait(t *testing.T) {
	for _, linger := range []time.Duration{time.Nanosecond, time.Hour} {
		var mu sync.Mutex
		got := map[int][]int{}
		a := &afterCommit{linger: linger}
		a.fn = func(_ context.Context, st *negotiation.State, _ negotiation.Outcome) {
			mu.Lock()
			defer mu.Unlock()
			got[int(st.LastSeq)] = append(got[int(st.LastSeq)], len(got[int(st.LastSeq)]))
		}
		for round := 0; round < 50; round++ {
			var wg sync.WaitGroup
			for p := 0; p < 4; p++ {
				wg.Go(func() {
					for i := 0; i < 10; i++ {
						a.add(context.Background(), &negotiation.State{LastSeq: int64(p)}, negotiation.Outcome{})
					}
				})
			}
			wg.Wait()
			if err := a.wait(context.Background()); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			for p := 0; p < 4; p++ {
				if n := len(got[p]); n != 10*(round+1) {
					t.Fatalf("linger %v, round %d: producer %d has %d hooks run, want %d", linger, round, p, n, 10*(round+1))
				}
				for i, v := range got[p] {
					if v != i {
						t.Fatalf("linger %v: producer %d's hooks ran out of order: %v", linger, p, got[p])
					}
				}
			}
			mu.Unlock()
		}
	}
}

// BenchmarkAfterCommit is one step's hand-off to the Committed hook when
// steps come one at a time (the hook's goroutine is idle each time), the
// hook using some stack as the venue's does.
func BenchmarkAfterCommit(b *testing.B) {
	done := make(chan struct{})
	a := &afterCommit{fn: func(context.Context, *negotiation.State, negotiation.Outcome) {
		var deep func(n int) int
		deep = func(n int) int {
			var pad [256]byte
			if n == 0 {
				return int(pad[0])
			}
			return deep(n-1) + int(pad[n%256])
		}
		_ = deep(16)
		done <- struct{}{}
	}}
	b.ReportAllocs()
	for b.Loop() {
		a.add(context.Background(), &negotiation.State{}, negotiation.Outcome{})
		<-done
	}
}

// answeringBus is a bus on which a party answers a step's frames before
// the committing call returns: the first publish on the negotiation's
// topic commits the next step at once (as the house agent, fast on the
// same node, does).
type answeringBus struct {
	bus.Bus
	answered atomic.Bool
	answer   func() // set before the step it answers; called once
}

func (b *answeringBus) Publish(ctx context.Context, topic string, data []byte) error {
	if topic == bus.NegotiationTopic("neg-order") && b.answer != nil && b.answered.CompareAndSwap(false, true) {
		b.answer()
	}
	return b.Bus.Publish(ctx, topic, data)
}

// TestCommittedHookInCommitOrder: a step answered before its sender's
// call returns reaches the Committed hook after the step it answers (the
// arena feed's _updated before its _ended): the hook is queued before
// anything of the step is published.
func TestCommittedHookInCommitOrder(t *testing.T) {
	ab := &answeringBus{Bus: bus.NewLocal()}
	f := setupOn(t, ab)
	var mu sync.Mutex
	var seqs []int64
	f.hub.after = &afterCommit{fn: func(_ context.Context, st *negotiation.State, _ negotiation.Outcome) {
		mu.Lock()
		seqs = append(seqs, st.LastSeq)
		mu.Unlock()
	}}
	ctx := context.Background()
	f.live(t, "neg-order")
	if err := f.hub.WaitCommitted(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	seqs = nil
	mu.Unlock()
	ab.answer = func() { f.talk(t, "neg-order", 1) }
	f.talk(t, "neg-order", 1)
	if err := f.hub.WaitCommitted(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seqs) != 2 || seqs[0] >= seqs[1] {
		t.Fatalf("the hook saw seqs %v, want two in commit order", seqs)
	}
}
