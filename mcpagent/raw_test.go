package mcpagent_test

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/venuehq/venue/client"
	"github.com/venuehq/venue/clock"
	"github.com/venuehq/venue/grants"
	"github.com/venuehq/venue/mcpagent"
)

// The raw clients below speak JSON-RPC by hand, as a client written outside
// this project would: no SDK between the test and the wire.

// rawMsg is one JSON-RPC message.
type rawMsg struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
}

// toolResult is the part of a tools/call result the tests read.
type toolResult struct {
	IsError           bool `json:"isError"`
	Content           []struct{ Text string }
	StructuredContent json.RawMessage `json:"structuredContent"`
}

func (m rawMsg) tool(t *testing.T) toolResult {
	t.Helper()
	var r toolResult
	if len(m.Error) > 0 || json.Unmarshal(m.Result, &r) != nil {
		t.Fatalf("not a tool result: %s %s", m.Result, m.Error)
	}
	return r
}

func (r toolResult) text() string {
	if len(r.Content) == 0 {
		return ""
	}
	return r.Content[0].Text
}

func (r toolResult) field(t *testing.T, name string) any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.StructuredContent, &m); err != nil {
		t.Fatalf("structuredContent: %v: %s", err, r.StructuredContent)
	}
	return m[name]
}

// rawHTTP is a hand-written streamable HTTP client of one session.
type rawHTTP struct {
	t       *testing.T
	url     string
	token   string
	session string
	n       atomic.Int64
}

// post sends body and returns the response, unread.
func (c *rawHTTP) post(ctx context.Context, body string, header map[string]string) *http.Response {
	c.t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, strings.NewReader(body))
	if err != nil {
		c.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.session != "" {
		req.Header.Set("Mcp-Session-Id", c.session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	for k, v := range header {
		req.Header.Add(k, v) // beside what is set above: a second Authorization stays a second
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		c.t.Fatal(err)
	}
	return resp
}

// messages reads an SSE (or JSON) response body into messages.
func messages(resp *http.Response) <-chan rawMsg {
	ch := make(chan rawMsg, 16)
	go func() {
		defer close(ch)
		defer resp.Body.Close()
		if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			var m rawMsg
			if json.NewDecoder(resp.Body).Decode(&m) == nil {
				ch <- m
			}
			return
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var m rawMsg
				if json.Unmarshal([]byte(data), &m) == nil {
					ch <- m
				}
			}
		}
	}()
	return ch
}

// call sends a request and returns its messages (progress notifications,
// then the response) as they come: the server sends the response's
// headers with its first message.
func (c *rawHTTP) call(ctx context.Context, method, params string) <-chan rawMsg {
	id := c.n.Add(1)
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params)
	out := make(chan rawMsg, 16)
	go func() {
		defer close(out)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+c.token)
		req.Header.Set("Mcp-Session-Id", c.session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return
		}
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			out <- rawMsg{Error: json.RawMessage(fmt.Sprintf("%q", fmt.Sprintf("HTTP %d: %s", resp.StatusCode, b)))}
			return
		}
		for m := range messages(resp) {
			out <- m
		}
	}()
	return out
}

// response waits for the response among msgs, and for their end: the
// server ends the response's body when it is done serving it.
func response(t *testing.T, msgs <-chan rawMsg) rawMsg {
	t.Helper()
	timeout := time.After(waitFor)
	var resp *rawMsg
	for {
		select {
		case m, ok := <-msgs:
			if !ok {
				if resp == nil {
					t.Fatal("the stream ended without a response")
				}
				return *resp
			}
			if m.Method == "" && resp == nil {
				resp = &m
			}
		case <-timeout:
			t.Fatal("no response, or no end of the stream")
		}
	}
}

