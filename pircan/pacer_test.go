package pircan

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/venuehq/venue/clock"
)

// The pacer sends a burst of 5, then 2 lines a second, taking requesters
// in turn: B's one reply is not stuck behind A's ten.
func TestPacerBurstRateAndFairness(t *testing.T) {
	t.Parallel()
	c := clock.NewFake(T0)
	p := newPacer(c, DefaultPace)
	type sent struct {
		at   time.Duration
		text string
	}
	// Both requesters' lines are queued before the sender starts: the test
	// observes the turn order, so it must not race the sender for it.
	for i := range 10 {
		p.push("A", notice("a", fmt.Sprintf("a%d", i)))
	}
	p.push("B", notice("b", "b0"), notice("b", "b1"))
	got := make(chan sent, 100)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.run(ctx, func(o Out) bool { got <- sent{c.Now().Sub(T0), o.Params[1]}; return true })
	}()
	var out []sent
	recv := func(n int) {
		for range n {
			select {
			case s := <-got:
				out = append(out, s)
			case <-time.After(5 * time.Second):
				t.Fatalf("nothing sent after %v", out)
			}
		}
	}
	recv(5) // the burst, at once
	for i := 0; len(out) < 12; i++ {
		// Wait until the sender waits on its timer, then let half a second pass.
		deadline := time.Now().Add(5 * time.Second)
		for c.Pending() == 0 {
			if time.Now().After(deadline) {
				t.Fatal("the pacer never waited")
			}
			time.Sleep(time.Millisecond)
		}
		c.Advance(500 * time.Millisecond)
		recv(1)
	}
	cancel()
	<-done
	for i, s := range out {
		want := time.Duration(0)
		if i >= 5 {
			want = time.Duration(i-4) * 500 * time.Millisecond
		}
		if s.at != want {
			t.Fatalf("line %d (%s) sent at %v, want %v", i, s.text, s.at, want)
		}
	}
	// Turn order: a0 (A first), b0, a1, b1, then A's rest.
	order := ""
	for _, s := range out[:6] {
		order += s.text + " "
	}
	if order != "a0 b0 a1 b1 a2 a3 " {
		t.Fatalf("order %q", order)
	}
}

func TestPacerHoldsLinesWhileDisconnected(t *testing.T) {
	t.Parallel()
	c := clock.NewFake(T0)
	p := newPacer(c, DefaultPace)
	connected := make(chan bool, 1)
	connected <- false
	sent := make(chan string, 10)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.run(ctx, func(o Out) bool {
			ok := <-connected
			connected <- ok
			if ok {
				sent <- o.Params[1]
			}
			return ok
		})
	}()
	p.push("A", notice("a", "x"))
	// Not sent while disconnected; still queued.
	deadline := time.Now().Add(5 * time.Second)
	for p.depth() != 1 || len(sent) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("line lost or sent while disconnected")
		}
		time.Sleep(time.Millisecond)
	}
	<-connected
	connected <- true
	p.kick()
	select {
	case s := <-sent:
		if s != "x" {
			t.Fatal(s)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("not sent after reconnect")
	}
	cancel()
	<-done
}

func TestPacerDropsPastMax(t *testing.T) {
	t.Parallel()
	p := newPacer(clock.NewFake(T0), Pace{Burst: 5, PerSecond: 2, MaxQueued: 3})
	if n := p.push("A", notice("a", "1"), notice("a", "2"), notice("a", "3"), notice("a", "4")); n != 1 || p.depth() != 3 {
		t.Fatalf("dropped %d, depth %d", n, p.depth())
	}
}

func TestFold(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ cm, in, want string }{
		{"rfc1459", "Nick[A]~\\", "nick{a}^|"},
		{"strict-rfc1459", "Nick[A]~", "nick{a}~"},
		{"ascii", "Nick[A]~", "nick[a]~"},
		{"", "ÉA", "Éa"},
	} {
		if got := Fold(c.cm, c.in); got != c.want {
			t.Errorf("Fold(%q, %q) = %q, want %q", c.cm, c.in, got, c.want)
		}
	}
}

// A line whose check says wait stays queued while other requesters' lines
// go; one it drops is gone and counted; a kick after the answer sends the
// held line.
func TestPacerHoldsAndDropsByCheck(t *testing.T) {
	t.Parallel()
	c := clock.NewFake(T0)
	p := newPacer(c, Pace{Burst: 100, PerSecond: 100, MaxQueued: 100})
	var mu sync.Mutex
	verdicts := map[string]lineVerdict{"held": waitLine, "gone": dropLine}
	p.check = func(o Out) lineVerdict {
		mu.Lock()
		defer mu.Unlock()
		return verdicts[o.Params[1]]
	}
	p.push("A", notice("a", "held"))
	p.push("B", notice("b", "gone"), notice("b", "b1"))
	p.push("C", notice("c", "c0"))
	got := make(chan string, 10)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go p.run(ctx, func(o Out) bool { got <- o.Params[1]; return true })
	for _, want := range []string{"b1", "c0"} {
		if s := <-got; s != want {
			t.Fatalf("sent %s, want %s", s, want)
		}
	}
	if p.depth() != 1 {
		t.Fatalf("depth %d, want the held line", p.depth())
	}
	mu.Lock()
	verdicts["held"] = sendLine
	mu.Unlock()
	p.kick()
	if s := <-got; s != "held" {
		t.Fatalf("sent %s, want the held line", s)
	}
}
