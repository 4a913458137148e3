package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/venuehq/venue/internal/rtmetrics"
)

// Config of one load run.
type Config struct {
	// URL of the venue (http://host:port) or of the relay.
	URL string
	// MetricsURL serves /metrics (the venue's admin listener); default URL.
	MetricsURL string
	// Negotiations is the number of concurrent negotiations (pairs of
	// party sockets); default 1000.
	Negotiations int
	// Observers is the number of observer sockets, spread over the
	// negotiations; default Negotiations/10. Ignored for the relay.
	Observers int
	// Rate is the target of frames sent per second, all negotiations
	// together; default 5000.
	Rate float64
	// Sweep, if not empty, runs one phase per rate after the first (Rate),
	// on the same sockets, to find the highest sustained rate.
	Sweep []float64
	// Frames is how many frames each negotiation sends; default 20.
	Frames int
	// TTLProbe makes every negotiation open with a proposal whose ttl is
	// 10 s, to measure how late proposal_expired arrives.
	TTLProbe bool
	// Setup is how many negotiations are set up at once; default 16.
	Setup int
	// Progress, if not nil, gets a progress bar when it is a terminal, and
	// plain lines (every tenth of the way) when it is not.
	Progress io.Writer
	// Server, if not nil, is read before and after every phase for the
	// phase's Usage (CPU per frame, allocations, GC, scheduling latency).
	Server *Server
	// Profile, if not nil, runs on its own goroutine while the first phase
	// runs (it starts with the phase; the next phase waits for it).
	Profile func(ctx context.Context)
}

func (c *Config) defaults() {
	if c.Negotiations <= 0 {
		c.Negotiations = 1000
	}
	if c.Observers < 0 {
		c.Observers = 0
	} else if c.Observers == 0 {
		c.Observers = c.Negotiations / 10
	}
	if c.Rate <= 0 {
		c.Rate = 5000
	}
	if c.Frames <= 0 {
		c.Frames = 20
	}
	if c.Setup <= 0 {
		c.Setup = 16
	}
}

// Phase is one rate of a run.
type Phase struct {
	RateTarget float64 `json:"rate_target"`
	// FramesPerSecond is what was delivered to the other party, per second
	// of the driving phase.
	FramesPerSecond float64 `json:"frames_per_second"`
	Sent            int64   `json:"sent"`
	Delivered       int64   `json:"delivered"`
	Delivery        Dist    `json:"delivery"`
	// BySecond is Delivery by the second of the phase each frame was
	// sent in: where in the phase the tail is (a fresh server's first
	// seconds, one stall, or all along).
	BySecond []SecondDist `json:"delivery_by_second,omitempty"`
	Duration float64      `json:"duration_seconds"`
	// Server is what the server and the load generator used during the
	// phase (nil without Config.Server).
	Server *Usage `json:"server,omitempty"`
}

// Result of one run.
type Result struct {
	Target       string  `json:"target"` // "venue" or "relay"
	Negotiations int     `json:"negotiations"`
	Sockets      int     `json:"sockets"`
	Phase                // the first phase, at Config.Rate
	Sweep        []Phase `json:"sweep,omitempty"`
	// ExpiryLateness is how late proposal_expired reached the sockets
	// (receipt time minus its at), measured in a phase of its own before
	// the latency phases (ExpiryPhase says so), with no frame load.
	ExpiryLateness Dist   `json:"expiry_lateness"`
	ExpiryPhase    string `json:"expiry_phase,omitempty"`
	// ExpiryServer is what the server used in the expiry phase (the
	// proposals, their expiry and its fan-out; on Postgres, how the
	// expiries shared batches).
	ExpiryServer *Usage `json:"expiry_server,omitempty"`
	// HeapPerSocket is the server's heap growth per idle socket, bytes.
	HeapPerSocket float64 `json:"heap_per_socket_bytes"`
	// KeptPerFrame and KeptScanPerFrame are the growth of the server's
	// live heap, and of the part of it a GC cycle scans (objects holding
	// pointers, /gc/scan/heap:bytes), from the sockets' opening to the end
	// of the latency phases (the expiry phase's 1,000 proposals included),
	// per frame delivered in the latency phases, each read after a full
	// collection: what the server keeps of a frame, and how much longer it
	// makes every later cycle's mark phase. 0 when the server serves no
	// runtime metrics.
	KeptPerFrame     float64 `json:"kept_bytes_per_frame"`
	KeptScanPerFrame float64 `json:"kept_scan_bytes_per_frame"`
	Dropped          int64   `json:"dropped_connections"`
	Errors           int64   `json:"error_frames"`
}