// initialize opens the session at protocol revision 2025-11-25.
func (c *rawHTTP) initialize() {
	c.t.Helper()
	resp := c.post(context.Background(), `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, nil)
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		c.t.Fatalf("initialize: HTTP %d: %s", resp.StatusCode, b)
	}
	c.session = resp.Header.Get("Mcp-Session-Id")
	response(c.t, messages(resp))
	if c.session == "" {
		c.t.Fatal("no Mcp-Session-Id")
	}
	r := c.post(context.Background(), `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil)
	_ = r.Body.Close()
	if r.StatusCode != http.StatusAccepted {
		c.t.Fatalf("initialized: HTTP %d", r.StatusCode)
	}
}

// signals are what the agent's test hooks report.
type signals struct {
	waiting chan string
	done    chan string // "tool: error" or "tool"
}

func hook(a *mcpagent.Agent) signals {
	s := signals{waiting: make(chan string, 64), done: make(chan string, 64)}
	mcpagent.SetHooks(a, func(what string) { s.waiting <- what }, func(tool string, err error) {
		if err != nil {
			s.done <- tool + ": " + err.Error()
			return
		}
		s.done <- tool
	})
	return s
}

func next(t *testing.T, ch <-chan string) string {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitFor):
		t.Fatal("no signal")
		return ""
	}
}

// requestBouncer has a brand ask the bouncer to negotiate, which pushes
// negotiation_requested to the bouncer's lobby; it returns the
// negotiation's id.
func requestBouncer(t *testing.T, base, brandKey, bouncerID string) string {
	t.Helper()
	ctx := context.Background()
	c, err := client.New(base, client.WithAPIKey(brandKey))
	if err != nil {
		t.Fatal(err)
	}
	me, err := c.Me(ctx)
	if err != nil {
		t.Fatal(err)
	}
	l, err := c.DialLobby(ctx, me.AgentID)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	off, err := l.SubmitOffer(ctx, bouncerID, client.Offer{Title: "Spring"}, true)
	if err != nil {
		t.Fatal(err)
	}
	n, err := l.CreateNegotiation(ctx, off.OfferID)
	if err != nil {
		t.Fatal(err)
	}
	return n.NegotiationID
}

// itemsOf is the negotiation ids of a wait_lobby answer's items.
func itemsOf(t *testing.T, r toolResult) []string {
	t.Helper()
	var ids []string
	for _, it := range r.field(t, "items").([]any) {
		ids = append(ids, fmt.Sprint(it.(map[string]any)["negotiation_id"]))
	}
	return ids
}

