package pircan_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/venuehq/venue/directory"
	"github.com/venuehq/venue/internal/irctest"
	"github.com/venuehq/venue/pircan"
	"github.com/venuehq/venue/store/memory"
)

// scriptedBridge runs a bridge on a scripted server advertising isupport
// (each of opts applied to its Config) and waits until it is registered
// and in the lobby.
func scriptedBridge(t *testing.T, isupport string, opts ...func(*pircan.Config)) *irctest.Scripted {
	t.Helper()
	srv := irctest.Script(t, isupport)
	cfg := pircan.Config{Addr: srv.Addr, Nick: "PIRCAN", Account: "pircan", Password: "pw",
		BackoffMin: 100 * time.Millisecond, BackoffMax: 500 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, o := range opts {
		o(&cfg)
	}
	b := pircan.New(cfg, &directory.Service{Store: memory.New(), Now: time.Now}, pircan.NewMemoryState())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	select {
	case <-srv.Ready():
	case <-time.After(irctest.WaitFor):
		t.Fatal("the bridge never joined on the scripted server")
	}
	return srv
}

// scriptedReply returns the next NOTICE to nick, parsed.
func scriptedReply(t *testing.T, srv *irctest.Scripted, nick, verb string) map[string]any {
	t.Helper()
	for {
		select {
		case n := <-srv.Notices:
			if n[0] != nick {
				continue
			}
			rest, _ := strings.CutPrefix(n[1], "PIRCAN/1 ")
			v, js, _ := strings.Cut(rest, " ")
			var m map[string]any
			if v != verb || json.Unmarshal([]byte(js), &m) != nil {
				t.Fatalf("to %s: %q, want %s", nick, n[1], verb)
			}
			return m
		case <-time.After(irctest.WaitFor):
			t.Fatalf("no %s to %s", verb, nick)
		}
	}
}

// Accounts are folded by the server's CASEMAPPING, every spelling: two
// spellings the server takes for one account share one agent, two it
// keeps apart get two (a scripted server: the test network advertises
// rfc1459 only).
func TestCasemappingAsTheServerSays(t *testing.T) {
	t.Parallel()
	type pair struct {
		a, b string
		same bool
	}
	cases := []struct {
		casemapping string
		pairs       []pair
	}{
		{"ascii", []pair{{"Ann", "aNN", true}, {"Ann[", "ann{", false}, {"Bo~", "bo^", false}}},
		{"rfc1459", []pair{{"Ann", "aNN", true}, {"Ann[", "ann{", true}, {"Bo~", "bo^", true}}},
		{"rfc1459-strict", []pair{{"Ann[", "ann{", true}, {"Bo~", "bo^", false}, {"Cy\\", "cy|", true}}},
		{"strict-rfc1459", []pair{{"Ann[", "ann{", true}, {"Bo~", "bo^", false}}},
		{"rfc8265", []pair{{"ÉLODIE", "élodie", true}, {"Ann[", "ann{", false}, {"ｄａｎａ", "Dana", true}, {"Bo~", "bo^", false}}},
		{"rfc7613", []pair{{"ÉLODIE", "élodie", true}, {"Ann[", "ann{", false}}},
		{"precis", []pair{{"ΣΑΣ", "σας", false}, {"ÉLODIE", "élodie", true}, {"Bo~", "bo^", false}}},
	}
	for _, tc := range cases {
		t.Run(tc.casemapping, func(t *testing.T) {
			t.Parallel()
			srv := scriptedBridge(t, "CASEMAPPING="+tc.casemapping)
			for i, p := range tc.pairs {
				n1, n2 := "one"+string(rune('a'+i)), "two"+string(rune('a'+i))
				srv.Privmsg(n1, p.a, `PIRCAN/1 HELLO`)
				first := scriptedReply(t, srv, n1, "HELLO")
				srv.Privmsg(n2, p.b, `PIRCAN/1 HELLO`)
				second := scriptedReply(t, srv, n2, "HELLO")
				if first["new"] != true || (second["agent_id"] == first["agent_id"]) != p.same || (second["new"] == false) != p.same {
					t.Fatalf("%q then %q (same: %v): %v then %v", p.a, p.b, p.same, first, second)
				}
			}
		})
	}
}
