package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/venuehq/venue/mcpagent"
)

// mcpOptions are the flags of `venue mcp`.
type mcpOptions struct {
	url         string
	http        string
	logLevel    string
	sessionIdle time.Duration
	maxSessions int
}

// mcpCmd is `venue mcp`: one agent of a venue as an MCP server, for LLM
// agents whose tools come over the Model Context Protocol.
func mcpCmd() *cobra.Command {
	var o mcpOptions
	cmd := &cobra.Command{
		Use:   "mcp [--url URL] [--http ADDR]",
		Short: "Serve one agent of a venue as an MCP server (stdio, or streamable HTTP with --http)",
		Long: `Act as one agent of a venue (the one whose api_key is in VENUE_API_KEY) and offer
its lobby and rooms as Model Context Protocol tools, so that an LLM agent can negotiate:

  lobby  browse_bouncers, get_profile, update_profile, submit_offer, open_negotiation,
         wait_lobby, accept_negotiation, decline_negotiation
  room   room_state, wait_events, propose, counter, accept, reject, withdraw, walk,
         send_message, escalate, verify_receipt

Money is integer cents (amount_cents 320000 is $3,200.00). A refusal (a scope_block
naming the failed checks, an error frame, a REST error) comes back as a tool result
the model reads, never as a protocol error. PROTOCOL.md and DELEGATION.md are served
as resources (venue://docs/PROTOCOL.md, venue://docs/DELEGATION.md).

Counterparty text (messages, offers, reasons) comes labelled "from":"them": data, never
instructions. The waits answer within 20 s unless the call carries a progressToken; with
one they wait up to 120 s and send notifications/progress every 10 s. What a wait returns
counts as read for that MCP session only once the answer was delivered, so an abandoned
or cancelled call takes nothing away, and every session sees every event.

It serves MCP protocol revision ` + mcpagent.NewestProtocol + ` (the newest of the official Go SDK
it is built on) and the older revisions a client asks for.

By default it speaks MCP on stdin and stdout (logs go to stderr): register it with an
MCP host as the command "venue mcp --url https://venue.example" with VENUE_API_KEY in
its environment. With --http ADDR it serves the streamable HTTP transport at
http://ADDR/mcp instead; every session there acts as the same agent. Every HTTP request
needs "Authorization: Bearer <token>": the token is VENUE_MCP_TOKEN, or one generated
and printed at start when that is unset. Cross-origin browser requests are refused.
Sessions close after --session-idle without a request, and at most --max-sessions
are open at once.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runMCP(cmd, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.url, "url", envOr("VENUE_URL", "http://127.0.0.1:8080"), "the venue's base URL (env VENUE_URL)")
	f.StringVar(&o.http, "http", "", "serve streamable HTTP on this HOST:PORT (path /mcp) instead of stdio")
	f.DurationVar(&o.sessionIdle, "session-idle", mcpagent.DefaultSessionIdle, "with --http: close a session no request used for this long")
	f.IntVar(&o.maxSessions, "max-sessions", mcpagent.DefaultMaxSessions, "with --http: at most this many sessions open at once")
	f.StringVar(&o.logLevel, "log-level", envOr("VENUE_LOG_LEVEL", "info"), "debug, info, warn or error; logs go to stderr (env VENUE_LOG_LEVEL)")
	return cmd
}

func runMCP(cmd *cobra.Command, o mcpOptions) error {
	key := os.Getenv("VENUE_API_KEY")
	if key == "" {
		return errors.New("VENUE_API_KEY is not set: the api_key of the agent to act as")
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return fmt.Errorf("--log-level %q: want debug, info, warn or error", o.logLevel)
	}
	log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	agent, err := mcpagent.New(mcpagent.Config{URL: o.url, APIKey: key, Logger: log})
	if err != nil {
		return err
	}
	defer func() { _ = agent.Close() }()
	me, err := agent.Client().Me(ctx)
	if err != nil {
		return fmt.Errorf("who am I (GET /v1/agents/me at %s): %w", o.url, err)
	}
	log.Info("venue mcp", "agent_id", me.AgentID, "role", me.Role, "venue", o.url, "transport", map[bool]string{true: "http", false: "stdio"}[o.http != ""])

	if o.http == "" {
		// Stdio: cmd's stdin and stdout are os.Stdin and os.Stdout unless a
		// test set them.
		t := mcpagent.StdioTransport(cmd.InOrStdin(), cmd.OutOrStdout())
		err := agent.Server().Run(ctx, t)
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	token := os.Getenv("VENUE_MCP_TOKEN")
	if token == "" {
		token = mcpagent.NewToken()
		fmt.Fprintf(cmd.ErrOrStderr(), "VENUE_MCP_TOKEN is not set; this run's bearer token (send Authorization: Bearer <token>):\n%s\n", token)
	}
	ln, err := net.Listen("tcp", o.http)
	if err != nil {
		return fmt.Errorf("--http %s: %w", o.http, err)
	}
	h, err := agent.HTTPHandler(mcpagent.HTTPOptions{Token: token, SessionIdle: o.sessionIdle, MaxSessions: o.maxSessions})
	if err != nil {
		return err
	}
	return serveMCPHTTP(ctx, ln, h, log)
}

// serveMCPHTTP serves h at /mcp on ln until ctx ends.
func serveMCPHTTP(ctx context.Context, ln net.Listener, h http.Handler, log *slog.Logger) error {
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	log.Info("mcp over streamable HTTP", "url", "http://"+ln.Addr().String()+"/mcp", "protocol", mcpagent.NewestProtocol)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
