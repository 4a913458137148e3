package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/venuehq/venue/internal/irctest"
	"github.com/venuehq/venue/internal/testenv"
)

// `venue pircan` on its own, beside a `venue serve` node on the same
// Postgres and Redis: an IRC agent's CONTACT reaches a venue agent's lobby
// socket on the node (pushed through Redis), the venue agent's accept over
// the node's REST API reaches the IRC agent at once (NOTIFY, woken through
// Redis).
func TestStandalonePircanBesideANode(t *testing.T) {
	n := irctest.Shared(t)
	id := irctest.RandHex(3)
	account, password := "sa"+id, "pw-"+irctest.RandHex(8)
	reg := irctest.Dial(t, n, account, false)
	reg.Register(password)
	reg.Raw("QUIT")

	db := schemaURL(t)
	redis := testenv.RedisURL(t)
	prefix := testenv.KeyPrefix(t, redis)
	for k, v := range map[string]string{"PIRCAN_IRC_ADDR": "", "PIRCAN_PASSWORD": password, "PIRCAN_IRC_PASS": n.BridgePass, "VENUE_LOG_LEVEL": "warn"} {
		t.Setenv(k, v)
	}
	addr, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	httpAddr, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	adminAddr, err := freeAddr() // not the default 9090: another venue on the machine may hold it
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	node := runCmd(ctx, "serve", "--addr", addr, "--admin-addr", adminAddr, "--database-url", db, "--redis-url", redis, "--redis-prefix", prefix)
	nick, lobby := "PIRCAN"+id, "#agents-"+id
	bridge := runCmd(ctx, "pircan", "--irc-addr", n.Addr(false), "--irc-tls=false", "--nick", nick, "--account", account,
		"--lobby", lobby, "--http", httpAddr, "--database-url", db, "--redis-url", redis, "--redis-prefix", prefix)
	defer func() {
		cancel()
		for _, done := range []<-chan error{node, bridge} {
			if err := <-done; err != nil {
				t.Errorf("stopped with %v", err)
			}
		}
	}()
	var ready struct {
		Pircan struct{ Connected, Identified, Joined bool } `json:"pircan"`
	}
	deadline := time.Now().Add(irctest.WaitFor)
	for getJSON(t, "http://"+httpAddr+"/readyz", &ready); !(ready.Pircan.Connected && ready.Pircan.Identified && ready.Pircan.Joined); getJSON(t, "http://"+httpAddr+"/readyz", &ready) {
		if time.Now().After(deadline) {
			t.Fatalf("venue pircan /readyz: %+v", ready)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var info map[string]any
	for deadline := time.Now().Add(irctest.WaitFor); getJSON(t, "http://"+addr+"/readyz", &info) != 200; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the node is not ready")
		}
	}

	venueAgent, key := registerAgent(t, "http://"+addr, "Venue "+id, "bouncer")
	ws, _, err := websocket.DefaultDialer.Dial("ws://"+addr+"/v1/agents/"+venueAgent+"/ws?token="+key, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if err := ws.WriteMessage(websocket.TextMessage, []byte(`{"type":"browse_bouncers","id":"b"}`)); err != nil {
		t.Fatal(err)
	}
	frame := func(typ string) map[string]any {
		t.Helper()
		_ = ws.SetReadDeadline(time.Now().Add(irctest.WaitFor))
		for {
			_, b, err := ws.ReadMessage()
			if err != nil {
				t.Fatalf("lobby socket, waiting for %s: %v", typ, err)
			}
			var f map[string]any
			if json.Unmarshal(b, &f) == nil && (typ == "" || f["type"] == typ) {
				return f
			}
		}
	}
	frame("") // subscribed: the socket answered

	c := irctest.Dial(t, n, "solo"+id, false)
	c.Register("pw-solo-" + id)
	c.Ask(nick, `PIRCAN/1 HELLO`, "HELLO")
	c.Raw("JOIN " + lobby)
	// Joining the lobby brings its welcome (PIRCAN.md "The lobby").
	if w := c.Expect(nick); !strings.HasPrefix(w.Raw, "Welcome to "+lobby) {
		t.Fatalf("no welcome: %s", w.Raw)
	}
	req := c.Ask(nick, `PIRCAN/1 CONTACT {"to":"`+venueAgent+`","purpose":"Hello from IRC"}`, "CONTACT")
	f := frame("contact_requested")
	if r, _ := f["request"].(map[string]any); r["request_id"] != req["request_id"] {
		t.Fatalf("contact_requested %v", f)
	}
	restCall(t, "http://"+addr, key, "POST", "/v1/contacts/"+req["request_id"].(string)+"/accept", `{}`, 200)
	if r := c.Expect(nick); r.Raw != `PIRCAN/1 NOTIFY {"type":"contact_update"}` {
		t.Fatalf("after the node's accept: %s", r.Raw)
	}
	if a := c.Ask(nick, `PIRCAN/1 AGREEMENTS`, "AGREEMENT"); !strings.Contains(a["with"].(map[string]any)["name"].(string), "Venue "+id) {
		t.Fatalf("AGREEMENT %v", a)
	}
}
