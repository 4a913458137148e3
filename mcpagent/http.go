package mcpagent

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// NewestProtocol is the newest MCP protocol revision served: the newest the
// official Go SDK this package is built on supports. Over stdio and over
// HTTP (sessionless, as that revision is) a client asking for it gets it;
// older clients get the revision they ask for, over HTTP in a session.
var NewestProtocol = mcp.SupportedProtocolVersions()[0]

// Defaults of HTTPOptions.
const (
	DefaultSessionIdle = 10 * time.Minute
	DefaultMaxSessions = 100
)

// HTTPOptions configure [Agent.HTTPHandler].
type HTTPOptions struct {
	// Token is the bearer token every request must carry
	// (Authorization: Bearer <token>). Required.
	Token string
	// SessionIdle closes a session no request has used for this long
	// (default DefaultSessionIdle).
	SessionIdle time.Duration
	// MaxSessions caps the live sessions; a request that would open one
	// more is refused with 503 (default DefaultMaxSessions).
	MaxSessions int
	// OnExpire, if set, is called with the id of each session closed for
	// being idle.
	OnExpire func(sessionID string)
}

// deliveryHeader carries, from HTTPHandler to the tool handlers, the id of
// the HTTP request that carries a call (RequestExtra.Header is the
// request's header). A client's own value is always replaced.
const deliveryHeader = "Venue-Mcp-Delivery"

// delivery is one HTTP request carrying calls: its context (done when the
// client is gone) and the commits its calls left to run once their answers
// were written.
type delivery struct {
	ctx context.Context

	mu      sync.Mutex
	commits []commit
	undos   []func() // of the commits run, until the answer is known written
}

func (d *delivery) add(cs []commit) {
	d.mu.Lock()
	d.commits = append(d.commits, cs...)
	d.mu.Unlock()
}

// run runs the commits registered so far, once each, keeping their undos.
func (d *delivery) run() {
	d.mu.Lock()
	cs := d.commits
	d.commits = nil
	for _, c := range cs {
		c.do()
		d.undos = append(d.undos, c.undo)
	}
	d.mu.Unlock()
}

// undo takes back the commits run: their answer was not written.
func (d *delivery) undo() {
	d.mu.Lock()
	us := d.undos
	d.undos = nil
	d.mu.Unlock()
	for _, u := range us {
		u()
	}
}

// deliveries are the HTTP requests being served, by id.
type deliveries struct {
	mu sync.Mutex
	m  map[string]*delivery
}

func (ds *deliveries) get(id string) *delivery {
	if id == "" {
		return nil
	}
	ds.mu.Lock()
	defer ds.mu.Unlock()
	return ds.m[id]
}

func (ds *deliveries) put(id string, d *delivery) {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if ds.m == nil {
		ds.m = map[string]*delivery{}
	}
	ds.m[id] = d
}

func (ds *deliveries) take(id string) *delivery {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	d := ds.m[id]
	delete(ds.m, id)
	return d
}

// HTTPHandler serves the agent over MCP's streamable HTTP transport. Every
// request needs Authorization: Bearer o.Token (401 otherwise); a
// cross-origin browser request is refused (403, http.CrossOriginProtection),
// as is a request naming a non-loopback Host on a loopback address (the
// SDK's DNS rebinding protection). A request for the newest protocol
// revision is served sessionless, as that revision is; an older client
// gets a session (Mcp-Session-Id), closed after o.SessionIdle without a
// request; at most o.MaxSessions live at once (503 past that).
//
// A call's context ends when the HTTP request carrying it does, and what a
// wait returned counts as read only once the whole answer was written to a
// live response (see feed).
func (a *Agent) HTTPHandler(o HTTPOptions) (http.Handler, error) {
	if o.Token == "" {
		return nil, errors.New("mcpagent: HTTPHandler needs a bearer token")
	}
	if o.SessionIdle <= 0 {
		o.SessionIdle = DefaultSessionIdle
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	get := func(*http.Request) *mcp.Server { return a.server }
	h := &httpHandler{a: a, o: o,
		stateful:  mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Logger: a.log}),
		stateless: mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{Stateless: true, PropagateRequestCancellation: true, Logger: a.log}),
		sessions:  map[string]*sessionUse{},
	}
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		httpError(w, http.StatusForbidden, "cross-origin requests are refused")
	}))
	a.wg.Add(1)
	go func() { defer a.wg.Done(); h.sweep() }()
	return cop.Handler(h), nil
}

type httpHandler struct {
	a                   *Agent
	o                   HTTPOptions
	stateful, stateless http.Handler

	mu       sync.Mutex
	sessions map[string]*sessionUse // live sessions opened here, by id
	opening  int                    // requests that may open a session, being served
}

// sessionUse is when a session was last used and how many requests of it
// are being served.
type sessionUse struct {
	last   time.Time
	active int
}

