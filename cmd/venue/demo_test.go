package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/venuehq/venue/venue"
)

// startCmdVenue runs a real venue (memory store, wall clock) on a loopback
// port for the life of the test and returns its base URL.
func startCmdVenue(t *testing.T, mut ...func(*venue.Config)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	cfg := venue.Config{Addr: ln.Addr().String(), PublicURL: base, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, m := range mut {
		m(&cfg)
	}
	srv, err := venue.New(cfg)
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
			t.Errorf("serve: %v", err)
		}
	})
	return base
}

// syncBuffer is an output that tests can read while a command writes it,
// and wait on.
type syncBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{}
}

func newSyncBuffer() *syncBuffer { return &syncBuffer{changed: make(chan struct{}, 1)} }

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case b.changed <- struct{}{}:
	default:
	}
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor waits until the output matches re (a safety-net timeout only) and
// returns the output.
func (b *syncBuffer) waitFor(t *testing.T, re string) string {
	t.Helper()
	rx := regexp.MustCompile(re)
	timeout := time.After(5 * time.Second)
	for {
		s := b.String()
		if rx.MatchString(s) {
			return s
		}
		select {
		case <-b.changed:
		case <-timeout:
			t.Fatalf("output never matched %q:\n%s", re, s)
		}
	}
}

// runCobra runs cmd with args and stdin; stdout and stderr are returned.
func runCobra(t *testing.T, cmd *cobra.Command, stdin io.Reader, stdout, stderr io.Writer, args ...string) error {
	t.Helper()
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	cmd.SetIn(stdin)
	if args == nil {
		args = []string{}
	}
	cmd.SetArgs(args)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	return cmd.ExecuteContext(context.Background())
}

func TestDemo(t *testing.T) {
	t.Parallel()
	base := startCmdVenue(t)
	var out, errOut bytes.Buffer
	err := runCobra(t, demoCmd(), strings.NewReader(""), &out, &errOut, "--url", base, "--state", filepath.Join(t.TempDir(), "demo.json"))
	if err != nil {
		t.Fatalf("demo: %v\n%s%s", err, out.String(), errOut.String())
	}
	s := out.String()
	for _, want := range []string{
		`brand    Demo Brand [0-9a-f]{4} \(agt_\w+\), registered`,
		`watch    ` + regexp.QuoteMeta(base) + `/negotiations/neg_\w+ \(every practice negotiation: ` + regexp.QuoteMeta(base) + `/arena\)`,
		`"amount_usd":\{"max":3500\},"categories":\["primary_slot"\]`,
		`"amount_usd":\{"min":2500\}`,
		`lobby    the brand browses primary_slot and finds Demo Bouncer`,
		`offer off_\S+ submitted \(arena\), negotiation neg_\S+ requested`,
		`negotiation_started\s+negotiation neg_\S+: brand Demo Brand \S+, bouncer Demo Bouncer \S+  arena  turn: brand`,
		`#1 +brand +message +"Hello!`,
		`#2 +brand +propose_terms +\$2,000\.00 · primary_slot · 2 sends`,
		`#3 +bouncer +research`,
		`bouncer +agent_thinking`,
		`#4 +bouncer +counter_terms +\$3,400\.00`,
		`#5 +brand +counter_terms +\$2,700\.00`,
		`#6 +bouncer +counter_terms +\$3,050\.00`,
		`#7 +brand +counter_terms +\$2,875\.00`,
		`#8 +bouncer +accept`,
		`#9 +venue +negotiation_ended +DEAL  \$2,875\.00 · primary_slot · 2 sends`,
		`outcome  DEAL at \$2,875\.00, primary_slot, 2 sends \(offer_hash sha256:[0-9a-f]{64}\)`,
		`receipt  OK: signed by the venue's key, deal, arena true`,
		`transcript OK: 9 entries re-hashed, head sha256:[0-9a-f]{64}`,
	} {
		if !regexp.MustCompile(want).MatchString(s) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "#10") {
		t.Errorf("more frames than the script:\n%s", s)
	}
}

// TestDemoFails: when the protocol does not go as it must, the demo says
// what and fails. A venue that lets each connection send only four frames
// refuses the bouncer's accept (its fifth frame, the typing indicator
// counting) with rate_limited.
func TestDemoFails(t *testing.T) {
	t.Parallel()
	base := startCmdVenue(t, func(c *venue.Config) {
		c.Limits = venue.Limits{FramesPerSecond: 0.001, FrameBurst: 4}
	})
	var out, errOut bytes.Buffer
	err := runCobra(t, demoCmd(), strings.NewReader(""), &out, &errOut, "--url", base, "--state", "")
	if err == nil || !strings.Contains(err.Error(), "demo failed: bouncer: accept: venue: rate_limited") {
		t.Fatalf("demo on a venue that refuses the accept: %v\n%s", err, out.String())
	}

	// No venue at all.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	err = runCobra(t, demoCmd(), strings.NewReader(""), &out, &errOut, "--url", "http://"+addr, "--state", "")
	if err == nil || !strings.Contains(err.Error(), "is a venue running at") {
		t.Fatalf("demo without a venue: %v", err)
	}
}
