package admission

import (
	"bufio"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

func TestCounter(t *testing.T) {
	t.Parallel()
	var c Counter
	r1, ok1 := c.Acquire("a", 2)
	r2, ok2 := c.Acquire("a", 2)
	_, ok3 := c.Acquire("a", 2)
	if !ok1 || !ok2 || ok3 {
		t.Fatalf("caps of 2: %v %v %v", ok1, ok2, ok3)
	}
	if _, ok := c.Acquire("b", 2); !ok {
		t.Fatal("another key shares the cap")
	}
	r1()
	r1() // a second release gives back nothing more
	if c.Held("a") != 1 {
		t.Fatalf("held %d after one release, want 1", c.Held("a"))
	}
	if _, ok := c.Acquire("a", 2); !ok {
		t.Fatal("a released slot was not reusable")
	}
	r2()
	if _, ok := c.Acquire("x", 0); !ok {
		t.Fatal("max 0 means no cap")
	}
	// All or nothing.
	var d Counter
	hold, _ := d.Acquire("full", 1)
	defer hold()
	_, idx, ok := AcquireAll(Slot{&d, "free", 1}, Slot{&d, "full", 1})
	if ok || idx != 1 || d.Held("free") != 0 {
		t.Fatalf("AcquireAll over a full slot: ok %v idx %d, free held %d", ok, idx, d.Held("free"))
	}
}

// AcquireAll's release gives every slot back once, however often it is
// called; what a socket holds for its life is two objects. (Not parallel:
// AllocsPerRun.)
func TestAcquireAllRelease(t *testing.T) {
	var a, b Counter
	release, _, ok := AcquireAll(Slot{&a, "addr", 2}, Slot{&b, "agent neg", 1})
	if !ok || a.Held("addr") != 1 || b.Held("agent neg") != 1 {
		t.Fatalf("ok %v, held %d and %d", ok, a.Held("addr"), b.Held("agent neg"))
	}
	if _, _, ok := AcquireAll(Slot{&a, "addr", 2}, Slot{&b, "agent neg", 1}); ok {
		t.Fatal("a second hold of a slot of 1")
	}
	if a.Held("addr") != 1 {
		t.Fatalf("the refused AcquireAll kept %d of addr", a.Held("addr")-1)
	}
	release()
	release()
	if a.Held("addr") != 0 || b.Held("agent neg") != 0 {
		t.Fatalf("after release: held %d and %d", a.Held("addr"), b.Held("agent neg"))
	}
	slots := []Slot{{&a, "addr", 2}, {&b, "agent neg", 1}}
	allocs := testing.AllocsPerRun(100, func() {
		release, _, _ := AcquireAll(slots...)
		release()
	})
	if allocs > 2 {
		t.Fatalf("%.0f allocations a hold, want at most 2", allocs)
	}
}

func TestCounterConcurrent(t *testing.T) {
	t.Parallel()
	var c Counter
	var wg sync.WaitGroup
	var mu sync.Mutex
	got := 0
	for range 100 {
		wg.Go(func() {
			if _, ok := c.Acquire("k", 10); ok {
				mu.Lock()
				got++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if got != 10 {
		t.Fatalf("%d acquired under a cap of 10", got)
	}
}

func TestBudgetsShared(t *testing.T) {
	t.Parallel()
	b := Budgets{Rate: 1, Burst: 3}
	l1, rel1 := b.Get("agt/neg")
	l2, rel2 := b.Get("agt/neg")
	other, relOther := b.Get("agt/neg2")
	defer relOther()
	if l1 != l2 || l1 == other {
		t.Fatal("sockets of one key do not share a budget, or keys share one")
	}
	now := time.Now()
	n := 0
	for range 10 {
		if l1.AllowN(now, 1) {
			n++
		}
		if l2.AllowN(now, 1) {
			n++
		}
	}
	if n != 3 {
		t.Fatalf("two sockets took %d frames from a burst of 3", n)
	}
	rel1()
	rel2()
	if l3, rel3 := b.Get("agt/neg"); l3 == l1 {
		t.Fatal("a budget outlived its sockets")
	} else {
		rel3()
	}
}

func TestAddressKey(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"203.0.113.7":          "203.0.113.7",
		"::ffff:203.0.113.7":   "203.0.113.7",
		"2001:db8:1:2:3:4:5:6": "2001:db8:1:2::/64",
		"2001:db8:1:2:ffff::1": "2001:db8:1:2::/64",
		"fe80::1%eth0":         "fe80::/64",
		"not-an-ip":            "not-an-ip",
		"2001:db8:1:3::1":      "2001:db8:1:3::/64",
	} {
		if got := AddressKey(in); got != want {
			t.Errorf("AddressKey(%q) = %q, want %q", in, got, want)
		}
	}
	nets, err := ParseCIDRs("10.0.0.0/8, 192.0.2.1,2001:db8::/32")
	if err != nil || len(nets) != 3 || nets[1].String() != "192.0.2.1/32" {
		t.Fatalf("ParseCIDRs: %v %v", nets, err)
	}
	if _, err := ParseCIDRs("10.0.0.0/33"); err == nil {
		t.Fatal("a bad CIDR was taken")
	}
}

// TestListenerCap: the connection over the cap gets 503 with Retry-After at
// once; a closed connection frees its slot.
func TestListenerCap(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := NewListener(ln, 2)
	defer l.Close()
	accepted := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	dial()
	dial()
	s1, s2 := <-accepted, <-accepted
	third := dial()
	_ = third.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(third), nil)
	if err != nil || resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("over the cap: %v %v", resp, err)
	}
	if l.Refused.Load() != 1 || l.Open() != 2 {
		t.Fatalf("refused %d open %d", l.Refused.Load(), l.Open())
	}
	s1.Close()
	s1.Close()
	if l.Open() != 1 {
		t.Fatalf("open %d after a close (twice), want 1", l.Open())
	}
	dial()
	select {
	case c := <-accepted:
		c.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("a freed slot was not reused")
	}
	s2.Close()
}

func TestFrameRate(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	r := NewFrameRate(1, 2, 2, func() time.Time { return now })
	for i := range 2 {
		if ok, _ := r.Allow(); !ok {
			t.Fatalf("frame %d within the burst refused", i)
		}
	}
	if ok, closed := r.Allow(); ok || closed {
		t.Fatalf("third frame: ok=%v closed=%v, want refused, open", ok, closed)
	}
	if ok, closed := r.Allow(); ok || closed {
		t.Fatalf("fourth frame: ok=%v closed=%v, want refused, open", ok, closed)
	}
	if _, closed := r.Allow(); !closed {
		t.Fatal("third refusal within a second did not close")
	}
	now = now.Add(time.Second)
	if ok, _ := r.Allow(); !ok {
		t.Fatal("a frame a second later was refused")
	}
	// A shared bucket: two rates drawing on one budget.
	shared := rate.NewLimiter(0, 1)
	a, b := NewFrameRate(1, 5, 0, func() time.Time { return now }), NewFrameRate(1, 5, 0, func() time.Time { return now })
	a.Share(shared)
	b.Share(shared)
	if ok, _ := a.Allow(); !ok {
		t.Fatal("first frame of the shared budget refused")
	}
	if ok, _ := b.Allow(); ok {
		t.Fatal("the second socket got its own budget")
	}
	if r.PerSecond() != 1 {
		t.Fatalf("PerSecond %v", r.PerSecond())
	}
}

// TestAdmitInProcess: a socket from the same process takes its kind's cap
// but no address's: with the address full, it is still admitted; over its
// kind's cap it is refused.
func TestAdmitInProcess(t *testing.T) {
	t.Parallel()
	s := &Sockets{Caps: Caps{SocketsPerAddress: 1, LobbyPerAgent: 1}}
	if _, err := s.Admit("127.0.0.1", Party, "agt_1", "neg_1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Admit("127.0.0.1", Party, "agt_2", "neg_1"); err == nil || !strings.Contains(err.Error(), "from this address") {
		t.Fatalf("over the address's cap: %v", err)
	}
	if _, err := s.AdmitInProcess(Lobby, "agt_house", ""); err != nil {
		t.Fatalf("in-process with the address full: %v", err)
	}
	if _, err := s.AdmitInProcess(Lobby, "agt_house", ""); err == nil || !strings.Contains(err.Error(), "lobby sockets for this agent") {
		t.Fatalf("in-process over the lobby cap: %v", err)
	}
}
