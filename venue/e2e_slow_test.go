package venue_test

import (
	"bufio"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/venuehq/venue/venue"
)

// TestE2ESlowObserver: an observer that does not read overflows its bounded
// send queue and is closed; the parties are not delayed by it.
func TestE2ESlowObserver(t *testing.T) {
	v := newE2E(t, func(c *venue.Config) {
		c.Limits = venue.Limits{FramesPerSecond: 1e6, FrameBurst: 1e6, SendQueue: 64}
	})
	brand, bouncer := v.register("B", "brand"), v.register("K", "bouncer")
	negID, _, _ := v.match(brand, bouncer, true)
	before := metric(t, v, "venue_send_queue_overflows_total")

	slow, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(v.url, "http")+"/v1/negotiations/"+negID+"/ws/observe", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	b := v.room(brand, negID, "")
	b.expect("negotiation_started")
	// 3,990 four-byte characters: about 16 KB a frame, within the limits.
	msg := `{"type":"message","content":"` + strings.Repeat("\U0001F600", 3990) + `"}`
	const n = 800 // ~12 MB: more than loopback socket buffers hold
	// The sender keeps at most window frames unacknowledged: it gets its
	// own messages back as well as their acks, and this test's client
	// checks every frame against the AsyncAPI schema, so on a loaded
	// machine a sender that wrote all 800 at once would itself read slower
	// than the venue writes and overflow its own 64-frame queue: the test
	// is about the observer that never reads, not about that.
	const window = 8
	credit := make(chan struct{}, window)
	acks := make(chan int, 1)
	go func() { // the sender reads its acks as they come
		got := 0
		for m := range b.frames {
			if m["type"] == "message_ack" {
				<-credit
				if got++; got == n {
					break
				}
			}
		}
		acks <- got
	}()
	for i := 0; i < n; i++ {
		select {
		case credit <- struct{}{}:
		case got := <-acks: // the sender's socket ended early
			t.Fatalf("the sender's socket ended after %d acks of %d: %v", got, n, <-b.closed)
		}
		b.send(msg)
	}
	select { // the sender is never held up by the slow observer
	case got := <-acks:
		if got != n {
			t.Fatalf("the sender got %d acks of %d", got, n)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the sender's acks stopped coming")
	}
	if after := metric(t, v, "venue_send_queue_overflows_total"); after <= before {
		t.Fatalf("no send queue overflow recorded (%v -> %v)", before, after)
	}
	// The slow observer's connection ends (after what the kernel buffered).
	_ = slow.SetReadDeadline(time.Now().Add(e2eWait))
	for {
		if _, _, err := slow.ReadMessage(); err != nil {
			if ne, ok := err.(interface{ Timeout() bool }); ok && ne.Timeout() {
				t.Fatal("slow observer was not disconnected")
			}
			break
		}
	}
}

// metric reads one counter from /metrics.
func metric(t *testing.T, v *e2eVenue, name string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + v.srv.AdminAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, name+" ") {
			f, _ := strconv.ParseFloat(strings.TrimPrefix(line, name+" "), 64)
			return f
		}
	}
	return 0
}