func (h *httpHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="venue mcp"`)
		httpError(w, http.StatusUnauthorized, "this MCP endpoint needs Authorization: Bearer <token> (the token venue mcp printed at start, or VENUE_MCP_TOKEN)")
		return
	}
	if !checkBody(w, r) { // the envelope as strictly as a frame (envelope.go)
		return
	}
	if v := r.Header.Get("Mcp-Protocol-Version"); v >= "2026-07-28" {
		h.serve(h.stateless, w, r)
		return
	}
	id := r.Header.Get("Mcp-Session-Id")
	if id == "" {
		if r.Method != http.MethodPost {
			h.stateful.ServeHTTP(w, r) // the SDK's answer to a GET or DELETE without a session
			return
		}
		h.mu.Lock()
		if len(h.sessions)+h.opening >= h.o.MaxSessions {
			h.mu.Unlock()
			w.Header().Set("Retry-After", "60")
			httpError(w, http.StatusServiceUnavailable, "too many MCP sessions open: close one (DELETE) or wait for one to expire")
			return
		}
		h.opening++
		h.mu.Unlock()
		rw := h.serve(h.stateful, w, r)
		h.mu.Lock()
		h.opening--
		if sid := rw.Header().Get("Mcp-Session-Id"); sid != "" && h.live(sid) {
			h.sessions[sid] = &sessionUse{last: h.a.clk.Now()}
		}
		h.mu.Unlock()
		return
	}
	h.mu.Lock()
	u := h.sessions[id]
	if u != nil {
		u.active++
	}
	h.mu.Unlock()
	h.serve(h.stateful, w, r)
	if u != nil {
		h.mu.Lock()
		u.active--
		u.last = h.a.clk.Now()
		if r.Method == http.MethodDelete {
			delete(h.sessions, id)
		}
		h.mu.Unlock()
	}
}

// serve hands r to next with a delivery registered for it, and runs the
// delivery's commits if the whole answer was written and the client is
// still there.
func (h *httpHandler) serve(next http.Handler, w http.ResponseWriter, r *http.Request) *recordingWriter {
	rw := &recordingWriter{ResponseWriter: w}
	if r.Method != http.MethodPost {
		r.Header.Del(deliveryHeader)
		next.ServeHTTP(rw, r)
		return rw
	}
	id := rand.Text()
	r = r.Clone(r.Context())
	r.Header.Set(deliveryHeader, id)
	d := &delivery{ctx: r.Context()}
	rw.d = d
	h.a.deliveries.put(id, d)
	next.ServeHTTP(rw, r)
	h.a.deliveries.take(id)
	if rw.failed() {
		d.undo()
	}
	return rw
}

func (h *httpHandler) authorized(r *http.Request) bool {
	if len(r.Header.Values("Authorization")) != 1 { // none, or two: which one counts is a guess
		return false
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), []byte(h.o.Token)) == 1
}

// live reports whether the server has a session with this id.
func (h *httpHandler) live(id string) bool {
	for ss := range h.a.server.Sessions() {
		if ss.ID() == id {
			return true
		}
	}
	return false
}

// sweep closes sessions idle for SessionIdle, on the Agent's clock, until
// the Agent closes; it also forgets the read positions of sessions gone.
func (h *httpHandler) sweep() {
	every := h.o.SessionIdle / 4
	for {
		t := h.a.clk.NewTimer(every)
		select {
		case <-h.a.done:
			t.Stop()
			return
		case <-t.C():
		}
		now := h.a.clk.Now()
		var idle []string
		h.mu.Lock()
		for id, u := range h.sessions {
			if u.active == 0 && now.Sub(u.last) >= h.o.SessionIdle {
				idle = append(idle, id)
				delete(h.sessions, id)
			}
		}
		h.mu.Unlock()
		live := map[string]bool{}
		for ss := range h.a.server.Sessions() {
			if id := ss.ID(); id != "" && slices.Contains(idle, id) {
				_ = ss.Close()
				continue
			}
			live[ss.ID()] = true
		}
		h.mu.Lock()
		for id := range h.sessions {
			if !live[id] {
				delete(h.sessions, id) // closed by the SDK (DELETE, a broken stream)
			}
		}
		h.mu.Unlock()
		h.a.forgetReaders(func(reader string) bool { return reader == "" || live[reader] })
		for _, id := range idle {
			h.a.log.Info("mcp session expired", "session", id, "idle", h.o.SessionIdle)
			if h.o.OnExpire != nil {
				h.o.OnExpire(id)
			}
		}
	}
}

// recordingWriter passes writes on and remembers whether any failed. A
// call's handler registers its commits on d just before it returns, and
// the SDK then writes and flushes its answer (nothing else of that call
// comes after the answer), so a write with commits registered is the
// answer: the commits run just before it, so that a client that asks again
// the moment it reads the answer finds them done, and are undone if the
// write or its flush fails (the client is gone: the answer did not reach
// it).
type recordingWriter struct {
	http.ResponseWriter
	d   *delivery
	mu  sync.Mutex
	err error
}

func (w *recordingWriter) Write(b []byte) (int, error) {
	if w.d != nil {
		if w.d.ctx.Err() != nil {
			w.record(w.d.ctx.Err())
		} else {
			w.d.run()
		}
	}
	n, err := w.ResponseWriter.Write(b)
	w.record(err)
	return n, err
}

// FlushError flushes, remembering a failure (http.ResponseController calls
// it).
func (w *recordingWriter) FlushError() error {
	err := http.NewResponseController(w.ResponseWriter).Flush()
	w.record(err)
	return err
}

func (w *recordingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *recordingWriter) record(err error) {
	if err != nil {
		w.mu.Lock()
		w.err = err
		w.mu.Unlock()
	}
}

func (w *recordingWriter) failed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err != nil
}

// httpError writes a JSON-RPC error body (id null) with an HTTP status,
// which MCP clients show as the reason.
func httpError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": nil,
		"error": map[string]any{"code": -32000, "message": msg}})
}

// NewToken returns a fresh bearer token (26 characters of base32 from
// crypto/rand).
func NewToken() string { return rand.Text() }