// TestRawHTTP: a hand-written client over streamable HTTP. No token, a
// cross-origin request: refused. Every tool is annotated. A long wait
// without a progressToken answers within 20 s (on the agent's clock) and
// says it was shortened; with one, it sends progress every 10 s and waits
// the full 120 s. A wait whose client went away takes nothing: the next
// call gets the event; two sessions each get it. Duplicate keys are
// refused. An idle session expires; the cap refuses one session too many.
func TestRawHTTP(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	venueClock := clock.NewFake(start)
	base := startVenue(t, venueClock)
	_, brandKey := register(t, base, "Acme", "brand", grants.Scope{}, start)
	bouncerID, bouncerKey := register(t, base, "Letters", "bouncer", grants.Scope{}, start)
	agentClock := clock.NewFake(start)
	a, err := mcpagent.New(mcpagent.Config{URL: base, APIKey: bouncerKey, Clock: agentClock})
	if err != nil {
		t.Fatal(err)
	}
	sig := hook(a)
	expired := make(chan string, 4)
	url := serveHTTP(t, a, mcpagent.HTTPOptions{Token: "s3cret", SessionIdle: time.Minute, MaxSessions: 3,
		OnExpire: func(id string) { expired <- id }}) + "/mcp"
	ctx := context.Background()
	init := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

	// Credentials and origin.
	for name, c := range map[string]struct {
		token  string
		header map[string]string
		want   int
	}{
		"no token":     {"", nil, http.StatusUnauthorized},
		"wrong token":  {"s3cres", nil, http.StatusUnauthorized},
		"two tokens":   {"s3cret", map[string]string{"Authorization": "Bearer s3cret"}, http.StatusUnauthorized},
		"cross-origin": {"s3cret", map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
	} {
		resp := (&rawHTTP{t: t, url: url, token: c.token}).post(ctx, init, c.header)
		_ = resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s: HTTP %d, want %d", name, resp.StatusCode, c.want)
		}
	}

	s1 := &rawHTTP{t: t, url: url, token: "s3cret"}
	s1.initialize()

	// Annotations, all four hints on every tool.
	var list struct {
		Tools []struct {
			Name         string
			Annotations  map[string]any
			OutputSchema map[string]any
		}
	}
	if err := json.Unmarshal(response(t, s1.call(ctx, "tools/list", `{}`)).Result, &list); err != nil || len(list.Tools) != 19 {
		t.Fatalf("tools/list: %v %d", err, len(list.Tools))
	}
	for _, tl := range list.Tools {
		for _, h := range []string{"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"} {
			if _, ok := tl.Annotations[h].(bool); !ok {
				t.Errorf("%s: no %s: %v", tl.Name, h, tl.Annotations)
			}
		}
		if tl.OutputSchema["type"] != "object" {
			t.Errorf("%s: outputSchema %v", tl.Name, tl.OutputSchema)
		}
		if strings.Contains(string(mustJSON(tl)), `"type":[`) {
			t.Errorf("%s: a type array", tl.Name)
		}
	}
	ann := map[string]map[string]any{}
	for _, tl := range list.Tools {
		ann[tl.Name] = tl.Annotations
	}
	if ann["room_state"]["readOnlyHint"] != true || ann["walk"]["destructiveHint"] != true || ann["accept"]["destructiveHint"] != true || ann["browse_bouncers"]["readOnlyHint"] != true {
		t.Errorf("annotations: %v", ann)
	}

	// Duplicate keys.
	dup := response(t, s1.call(ctx, "tools/call", `{"name":"decline_negotiation","arguments":{"negotiation_id":"neg_a","negotiation_id":"neg_b"}}`)).tool(t)
	if !dup.IsError || !strings.Contains(dup.text(), "invalid_json") {
		t.Fatalf("duplicate keys: %+v", dup)
	}
	// Repeated keys in the envelope: 400 with the JSON-RPC error, nothing run.
	resp := s1.post(ctx, `{"jsonrpc":"2.0","id":90,"method":"tools/call","params":{"name":"room_state","name":"walk","arguments":{}}}`, nil)
	var refused rawMsg
	_ = json.NewDecoder(resp.Body).Decode(&refused)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || string(refused.ID) != "90" || !strings.Contains(string(refused.Error), `"code":-32600`) {
		t.Fatalf("two names: HTTP %d, %+v", resp.StatusCode, refused)
	}

	// A long wait without a progressToken answers at 20 s and says so.
	msgs := s1.call(ctx, "tools/call", `{"name":"wait_lobby","arguments":{"timeout_seconds":120}}`)
	next(t, sig.waiting)
	agentClock.Advance(20 * time.Second)
	r := response(t, msgs).tool(t)
	if r.IsError || !strings.Contains(fmt.Sprint(r.field(t, "note")), "shortened to 20") {
		t.Fatalf("a silent long wait: %+v", r)
	}
	next(t, sig.done)

	// With a progressToken: progress every 10 s, the full 120 s.
	msgs = s1.call(ctx, "tools/call", `{"name":"wait_lobby","arguments":{"timeout_seconds":120},"_meta":{"progressToken":"p1"}}`)
	next(t, sig.waiting)
	for i := 1; i <= 11; i++ {
		agentClock.Advance(10 * time.Second)
		if m := <-msgs; m.Method != "notifications/progress" || !strings.Contains(string(m.Params), `"progressToken":"p1"`) {
			t.Fatalf("at %d s: %+v", 10*i, m)
		}
	}
	agentClock.Advance(10 * time.Second) // 120 s
	r = response(t, msgs).tool(t)
	if r.IsError || r.field(t, "note") != "nothing new" {
		t.Fatalf("a long wait with progress: %+v", r)
	}
	next(t, sig.done)

	// A wait abandoned by its client takes nothing away.
	actx, abandon := context.WithCancel(ctx)
	go func() {
		for range s1.call(actx, "tools/call", `{"name":"wait_lobby","arguments":{"timeout_seconds":20}}`) {
		}
	}()
	next(t, sig.waiting)
	abandon()
	if d := next(t, sig.done); !strings.Contains(d, "context canceled") {
		t.Fatalf("the abandoned wait ended with %q", d)
	}
	s2 := &rawHTTP{t: t, url: url, token: "s3cret"}
	s2.initialize()
	neg := requestBouncer(t, base, brandKey, bouncerID)
	for _, s := range []*rawHTTP{s1, s2} {
		r := response(t, s.call(ctx, "tools/call", `{"name":"wait_lobby","arguments":{"timeout_seconds":10}}`)).tool(t)
		if ids := itemsOf(t, r); len(ids) != 1 || ids[0] != neg {
			t.Fatalf("session %s got %v, want %s", s.session, ids, neg)
		}
	}
	if r := response(t, s1.call(ctx, "tools/call", `{"name":"wait_lobby","arguments":{"timeout_seconds":0}}`)).tool(t); len(itemsOf(t, r)) != 0 {
		t.Fatalf("delivered twice: %+v", r)
	}

	// The cap: 3 sessions, the fourth refused.
	s3 := &rawHTTP{t: t, url: url, token: "s3cret"}
	s3.initialize()
	resp = (&rawHTTP{t: t, url: url, token: "s3cret"}).post(ctx, init, nil)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a fourth session: HTTP %d", resp.StatusCode)
	}

	// Idle sessions expire; a request on one is told the session is gone.
	// (The sweep's timer is the agent clock's only one now.)
	for deadline := time.Now().Add(waitFor); agentClock.Pending() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the sweep never armed its timer")
		}
	}
	agentClock.Advance(time.Minute)
	got := map[string]bool{}
	for range 3 {
		select {
		case id := <-expired:
			got[id] = true
		case <-time.After(waitFor):
			t.Fatalf("expired %v of %s %s %s; agent timers pending %d", got, s1.session, s2.session, s3.session, agentClock.Pending())
		}
	}
	if !got[s1.session] || !got[s2.session] || !got[s3.session] {
		t.Fatalf("expired %v", got)
	}
	resp = s1.post(ctx, `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}`, nil)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("a request on an expired session: HTTP %d", resp.StatusCode)
	}
	s4 := &rawHTTP{t: t, url: url, token: "s3cret"}
	s4.initialize()
}

