package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/venuehq/venue/client"
	"github.com/venuehq/venue/mcpagent"
)

// registerAgent registers an agent without a principal key and returns its
// id and api_key.
func registerAgent(t *testing.T, base, name, role string) (string, string) {
	t.Helper()
	c, err := client.New(base)
	if err != nil {
		t.Fatal(err)
	}
	a, err := c.Register(context.Background(), name, role, nil)
	if err != nil {
		t.Fatal(err)
	}
	return a.ID, a.APIKey
}

// profileOf calls get_profile (no arguments: the agent's own record) and
// returns its agent_id.
func profileOf(t *testing.T, cs *mcp.ClientSession) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_profile", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("get_profile: %v %+v", err, res)
	}
	var p struct {
		AgentID string `json:"agent_id"`
	}
	if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &p); err != nil {
		t.Fatal(err)
	}
	return p.AgentID
}

// TestMCPStdio runs `venue mcp` with the MCP session on its stdin and
// stdout: it acts as the agent of VENUE_API_KEY.
func TestMCPStdio(t *testing.T) {
	base := startCmdVenue(t)
	id, key := registerAgent(t, base, "Letters", "bouncer")
	t.Setenv("VENUE_API_KEY", key)

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	stderr := newSyncBuffer()
	done := make(chan error, 1)
	go func() {
		done <- runCobra(t, mcpCmd(), inR, outW, stderr, "--url", base)
		_ = outW.Close()
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).
		Connect(context.Background(), &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := profileOf(t, cs); got != id {
		t.Fatalf("acts as %s, want %s", got, id)
	}
	stderr.waitFor(t, "agent_id="+id)
	_ = cs.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("venue mcp: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("venue mcp did not end when its stdin closed")
	}
}

// TestMCPHTTP serves the streamable HTTP transport and uses it.
func TestMCPHTTP(t *testing.T) {
	t.Parallel()
	base := startCmdVenue(t)
	id, key := registerAgent(t, base, "Acme", "brand")
	agent, err := mcpagent.New(mcpagent.Config{URL: base, APIKey: key})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = agent.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	h, err := agent.HTTPHandler(mcpagent.HTTPOptions{Token: "t0ken"})
	if err != nil {
		t.Fatal(err)
	}
	go func() { done <- serveMCPHTTP(ctx, ln, h, slog.New(slog.DiscardHandler)) }()
	endpoint := "http://" + ln.Addr().String() + "/mcp"
	if _, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: endpoint}, nil); err == nil {
		t.Fatal("a client without the token was served")
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: endpoint,
			HTTPClient: &http.Client{Transport: bearerTransport{"t0ken"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := profileOf(t, cs); got != id {
		t.Fatalf("acts as %s, want %s", got, id)
	}
	_ = cs.Close()
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
}

// bearerTransport adds Authorization: Bearer token to every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestMCPHelpNamesTheRevision: --help says which MCP revision is served.
func TestMCPHelpNamesTheRevision(t *testing.T) {
	out := newSyncBuffer()
	if err := runCobra(t, mcpCmd(), strings.NewReader(""), out, out, "--help"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "revision "+mcpagent.NewestProtocol) || !strings.Contains(out.String(), "--session-idle") {
		t.Fatalf("help: %s", out.String())
	}
}

func TestMCPNeedsKey(t *testing.T) {
	t.Setenv("VENUE_API_KEY", "")
	err := runCobra(t, mcpCmd(), strings.NewReader(""), io.Discard, io.Discard, "--url", "http://127.0.0.1:1")
	if err == nil || !strings.Contains(err.Error(), "VENUE_API_KEY") {
		t.Fatalf("no key: %v", err)
	}
}