// endpoint is one client socket with its own writer goroutine.
type endpoint struct {
	ws  *websocket.Conn
	out chan []byte
}

func newEndpoint(ws *websocket.Conn) *endpoint {
	e := &endpoint{ws: ws, out: make(chan []byte, 64)}
	go func() {
		for b := range e.out {
			if ws.WriteMessage(websocket.TextMessage, b) != nil {
				for range e.out { // drain
				}
				return
			}
		}
	}()
	return e
}

type pair struct {
	ends [2]*endpoint
	keys [2]string // api keys of the brand and the bouncer (venue only)
	sent atomic.Int64
}

// run is the shared driving phase: frames at cfg.Rate, alternating sides
// within each pair, each carrying its send time.
func run(ctx context.Context, cfg Config, rate float64, pairs []*pair, frame func(ts int64) []byte, bar progress) (time.Duration, int64) {
	total := len(pairs) * cfg.Frames
	start := time.Now()
	var sent int64
	for i := 0; i < total; i++ {
		if ctx.Err() != nil {
			break
		}
		target := start.Add(time.Duration(float64(i) / rate * float64(time.Second)))
		if d := time.Until(target); d > 200*time.Microsecond {
			time.Sleep(d)
		}
		p := pairs[i%len(pairs)]
		side := p.sent.Add(1) % 2
		select {
		case p.ends[side].out <- frame(time.Now().UnixNano()):
			sent++
		default: // that socket is backed up: counted as not sent
		}
		if bar != nil && i%256 == 0 {
			_ = bar.Set(i)
		}
	}
	if bar != nil {
		_ = bar.Set(total)
	}
	return time.Since(start), sent
}

// reader parses frames arriving on one socket and records what it learns.
type reader struct {
	last      atomic.Int64 // unix ns of the last timed frame delivered
	delivery  *samples
	lateness  *samples
	delivered *atomic.Int64
	errors    *atomic.Int64
	dropped   *atomic.Int64
	expired   *atomic.Int64
}

var (
	benchPrefix = []byte("bench:")
	// ackType starts with the colon of `"type":"message_ack"`: bytes.Index
	// looks for a pattern's first byte, and a frame has quotes every few
	// bytes but colons only after its keys.
	ackType = []byte(`:"message_ack"`)
)

// loop reads until the socket ends; timed frames count as delivered only
// on party sockets (observers see them too).
func (r *reader) loop(ws *websocket.Conn, done <-chan struct{}, party bool) {
	var f struct {
		Type    string `json:"type"`
		Content string `json:"content"`
		At      string `json:"at"`
		Code    string `json:"code"`
	}
	var buf bytes.Buffer // one read buffer for the socket's life, as a client reusing its buffers would
	for {
		data, err := readMessage(ws, &buf)
		now := time.Now()
		if err != nil {
			select {
			case <-done:
			default:
				r.dropped.Add(1)
			}
			return
		}
		if i := bytes.Index(data, benchPrefix); i >= 0 && !party {
			continue
		} else if i >= 0 { // fast path: a timed frame
			j := i + len(benchPrefix)
			k := j
			for k < len(data) && data[k] >= '0' && data[k] <= '9' {
				k++
			}
			if ns, err := strconv.ParseInt(string(data[j:k]), 10, 64); err == nil {
				r.delivery.addSent(ns, now.Sub(time.Unix(0, ns)))
				r.delivered.Add(1)
				r.last.Store(now.UnixNano())
				continue
			}
		}
		if bytes.Contains(data, ackType) { // the sender's acks: nothing to measure
			continue
		}
		f.Type, f.At, f.Code = "", "", ""
		if json.Unmarshal(data, &f) != nil {
			continue
		}
		switch f.Type {
		case "proposal_expired":
			if at, err := time.Parse(time.RFC3339Nano, f.At); err == nil {
				r.lateness.add(now.Sub(at))
				r.expired.Add(1)
			}
		case "error", "scope_block":
			r.errors.Add(1)
		}
	}
}

