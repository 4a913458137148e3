package demo_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/venuehq/venue/client"
	"github.com/venuehq/venue/demo"
	"github.com/venuehq/venue/venue"
)

// startVenue runs a real venue (memory store, wall clock, the default
// registration limit) on a loopback port for the life of the test and
// returns its base URL.
func startVenue(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	srv, err := venue.New(venue.Config{Addr: ln.Addr().String(), PublicURL: base, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan string, 1), make(chan error, 1)
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

func run(t *testing.T, o demo.Options) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out bytes.Buffer
	err := demo.Run(ctx, o, &out)
	return out.String(), err
}

// TestDemoReruns: ten runs in a row on one venue (which allows ten
// registrations a minute from an address) all succeed: the first registers
// the two agents and keeps them in the state file (0600), the others reuse
// them, so browse lists one demo bouncer; each run prints the spectator
// page of its negotiation and /arena.
func TestDemoReruns(t *testing.T) {
	t.Parallel()
	base := startVenue(t)
	state := filepath.Join(t.TempDir(), "venue", "demo.json")
	negs := map[string]bool{}
	for i := range 10 {
		out, err := run(t, demo.Options{URL: base, StateFile: state})
		if err != nil {
			t.Fatalf("run %d: %v\n%s", i+1, err, out)
		}
		how := "registered"
		if i > 0 {
			how = `reused \(` + regexp.QuoteMeta(state) + `\)`
		}
		for _, want := range []string{
			`brand    Demo Brand [0-9a-f]{4} \(agt_\w+\), ` + how,
			`bouncer  Demo Bouncer [0-9a-f]{4} \(agt_\w+\), ` + how,
			`watch    ` + regexp.QuoteMeta(base) + `/negotiations/(neg_\w+) \(every practice negotiation: ` + regexp.QuoteMeta(base) + `/arena\)`,
			`rerun with --pace 2s`,
			`receipt  OK: signed by the venue's key, deal, arena true`,
		} {
			if !regexp.MustCompile(want).MatchString(out) {
				t.Fatalf("run %d lacks %q:\n%s", i+1, want, out)
			}
		}
		negs[regexp.MustCompile(`/negotiations/(neg_\w+)`).FindStringSubmatch(out)[1]] = true
	}
	if len(negs) != 10 {
		t.Fatalf("%d negotiations in 10 runs", len(negs))
	}
	fi, err := os.Stat(state)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the state file: %v %v", fi, err)
	}

	// One demo bouncer in browse, whoever looks.
	c, _ := client.New(base)
	ctx := context.Background()
	a, err := c.Register(ctx, "Onlooker", "brand", nil)
	if err != nil {
		t.Fatal(err)
	}
	l, err := c.WithKey(a.APIKey).DialLobby(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	list, err := l.BrowseBouncers(ctx, client.BrowseQuery{Q: "Demo Bouncer"})
	if err != nil || list.Total != 1 {
		t.Fatalf("browse: %+v %v", list, err)
	}
}

// TestDemoForgotten: an agent in the state file that the venue does not
// know (a memory store restarted, a key replaced) is registered anew and
// the state file rewritten; a state file the demo did not write is an
// error naming it, and left alone.
func TestDemoForgotten(t *testing.T) {
	t.Parallel()
	base := startVenue(t)
	c, _ := client.New(base)
	info, err := c.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(t.TempDir(), "demo.json")
	stale := map[string]any{"venues": map[string]any{base + " " + info.Audience: map[string]any{
		"brand": map[string]any{"agent_id": "agt_gone", "name": "Demo Brand 0000", "api_key": "bsk_gone", "principal_seed": "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"},
	}}}
	raw, _ := json.Marshal(stale)
	if err := os.WriteFile(state, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, demo.Options{URL: base, StateFile: state})
	if err != nil || !regexp.MustCompile(`brand    Demo Brand [0-9a-f]{4} \(agt_\w+\), registered`).MatchString(out) {
		t.Fatalf("a forgotten agent: %v\n%s", err, out)
	}
	if raw, _ := os.ReadFile(state); strings.Contains(string(raw), "agt_gone") {
		t.Fatalf("the state still names the forgotten agent: %s", raw)
	}

	bad := filepath.Join(t.TempDir(), "notes.json")
	if err := os.WriteFile(bad, []byte("my notes"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, demo.Options{URL: base, StateFile: bad}); err == nil || !strings.Contains(err.Error(), bad) {
		t.Fatalf("a state file the demo did not write: %v", err)
	}
	if raw, _ := os.ReadFile(bad); string(raw) != "my notes" {
		t.Fatalf("the file was changed: %q", raw)
	}
}

// TestDemoPace: --pace pauses before every move (at least nine of them:
// the accept of the request and eight frames), and is bounded.
func TestDemoPace(t *testing.T) {
	t.Parallel()
	base := startVenue(t)
	const pace = 40 * time.Millisecond
	start := time.Now()
	out, err := run(t, demo.Options{URL: base, Pace: pace})
	if err != nil {
		t.Fatalf("paced: %v\n%s", err, out)
	}
	if took := time.Since(start); took < 9*pace {
		t.Fatalf("a run paced at %s took %s", pace, took)
	}
	if strings.Contains(out, "rerun with --pace") {
		t.Fatalf("a paced run suggests pacing:\n%s", out)
	}
	for _, p := range []time.Duration{-time.Second, demo.MaxPace + time.Second} {
		if _, err := run(t, demo.Options{URL: base, Pace: p}); err == nil || !strings.Contains(err.Error(), "--pace") {
			t.Fatalf("pace %s: %v", p, err)
		}
	}
}