// rawStdio is a hand-written client of newline-delimited JSON-RPC on a
// pipe, as a host runs `venue mcp`.
type rawStdio struct {
	t   *testing.T
	w   io.Writer
	in  chan rawMsg
	seq int
}

func stdioServe(t *testing.T, a *mcpagent.Agent) *rawStdio {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- a.Server().Run(ctx, mcpagent.StdioTransport(inR, outW))
		_ = outW.Close()
	}()
	c := &rawStdio{t: t, w: inW, in: make(chan rawMsg, 64)}
	go func() {
		defer close(c.in)
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m rawMsg
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				c.in <- m
			}
		}
	}()
	t.Cleanup(func() { _ = inW.Close(); cancel(); <-done; _ = a.Close() })
	return c
}

func (c *rawStdio) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.w, line+"\n"); err != nil {
		c.t.Fatal(err)
	}
}

// request sends a request and returns its id.
func (c *rawStdio) request(method, params string) int {
	c.seq++
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, c.seq, method, params))
	return c.seq
}

// read returns the next message.
func (c *rawStdio) read() rawMsg {
	c.t.Helper()
	select {
	case m, ok := <-c.in:
		if !ok {
			c.t.Fatal("the server's output ended")
		}
		return m
	case <-time.After(waitFor):
		c.t.Fatal("no message")
		return rawMsg{}
	}
}

