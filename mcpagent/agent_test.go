package mcpagent_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/gorilla/websocket"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	docs "github.com/venuehq/venue"
	"github.com/venuehq/venue/client"
	"github.com/venuehq/venue/clock"
	"github.com/venuehq/venue/grants"
	"github.com/venuehq/venue/mcpagent"
	"github.com/venuehq/venue/venue"
)

// waitFor bounds every call over loopback: a safety net, never the thing
// asserted.
const waitFor = 10 * time.Second

// startVenue serves a venue on a fake clock on a loopback port.
func startVenue(t *testing.T, clk clock.Clock) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	srv, err := venue.New(venue.Config{Addr: ln.Addr().String(), PublicURL: base, Clock: clk,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), RegisterPerMinute: 1000})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- srv.ServeListener(ctx, ln, ready) }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return base
}

// register makes an agent whose principal grants it scope, and returns
// its id and api_key.
func register(t *testing.T, base, name, role string, scope grants.Scope, now time.Time) (string, string) {
	t.Helper()
	id, key, _ := registerWithPrincipal(t, base, name, role, scope, now)
	return id, key
}

// registerWithPrincipal is register that also returns the principal's key.
func registerWithPrincipal(t *testing.T, base, name, role string, scope grants.Scope, now time.Time) (string, string, ed25519.PrivateKey) {
	t.Helper()
	ctx := context.Background()
	c, err := client.New(base)
	if err != nil {
		t.Fatal(err)
	}
	pub, priv, err := grants.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	jwk := grants.PublicJWK(pub)
	ag, err := c.Register(ctx, name, role, &jwk)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := grants.SignGrant(priv, grants.GrantClaims{Subject: ag.ID, Audience: "venue", IssuedAt: now,
		ExpiresAt: now.Add(24 * time.Hour), Scope: scope})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.WithKey(ag.APIKey).UploadGrant(ctx, tok); err != nil {
		t.Fatal(err)
	}
	return ag.ID, ag.APIKey, priv
}

// session is one MCP client session on an Agent, over the SDK's in-memory
// transport.
type session struct {
	t    *testing.T
	cs   *mcp.ClientSession
	out  map[string]*jsonschema.Resolved // each tool's output schema, from tools/list
	seen *sync.Map                       // the tools whose answers were checked
}

func connect(t *testing.T, base, key string, clk clock.Clock) session {
	t.Helper()
	a, err := mcpagent.New(mcpagent.Config{URL: base, APIKey: key, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	return serve(t, a)
}

// serve connects an MCP client session to a over the in-memory transport.
func serve(t *testing.T, a *mcpagent.Agent) session {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := a.Server().Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close(); _ = ss.Wait(); _ = a.Close() })
	return newSession(t, cs)
}

// newSession lists the tools of cs and keeps their output schemas, which
// every answer call gets is checked against.
func newSession(t *testing.T, cs *mcp.ClientSession) session {
	t.Helper()
	s := session{t: t, cs: cs, out: map[string]*jsonschema.Resolved{}, seen: &sync.Map{}}
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range tools.Tools {
		b, _ := json.Marshal(tl.OutputSchema)
		var sch jsonschema.Schema
		if err := json.Unmarshal(b, &sch); err != nil {
			t.Fatalf("%s: output schema: %v", tl.Name, err)
		}
		r, err := sch.Resolve(nil)
		if err != nil {
			t.Fatalf("%s: output schema: %v", tl.Name, err)
		}
		s.out[tl.Name] = r
	}
	return s
}

// call calls a tool and returns its text and whether it is an error
// result. A protocol error fails the test: refusals must be results.
func (s session) call(name string, args map[string]any) (string, bool) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		s.t.Fatalf("%s: a protocol error, not a tool result: %v", name, err)
	}
	var text []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text = append(text, tc.Text)
		}
	}
	if !res.IsError {
		checkAnswer(s.t, name, s.out[name], res)
		s.seen.Store(name, true)
	}
	return strings.Join(text, "\n"), res.IsError
}

