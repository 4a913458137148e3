package venue_test

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"runtime"
	"runtime/metrics"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/venuehq/venue/venue"
)

// rawSock is a party socket past its negotiation_started, driven on the
// bare TCP connection: frames are written pre-built and read by their
// RFC 6455 headers, so the client allocates nothing per frame and a
// benchmark's allocations are the server's.
type rawSock struct {
	nc  net.Conn
	buf []byte // read, not yet consumed
	rd  [8 << 10]byte
}

// dialRaw opens a room socket and reads frames (with gorilla) until one
// of type started; from then on the connection is the caller's.
func dialRaw(b *testing.B, v *e2eVenue, path, started string) *rawSock {
	b.Helper()
	ws, _, err := websocket.DefaultDialer.Dial("ws"+v.url[len("http"):]+path, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ws.Close() })
	for {
		_, data, err := ws.ReadMessage()
		if err != nil {
			b.Fatal(err)
		}
		if bytes.Contains(data, []byte(`"type":"`+started+`"`)) {
			break
		}
	}
	return &rawSock{nc: ws.NetConn()}
}

// maskedText is payload as one client text frame (masked, RFC 6455
// section 5.3) with the all-zero key, which leaves the payload as it is.
func maskedText(payload []byte) []byte {
	out := []byte{0x80 | websocket.TextMessage}
	switch n := len(payload); {
	case n <= 125:
		out = append(out, 0x80|byte(n))
	default:
		out = append(out, 0x80|126, byte(n>>8), byte(n))
	}
	return append(append(out, 0, 0, 0, 0), payload...)
}

// next returns the payload of the next server frame (valid until the next
// call), reading as much as it needs.
func (r *rawSock) next(b *testing.B) []byte {
	for {
		if len(r.buf) >= 2 {
			n, h := int(r.buf[1]&0x7f), 2
			switch n {
			case 126:
				if len(r.buf) >= 4 {
					n, h = int(binary.BigEndian.Uint16(r.buf[2:])), 4
				} else {
					n = -1
				}
			case 127:
				b.Fatal("raw client: frame over 64 KiB")
			}
			if n >= 0 && len(r.buf) >= h+n {
				p := r.buf[h : h+n]
				r.buf = r.buf[h+n:]
				return p
			}
		}
		// Keep what is unread at the start of rd, then read behind it.
		k := copy(r.rd[:], r.buf)
		_ = r.nc.SetReadDeadline(time.Now().Add(testWait))
		m, err := r.nc.Read(r.rd[k:])
		if err != nil && err != io.EOF {
			b.Fatal(err)
		}
		r.buf = r.rd[:k+m]
	}
}

// BenchmarkServerFrame is the venue's side of one talk frame in an arena
// negotiation as `venue bench` drives it: the sender's socket writes a
// message, the venue reads, decodes and checks it, runs the room step,
// commits it to the memory store, acks the sender and delivers the entry
// to the other party (and, with observers=1, to one observer socket). The
// clients are bare TCP connections that write pre-built frames and skip
// what they read by the frame headers, so allocs/op are the server's per
// frame (BENCHMARKS.md "Go benchmarks"). A new negotiation takes over every
// 1,500 frames (negotiation.MaxTranscriptFrames).
func BenchmarkServerFrame(b *testing.B) {
	for _, obs := range []int{0, 1} {
		b.Run(map[int]string{0: "observers=0", 1: "observers=1"}[obs], func(b *testing.B) {
			benchServerFrame(b, obs)
		})
	}
}

func benchServerFrame(b *testing.B, observers int) {
	v := newE2E(b, func(c *venue.Config) {
		c.Limits.FramesPerSecond, c.Limits.FrameBurst = 1e9, 1e9
		c.RegisterPerMinute = 1e9
	})
	var ends [2]*rawSock
	var obs *rawSock
	open := func() {
		// The last negotiation's sockets go: an observer's stayed open
		// would pass the observers an address may hold after a few turns.
		for _, s := range []*rawSock{ends[0], ends[1], obs} {
			if s != nil {
				_ = s.nc.Close()
			}
		}
		brand, bouncer := v.register("B", "brand"), v.register("K", "bouncer")
		negID, _, _ := v.match(brand, bouncer, true)
		ends[0] = dialRaw(b, v, "/v1/negotiations/"+negID+"/ws?token="+brand.key, "negotiation_started")
		ends[1] = dialRaw(b, v, "/v1/negotiations/"+negID+"/ws?token="+bouncer.key, "negotiation_started")
		if observers > 0 {
			obs = dialRaw(b, v, "/v1/negotiations/"+negID+"/ws/observe", "negotiation_started")
		}
	}
	open()
	frame := maskedText([]byte(`{"type":"message","content":"bench:1764576000000000000 lorem ipsum dolor sit amet"}`))
	ack, entry := []byte(`"type":"message_ack"`), []byte(`"type":"negotiation_message"`)
	b.ReportAllocs()
	n := 0
	live0, scan0 := retained()
	cpu0 := processCPU(b)
	callgrindMark()
	for b.Loop() {
		if n++; n%1500 == 0 {
			b.StopTimer()
			open()
			b.StartTimer()
		}
		// The two parties alternate, as the load generator's do.
		from, to := ends[n%2], ends[(n+1)%2]
		if _, err := from.nc.Write(frame); err != nil {
			b.Fatal(err)
		}
		if p := from.next(b); !bytes.Contains(p, ack) {
			b.Fatalf("sender got %s, want its message_ack", p)
		}
		if p := to.next(b); !bytes.Contains(p, entry) {
			b.Fatalf("other party got %s, want the negotiation_message", p)
		}
		if obs != nil {
			if p := obs.next(b); !bytes.Contains(p, entry) {
				b.Fatalf("observer got %s, want the negotiation_message", p)
			}
		}
	}
	callgrindMark()
	b.ReportMetric(float64((processCPU(b)-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
	b.StopTimer()
	live, scan := retained()
	b.ReportMetric((live-live0)/float64(b.N), "kept-B/op")
	b.ReportMetric((scan-scan0)/float64(b.N), "kept-scan-B/op")
}

// retained is the live heap after a full collection and the part of it a
// GC cycle scans (objects holding pointers), in bytes: a benchmark's growth
// of the two per frame is what the embedded store keeps of each frame and
// how much longer it makes every later GC cycle's mark phase
// (BENCHMARKS.md "Issue 21, fifth pass"). The sockets and rooms the loop
// opens every 1,500 frames (closing the last ones) are counted too (a few
// tens of bytes a frame).
func retained() (live, scan float64) {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/gc/scan/heap:bytes"}}
	metrics.Read(s)
	return float64(s[0].Value.Uint64()), float64(s[1].Value.Uint64())
}

// processCPU is the user + system CPU time of this process so far
// (getrusage): the server's and the bare clients' work, whatever else the
// machine runs.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// callgrindMark does nothing: it marks the start and the end of a
// benchmark's loop for an instruction count of the loop alone
// (valgrind --tool=callgrind --toggle-collect=... or --zero-before and
// --dump-before=*callgrindMark*; BENCHMARKS.md "Go benchmarks").
//
//go:noinline
func callgrindMark() { callgrindMarks++ }

var callgrindMarks int