// TestRawStdio: a hand-written client on the stdio transport at the
// revision the server serves newest and at an older one. Annotations are
// there; duplicate keys are refused; a wait with a progressToken sends
// progress; a cancelled wait takes nothing away.
func TestRawStdio(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	base := startVenue(t, clock.NewFake(start))
	_, brandKey := register(t, base, "Acme", "brand", grants.Scope{}, start)
	bouncerID, bouncerKey := register(t, base, "Letters", "bouncer", grants.Scope{}, start)
	agentClock := clock.NewFake(start)
	a, err := mcpagent.New(mcpagent.Config{URL: base, APIKey: bouncerKey, Clock: agentClock})
	if err != nil {
		t.Fatal(err)
	}
	sig := hook(a)
	c := stdioServe(t, a)
	c.request("initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}`)
	if m := c.read(); !strings.Contains(string(m.Result), `"protocolVersion":"2025-06-18"`) {
		t.Fatalf("initialize: %s %s", m.Result, m.Error)
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	c.request("tools/list", `{}`)
	m := c.read()
	if n := strings.Count(string(m.Result), `"readOnlyHint"`); n != 19 || strings.Count(string(m.Result), `"openWorldHint":true`) != 19 {
		t.Fatalf("annotations on %d tools: %s", n, m.Result)
	}

	c.request("tools/call", `{"name":"wait_lobby","arguments":{"timeout_seconds":1,"timeout_seconds":90}}`)
	if r := c.read().tool(t); !r.IsError || !strings.Contains(r.text(), "invalid_json") {
		t.Fatalf("duplicate keys: %+v", r)
	}
	// Repeated keys in the envelope (a host approving the first "name"
	// must not see the last one run), and a line that is not JSON: each is
	// answered with a JSON-RPC error and the server reads on.
	for _, bad := range []struct{ line, code, id string }{
		{`{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"name":"room_state","name":"walk","arguments":{"negotiation_id":"neg_x"}}}`, "-32600", "41"},
		{`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"submit_offer","arguments":{"to":"a"},"arguments":{"to":"b"}}}`, "-32600", "42"},
		{`{"jsonrpc":"2.0","id":43,"method":"tools/call","method":"tools/list","params":{}}`, "-32600", "43"},
		{`{"jsonrpc":"2.0","id":44,"ID":45,"method":"tools/list","params":{}}`, "-32600", "44"},
		{`{"jsonrpc":"2.0","id":46,"id":47,"method":"tools/list","params":{}}`, "-32600", "null"},
		{`garbage`, "-32700", "null"},
	} {
		c.send(bad.line)
		m := c.read()
		if !strings.Contains(string(m.Error), `"code":`+bad.code) || cmp.Or(string(m.ID), "null") != bad.id {
			t.Fatalf("%s: answered id %s, result %s, error %s; want error %s with id %s", bad.line, m.ID, m.Result, m.Error, bad.code, bad.id)
		}
	}
	if id := c.request("tools/list", `{}`); !strings.Contains(string(c.read().Result), `"room_state"`) {
		t.Fatalf("request %d after the refused lines: no tool list", id)
	}

	id := c.request("tools/call", `{"name":"wait_lobby","arguments":{"timeout_seconds":90},"_meta":{"progressToken":7}}`)
	next(t, sig.waiting)
	agentClock.Advance(10 * time.Second)
	if m := c.read(); m.Method != "notifications/progress" || !strings.Contains(string(m.Params), `"progressToken":7`) {
		t.Fatalf("progress: %+v", m)
	}
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d,"reason":"the user moved on"}}`, id))
	if d := next(t, sig.done); !strings.Contains(d, "context canceled") {
		t.Fatalf("the cancelled wait ended with %q", d)
	}
	neg := requestBouncer(t, base, brandKey, bouncerID)
	c.request("tools/call", `{"name":"wait_lobby","arguments":{"timeout_seconds":10}}`)
	for {
		m := c.read()
		if m.Method != "" {
			continue // a late notification of the cancelled call
		}
		if string(m.ID) == fmt.Sprint(id) {
			continue // the SDK may still answer the cancelled call
		}
		if ids := itemsOf(t, m.tool(t)); len(ids) != 1 || ids[0] != neg {
			t.Fatalf("after the cancelled wait: %v, want %s", ids, neg)
		}
		break
	}
}