// checkAnswer checks an answer: its structuredContent is valid against
// the tool's output schema, and its text is the same JSON.
func checkAnswer(t *testing.T, name string, schema *jsonschema.Resolved, res *mcp.CallToolResult) {
	t.Helper()
	if schema == nil {
		t.Fatalf("%s: no output schema", name)
	}
	if res.StructuredContent == nil {
		t.Fatalf("%s: no structuredContent", name)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var inst any
	if err := json.Unmarshal(b, &inst); err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(inst); err != nil {
		t.Fatalf("%s: the answer does not fit the output schema: %v\n%s", name, err, b)
	}
	var text any
	if len(res.Content) != 1 || json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &text) != nil || string(mustJSON(text)) != string(mustJSON(inst)) {
		t.Fatalf("%s: the text is not the structured answer", name)
	}
}

// ok calls a tool that must succeed and decodes its JSON answer.
func (s session) ok(name string, args map[string]any) map[string]any {
	s.t.Helper()
	text, isErr := s.call(name, args)
	if isErr {
		s.t.Fatalf("%s(%v) refused: %s", name, args, text)
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		s.t.Fatalf("%s: answer is not a JSON object: %v: %s", name, err, text)
	}
	return out
}

// refused calls a tool that must come back as an error result, and
// returns its text.
func (s session) refused(name string, args map[string]any) string {
	s.t.Helper()
	text, isErr := s.call(name, args)
	if !isErr {
		s.t.Fatalf("%s(%v) was not refused: %s", name, args, text)
	}
	return text
}

// events waits for events until one has frame (or type) want, and returns
// it.
func (s session) event(negID, want string) map[string]any {
	s.t.Helper()
	for range 10 {
		out := s.ok("wait_events", map[string]any{"negotiation_id": negID, "timeout_seconds": 60})
		for _, e := range out["events"].([]any) {
			ev := e.(map[string]any)
			if ev["frame_type"] == want || ev["type"] == want {
				return ev
			}
		}
	}
	s.t.Fatalf("no %s event", want)
	return nil
}

func cents(c int64) *int64 { return &c }

