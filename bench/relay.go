package bench

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync"

	"github.com/gorilla/websocket"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/venuehq/venue/internal/rtmetrics"
)

// Relay is the baseline: a bare gorilla WebSocket server that forwards each
// frame of a pair to the other socket of the pair, and nothing else (no
// JSON, no store, no rules). GET /relay/{pair}/{a|b}; /metrics for its heap,
// rtmetrics.Path for its runtime figures.
type Relay struct {
	mu    sync.Mutex
	pairs map[string]*relayPair
	srv   *http.Server
	Addr  string
}

type relayPair struct {
	mu   sync.Mutex
	ends [2]*websocket.Conn
	wmu  [2]sync.Mutex
}

// StartRelay listens on addr (127.0.0.1:0 for any port) and serves until
// ctx is done.
func StartRelay(ctx context.Context, addr string) (*Relay, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	r := &Relay{pairs: map[string]*relayPair{}, Addr: ln.Addr().String()}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.Handler())
	mux.Handle(rtmetrics.Path, rtmetrics.Handler())
	mux.Handle(rtmetrics.GCPath, rtmetrics.GCHandler())
	mux.HandleFunc("/relay/", r.serve)
	r.srv = &http.Server{Handler: mux}
	go func() { _ = r.srv.Serve(ln) }()
	go func() { <-ctx.Done(); _ = r.srv.Close() }()
	return r, nil
}

var relayUpgrader = websocket.Upgrader{ReadBufferSize: 4096, WriteBufferSize: 4096}

func (r *Relay) serve(w http.ResponseWriter, req *http.Request) {
	parts := strings.Split(strings.TrimPrefix(req.URL.Path, "/relay/"), "/")
	if len(parts) != 2 || (parts[1] != "a" && parts[1] != "b") {
		http.Error(w, "want /relay/{pair}/{a|b}", http.StatusNotFound)
		return
	}
	side := 0
	if parts[1] == "b" {
		side = 1
	}
	ws, err := relayUpgrader.Upgrade(w, req, nil)
	if err != nil {
		return
	}
	r.mu.Lock()
	p := r.pairs[parts[0]]
	if p == nil {
		p = &relayPair{}
		r.pairs[parts[0]] = p
	}
	r.mu.Unlock()
	p.mu.Lock()
	p.ends[side] = ws
	p.mu.Unlock()
	defer ws.Close()
	for {
		typ, data, err := ws.ReadMessage()
		if err != nil {
			return
		}
		p.mu.Lock()
		other := p.ends[1-side]
		p.mu.Unlock()
		if other == nil {
			continue
		}
		p.wmu[1-side].Lock()
		_ = other.WriteMessage(typ, data)
		p.wmu[1-side].Unlock()
	}
}
