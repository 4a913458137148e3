package pircan

import (
	"context"
	"testing"

	"github.com/venuehq/venue/directory"
	"github.com/venuehq/venue/negotiation"
)

func TestNameKey(t *testing.T) {
	t.Parallel()
	same := [][2]string{{"Ann", "ANN"}, {"Ann", "\u0410nn"}, {"Ann", "\u0391nn"}, {"PaypaI", "paypal"}, {"modem", "rnodern"}, {" Ann ", "ann"}}
	for _, p := range same {
		if NameKey(p[0]) != NameKey(p[1]) {
			t.Errorf("%q and %q have keys %q and %q", p[0], p[1], NameKey(p[0]), NameKey(p[1]))
		}
	}
	for _, p := range [][2]string{{"Ann", "Anne"}, {"Hazmat", "Hazmap"}} {
		if NameKey(p[0]) == NameKey(p[1]) {
			t.Errorf("%q and %q share key %q", p[0], p[1], NameKey(p[0]))
		}
	}
}

// HELLO refuses a name that reads like another agent's: an IRC agent's
// (its case or a confusable spelling) or a venue agent's; the refusal
// registers nothing and counts no registration.
func TestHelloRefusesLookalikeNames(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ann := one(t, f.send(t, "ann", "ann", `PIRCAN/1 HELLO {"name":"Ann Hazmat"}`), "HELLO")["agent_id"].(string)
	for _, name := range []string{"ANN HAZMAT", "\u0410nn Hazmat", "Ann Hazrnat"} {
		m := wantError(t, f.send(t, "mallory", "mallory", `PIRCAN/1 HELLO {"name":"`+name+`","id":"h"}`), CodeNameTaken)
		if m["re"] != "h" || m["verb"] != "HELLO" {
			t.Fatalf("refusal %v", m)
		}
	}
	if _, err := f.h.dir.AgentByIRCAccount(context.Background(), "mallory"); !isNotFound(err) {
		t.Fatalf("a refused HELLO registered an agent: %v", err)
	}
	if n, _ := f.st.Hit(context.Background(), "registrations", T0); n != 2 {
		t.Fatalf("refused HELLOs counted as registrations: %d", n)
	}
	// A venue agent's name (registered over REST) is held too.
	v, _, err := (&directory.Service{Store: f.store, Now: f.clock.Now}).Register(context.Background(), directory.Registration{Name: "Acme Brand", Role: negotiation.RoleBrand})
	must(t, err)
	m := wantError(t, f.send(t, "mallory", "mallory", `PIRCAN/1 HELLO {"name":"acme BRAND"}`), CodeNameTaken)
	if m["message"] == nil || v.ID == ann {
		t.Fatal(m)
	}
	one(t, f.send(t, "mallory", "mallory", `PIRCAN/1 HELLO {"name":"Mallory"}`), "HELLO")
	// A name defaulting to the nick is checked the same way.
	wantError(t, f.send(t, "MALLORY", "other", `PIRCAN/1 HELLO`), CodeNameTaken)
}

// The lobby's topic, set by whoever has operator rights there, loses its
// control and format characters (IRC colours, bidi, zero-width) before
// CHANNELS shows it.
func TestLobbyTopicLosesHiddenControls(t *testing.T) {
	t.Parallel()
	st := NewMemoryState()
	b := New(Config{Lobby: "#agents"}, nil, st)
	b.lobbyTopic("\x02Welcome\x02 \u202eto\u200b the \x0304lobby")
	ch, err := st.Channel(context.Background(), ChannelKey("#agents"))
	must(t, err)
	if ch.Topic != "Welcome to the 04lobby" {
		t.Fatalf("topic %q", ch.Topic)
	}
}

// FIND flags an agent whose name reads like another's (one registered
// before the check, or over REST) with the other's id, "lookalike_id";
// the original is not flagged.
func TestFindFlagsLookalikes(t *testing.T) {
	t.Parallel()
	f := setup(t)
	orig := one(t, f.send(t, "ann", "ann", `PIRCAN/1 HELLO {"name":"Ann Hazmat","capabilities":["hazmat"]}`), "HELLO")["agent_id"].(string)
	// A venue agent registered over REST with a lookalike name.
	v, _, err := (&directory.Service{Store: f.store, Now: f.clock.Now}).Register(context.Background(), directory.Registration{Name: "\u0410nn Hazmat", Role: negotiation.RoleBrand})
	must(t, err)
	rs := f.send(t, "ann", "ann", `PIRCAN/1 FIND {"q":"hazmat"}`)
	flagged := map[string]any{}
	for _, r := range rs[:len(rs)-1] {
		flagged[r.obj["agent_id"].(string)] = r.obj["lookalike_id"]
	}
	if len(flagged) != 2 || flagged[v.ID] != orig || flagged[orig] != nil {
		t.Fatalf("FIND %+v", rs)
	}
}