// TestNegotiateOverMCP: a brand and a bouncer, each an MCP client session
// on its own Agent, meet in the lobby and strike a deal against a real
// venue; a counter past the brand's grant comes back as a tool result
// naming the failed check, an error frame and a REST error likewise.
func TestNegotiateOverMCP(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	fc := clock.NewFake(start)
	base := startVenue(t, fc)
	brandID, brandKey := register(t, base, "Acme", "brand", grants.Scope{Amount: &grants.AmountLimit{MaxCents: cents(3500_00)}}, start)
	bouncerID, bouncerKey := register(t, base, "Letters", "bouncer", grants.Scope{Amount: &grants.AmountLimit{MinCents: cents(2500_00)}}, start)
	brand := connect(t, base, brandKey, fc)
	bouncer := connect(t, base, bouncerKey, fc)

	// The bouncer is in the lobby before the brand asks.
	if out := bouncer.ok("wait_lobby", map[string]any{"timeout_seconds": 0}); len(out["items"].([]any)) != 0 {
		t.Fatalf("bouncer lobby not empty: %v", out)
	}
	found := brand.ok("browse_bouncers", map[string]any{"q": "lett"})
	if items := found["items"].([]any); len(items) != 1 || items[0].(map[string]any)["agent_id"] != bouncerID || items[0].(map[string]any)["online"] != true {
		t.Fatalf("browse: %v", found)
	}
	offer := brand.ok("submit_offer", map[string]any{"to": bouncerID, "title": "Spring launch", "brief": "Two sends",
		"amount_cents": 2000_00, "category": "primary_slot", "sends": 2, "arena": true})
	created := brand.ok("open_negotiation", map[string]any{"offer_id": offer["offer_id"]})
	negID := created["negotiation_id"].(string)

	req := bouncer.ok("wait_lobby", map[string]any{"timeout_seconds": 60})["items"].([]any)[0].(map[string]any)
	if req["type"] != "negotiation_requested" || req["negotiation_id"] != negID || !strings.Contains(string(mustJSON(req["offer"])), `"amount_usd":2000`) {
		t.Fatalf("bouncer got %v", req)
	}
	bouncer.ok("accept_negotiation", map[string]any{"negotiation_id": negID})
	if acc := brand.ok("wait_lobby", map[string]any{"timeout_seconds": 60})["items"].([]any)[0].(map[string]any); acc["type"] != "negotiation_accepted" {
		t.Fatalf("brand got %v", acc)
	}

	st := brand.ok("room_state", map[string]any{"negotiation_id": negID})
	if st["you"] != "brand" || st["turn"] != "you" || st["turn_seconds_left"] != 60.0 || st["deadline_seconds_left"] != 480.0 || st["standing"] != nil || st["status"] != "live" {
		t.Fatalf("brand's first state: %v", st)
	}
	sent := brand.ok("propose", map[string]any{"negotiation_id": negID, "amount_cents": 2800_00, "category": "primary_slot", "sends": 2, "content": "Two sends for $2,800."})
	if sent["landed"] != "propose_terms" || sent["seq"] != 1.0 || sent["state"].(map[string]any)["turn"] != "them" {
		t.Fatalf("propose: %v", sent)
	}
	ev := bouncer.event(negID, "propose_terms")
	if ev["from"] != "them" || ev["amount_cents"] != 2800_00.0 || ev["turn"] != "you" {
		t.Fatalf("bouncer saw %v", ev)
	}
	bouncer.ok("counter", map[string]any{"negotiation_id": negID, "amount_cents": 3900_00, "category": "primary_slot", "sends": 2})
	brand.event(negID, "counter_terms")
	bst := brand.ok("room_state", map[string]any{"negotiation_id": negID})
	if sv := bst["standing"].(map[string]any); sv["by"] != "them" || sv["amount_cents"] != 3900_00.0 {
		t.Fatalf("brand's standing: %v", bst)
	}

	// Past the brand's grant: a scope_block, as text naming the check.
	text := brand.refused("counter", map[string]any{"negotiation_id": negID, "amount_cents": 3600_00, "category": "primary_slot", "sends": 2})
	for _, want := range []string{"scope_block", "counter_terms", "failed check amount_usd", "limit 3500.00", "got 3600.00"} {
		if !strings.Contains(text, want) {
			t.Fatalf("scope_block text lacks %q: %s", want, text)
		}
	}
	// An error frame: nothing of the brand's stands to withdraw.
	if text := brand.refused("withdraw", map[string]any{"negotiation_id": negID}); !strings.HasPrefix(text, "error invalid_state") {
		t.Fatalf("withdraw with nothing of ours standing: %s", text)
	}
	// A REST error: no receipt before the end.
	if text := brand.refused("verify_receipt", map[string]any{"negotiation_id": negID}); !strings.HasPrefix(text, "error ") || !strings.Contains(text, "HTTP 4") {
		t.Fatalf("receipt of a live negotiation: %s", text)
	}
	// Bad input is refused by the schema, as a result too.
	if text := brand.refused("send_message", map[string]any{"negotiation_id": negID, "content": strings.Repeat("x", 4001)}); !strings.Contains(text, "content") {
		t.Fatalf("a 4,001-character message: %s", text)
	}
	if text := brand.refused("counter", map[string]any{"negotiation_id": negID, "amount_cents": 3200.5}); text == "" {
		t.Fatal("a fractional cent amount was taken")
	}

	counter := brand.ok("counter", map[string]any{"negotiation_id": negID, "amount_cents": 3400_00, "category": "primary_slot", "sends": 2, "content": "$3,400, final."})
	hash := counter["offer_hash"].(string)
	if ev := bouncer.event(negID, "counter_terms"); ev["offer_hash"] != hash || ev["amount_cents"] != 3400_00.0 {
		t.Fatalf("bouncer saw %v", ev)
	}
	bouncer.ok("accept", map[string]any{"negotiation_id": negID, "offer_hash": hash})
	for _, s := range []session{brand, bouncer} {
		end := s.event(negID, "negotiation_ended")
		if end["status"] != "deal" || end["amount_cents"] != 3400_00.0 {
			t.Fatalf("ending: %v", end)
		}
	}
	if st := brand.ok("room_state", map[string]any{"negotiation_id": negID}); st["status"] != "deal" || st["receipt"] == "" {
		t.Fatalf("state after the deal: %v", st)
	}
	// A session that joins after the end (the host restarted venue mcp)
	// sees the ending and its receipt too, not only the status.
	later := connect(t, base, brandKey, fc)
	if st := later.ok("room_state", map[string]any{"negotiation_id": negID}); st["status"] != "deal" || st["receipt"] == nil || st["receipt"] == "" ||
		st["ending"] == nil || st["ending"].(map[string]any)["status"] != "deal" || st["turn"] != nil && st["turn"] != "" {
		t.Fatalf("a later session's state after the deal: %v", st)
	}
	rc := brand.ok("verify_receipt", map[string]any{"negotiation_id": negID})
	if rc["verified"] != true || rc["status"] != "deal" || rc["negotiation_id"] != negID || rc["transcript_frames"].(float64) < 4 {
		t.Fatalf("receipt: %v", rc)
	}
	_ = brandID
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// TestResourcesAndSchemas: the wire documents are served as they are in
// the repository, and the input schemas carry units and limits.
func TestResourcesAndSchemas(t *testing.T) {
	t.Parallel()
	s := connect(t, "http://127.0.0.1:1", "bsk_unused", clock.Real{})
	ctx := context.Background()
	for uri, want := range map[string]string{"venue://docs/PROTOCOL.md": docs.Protocol, "venue://docs/DELEGATION.md": docs.Delegation} {
		res, err := s.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil || len(res.Contents) != 1 || res.Contents[0].Text != want || want == "" {
			t.Fatalf("%s: %v", uri, err)
		}
	}
	tools, err := s.cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	schemas := map[string]string{}
	for _, tl := range tools.Tools {
		schemas[tl.Name] = string(mustJSON(tl.InputSchema))
	}
	for name, wants := range map[string][]string{
		"propose": {`"amount_cents"`, `integer cents`, `"maximum":1000000000`, `"maxLength":4000`, `"ttl_seconds"`, `"maximum":300`,
			`"flight_start"`, `"usage_rights_days"`, `"maximum":3650`, `"exclusivity_categories"`, `"maximum":365`},
		"submit_offer": {`"maxLength":200`, `"minLength":1`},
		"wait_events":  {`"maximum":120`},
		"send_message": {`"minLength":1`, `"maxLength":4000`},
	} {
		for _, w := range wants {
			if !strings.Contains(schemas[name], w) {
				t.Errorf("%s's schema lacks %s: %s", name, w, schemas[name])
			}
		}
	}
	for _, name := range []string{"browse_bouncers", "get_profile", "submit_offer", "open_negotiation", "wait_lobby", "accept_negotiation",
		"decline_negotiation", "room_state", "wait_events", "propose", "counter", "accept", "reject", "withdraw", "walk", "send_message",
		"escalate", "verify_receipt"} {
		if _, ok := schemas[name]; !ok {
			t.Errorf("no tool %s", name)
		}
	}
	// A venue that cannot be reached is a refusal too, not a protocol error.
	if text := s.refused("get_profile", nil); !strings.Contains(text, "failed") && !strings.Contains(text, "error") {
		t.Fatalf("unreachable venue: %s", text)
	}
}

// TestDeclineAndEscalate: a bouncer declines one request over MCP and the
// brand hears why; in the next negotiation the brand escalates on its turn
// (the clock pauses), its principal approves, and the decision reaches the
// brand's wait_events.
func TestDeclineAndEscalate(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	fc := clock.NewFake(start)
	base := startVenue(t, fc)
	_, brandKey, principal := registerWithPrincipal(t, base, "Acme", "brand", grants.Scope{Amount: &grants.AmountLimit{MaxCents: cents(3000_00)}}, start)
	bouncerID, bouncerKey := register(t, base, "Letters", "bouncer", grants.Scope{}, start)
	brand := connect(t, base, brandKey, fc)
	bouncer := connect(t, base, bouncerKey, fc)
	bouncer.ok("wait_lobby", map[string]any{"timeout_seconds": 0})

	ask := func() string {
		t.Helper()
		off := brand.ok("submit_offer", map[string]any{"to": bouncerID, "title": "Spring", "arena": true})
		return brand.ok("open_negotiation", map[string]any{"offer_id": off["offer_id"]})["negotiation_id"].(string)
	}
	first := ask()
	if req := bouncer.ok("wait_lobby", map[string]any{"timeout_seconds": 60})["items"].([]any)[0].(map[string]any); req["negotiation_id"] != first {
		t.Fatalf("bouncer got %v", req)
	}
	bouncer.ok("decline_negotiation", map[string]any{"negotiation_id": first, "reason": "booked this month"})
	if d := brand.ok("wait_lobby", map[string]any{"timeout_seconds": 60})["items"].([]any)[0].(map[string]any); d["type"] != "negotiation_declined" || d["reason"].(map[string]any)["quoted_text"] != "booked this month" || d["reason"].(map[string]any)["from"] != "them" {
		t.Fatalf("brand got %v", d)
	}
	if text := bouncer.refused("accept_negotiation", map[string]any{"negotiation_id": first}); !strings.HasPrefix(text, "error invalid_state") {
		t.Fatalf("accepting a declined request: %s", text)
	}
	if text := brand.refused("accept_negotiation", map[string]any{"negotiation_id": first}); !strings.HasPrefix(text, "error forbidden") {
		t.Fatalf("a brand accepting: %s", text)
	}

	negID := ask()
	bouncer.ok("wait_lobby", map[string]any{"timeout_seconds": 60})
	bouncer.ok("accept_negotiation", map[string]any{"negotiation_id": negID})
	esc := brand.ok("escalate", map[string]any{"negotiation_id": negID, "content": "May I go to $3,400?", "amount_cents": 3400_00})
	escID, _ := esc["escalation_id"].(string)
	st := esc["state"].(map[string]any)
	if escID == "" || st["turn"] != "you" || st["turn_paused"] != true || st["turn_seconds_left"] != nil {
		t.Fatalf("escalate: %v", esc)
	}
	if ev := bouncer.event(negID, "escalate"); ev["from"] != "them" || ev["content"] != nil {
		t.Fatalf("the bouncer saw %v", ev)
	}
	now := fc.Now()
	tok, err := grants.SignDecision(principal, grants.DecisionClaims{EscalationID: escID, Decision: grants.DecisionApprove, Audience: "venue",
		IssuedAt: now, ExpiresAt: now.Add(time.Hour), Grant: &grants.Scope{Amount: &grants.AmountLimit{MaxCents: cents(3400_00)}}})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := client.New(base)
	if _, err := c.Decide(context.Background(), escID, tok); err != nil {
		t.Fatal(err)
	}
	res := brand.event(negID, "escalation_resolved")
	if res["decision"] != "approve" || res["escalation_id"] != escID {
		t.Fatalf("resolution: %v", res)
	}
	if st := brand.ok("room_state", map[string]any{"negotiation_id": negID}); st["turn_paused"] == true || st["turn_seconds_left"] != 60.0 {
		t.Fatalf("after the decision: %v", st)
	}
	brand.ok("propose", map[string]any{"negotiation_id": negID, "amount_cents": 3400_00})
}

// TestConnectionNotes: when the lobby socket drops, wait_lobby tells the
// model, and again when it is back; requests work on the new socket.
func TestConnectionNotes(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	fc := clock.NewFake(start)
	base := startVenue(t, fc)
	_, key := register(t, base, "Letters", "bouncer", grants.Scope{}, start)
	var mu sync.Mutex
	var last net.Conn
	d := &websocket.Dialer{HandshakeTimeout: waitFor, NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		mu.Lock()
		last = c
		mu.Unlock()
		return c, err
	}}
	a, err := mcpagent.New(mcpagent.Config{URL: base, APIKey: key, Clock: fc, Options: []client.Option{client.WithDialer(d),
		client.WithLobbyBackoff(client.Backoff{Base: time.Millisecond, Max: 10 * time.Millisecond})}})
	if err != nil {
		t.Fatal(err)
	}
	s := serve(t, a)
	s.ok("wait_lobby", map[string]any{"timeout_seconds": 0})
	mu.Lock()
	_ = last.Close()
	mu.Unlock()
	var notes []string
	for len(notes) < 2 {
		for _, it := range s.ok("wait_lobby", map[string]any{"timeout_seconds": 60})["items"].([]any) {
			if it := it.(map[string]any); it["type"] == "connection" {
				notes = append(notes, it["note"].(string))
			}
		}
	}
	if !strings.Contains(notes[0], "the lobby connection") || !strings.Contains(notes[0], "dropped") || !strings.Contains(notes[1], "came back") {
		t.Fatalf("notes %q", notes)
	}
	if out := s.ok("browse_bouncers", map[string]any{}); out["total"] != 1.0 {
		t.Fatalf("browse after the reconnect: %v", out)
	}
}