// readMessage reads the next data message into buf (reused: the bytes are
// valid until the next call).
func readMessage(ws *websocket.Conn, buf *bytes.Buffer) ([]byte, error) {
	_, r, err := ws.NextReader()
	if err != nil {
		return nil, err
	}
	buf.Reset()
	if _, err := buf.ReadFrom(r); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// heapInUse reads go_memstats_heap_inuse_bytes from a /metrics page.
func heapInUse(ctx context.Context, cfg Config) (float64, error) {
	base := cfg.MetricsURL
	if base == "" {
		base = cfg.URL
	}
	// A collection first (rtmetrics.GCHandler), so the figure is the live
	// heap, not what garbage the last phase left; a server without the
	// route is read as it is.
	collect(ctx, base)
	req, _ := http.NewRequestWithContext(ctx, "GET", strings.TrimRight(base, "/")+"/metrics", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_memstats_heap_inuse_bytes "); ok {
			return strconv.ParseFloat(v, 64)
		}
	}
	return 0, errors.New("no go_memstats_heap_inuse_bytes in /metrics")
}

// liveHeap is the server's live heap and the scannable part of it
// (bytes), read from its runtime metrics right after a full collection
// (gc: one first; otherwise the caller just had one run); zeros when it
// serves none.
func liveHeap(ctx context.Context, cfg Config, gc bool) (live, scan float64) {
	if cfg.Server == nil || cfg.Server.MetricsURL == "" {
		return 0, 0
	}
	base := strings.TrimRight(cfg.Server.MetricsURL, "/")
	if gc {
		collect(ctx, base)
	}
	snap, err := rtmetrics.Fetch(ctx, base)
	if err != nil {
		return 0, 0
	}
	return snap.Values[rtmetrics.HeapLive], snap.Values[rtmetrics.ScanHeap]
}

// collect asks the server at base for a full collection
// (rtmetrics.GCHandler); a server without the route is left as it is.
func collect(ctx context.Context, base string) {
	gc, _ := http.NewRequestWithContext(ctx, "POST", strings.TrimRight(base, "/")+rtmetrics.GCPath, nil)
	if resp, err := http.DefaultClient.Do(gc); err == nil {
		_ = resp.Body.Close()
	}
}

func wsURL(base, path string) string {
	return "ws" + strings.TrimPrefix(strings.TrimRight(base, "/"), "http") + path
}

var dialer = websocket.Dialer{HandshakeTimeout: 10 * time.Second, ReadBufferSize: 4096, WriteBufferSize: 4096}

// parallel runs fn(i) for i in [0,n) on k workers, stopping at the first error.
func parallel(ctx context.Context, n, k int, fn func(i int) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for w := 0; w < k; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := fn(i); err != nil {
					once.Do(func() { first = fmt.Errorf("item %d: %w", i, err) })
					next.Store(int64(n))
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}

// phases drives cfg.Rate then every rate of cfg.Sweep on the same sockets,
// resetting the delivery counters between phases.
func phases(ctx context.Context, cfg Config, target string, pairs []*pair, rd *reader) (Phase, []Phase) {
	delivery, delivered := rd.delivery, rd.delivered
	frame := func(ts int64) []byte {
		return []byte(`{"type":"message","content":"bench:` + strconv.FormatInt(ts, 10) + ` lorem ipsum dolor sit amet"}`)
	}
	var out []Phase
	for i, rate := range append([]float64{cfg.Rate}, cfg.Sweep...) {
		delivery.reset()
		delivered.Store(0)
		bar := newBar(cfg.Progress, len(pairs)*cfg.Frames, fmt.Sprintf("%s %.0f frames/s", target, rate))
		var before reading
		if cfg.Server != nil {
			before = cfg.Server.read(ctx)
		}
		profiled := make(chan struct{})
		if i == 0 && cfg.Profile != nil {
			go func() { defer close(profiled); cfg.Profile(ctx) }()
		} else {
			close(profiled)
		}
		start := time.Now()
		dur, sent := run(ctx, cfg, rate, pairs, frame, bar)
		waitDelivered(delivered, sent, 10*time.Second)
		ph := Phase{RateTarget: rate, Sent: sent, Delivered: delivered.Load(), Delivery: delivery.dist(), Duration: dur.Seconds(),
			BySecond: delivery.bySecond(start)}
		if cfg.Server != nil {
			ph.Server = usage(before, cfg.Server.read(ctx), ph.Delivered)
		}
		<-profiled
		// Delivered per second until the last one arrived: a venue that
		// falls behind the target shows it here, not only in latency.
		if span := time.Duration(rd.last.Load() - start.UnixNano()); span > dur {
			dur = span
		}
		ph.FramesPerSecond = float64(ph.Delivered) / dur.Seconds()
		out = append(out, ph)
	}
	return out[0], out[1:]
}
