package pircan_test

// The handshake over the real IRC network (the harness of bridge_test.go)
// with a real venue node: its handshake service, REST routes, lobby
// sockets and owner portal, as `venue serve` wires them.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/venuehq/venue/bus"
	"github.com/venuehq/venue/client"
	"github.com/venuehq/venue/clock"
	"github.com/venuehq/venue/directory"
	"github.com/venuehq/venue/handshake"
	"github.com/venuehq/venue/internal/irctest"
	"github.com/venuehq/venue/pircan"
	"github.com/venuehq/venue/store/memory"
	"github.com/venuehq/venue/venue"
)

// venueBridge is a venue node and a bridge on its handshake.
type venueBridge struct {
	base  string // the node's http://host:port
	nick  string // the bridge's
	lobby string
	svc   *handshake.Service
	dir   *directory.Service
	br    *testBridge
	// account and password are the bridge's NickServ account.
	account, password string
}

// startVenueBridge runs a venue node (memory store, local bus, the IRC
// account bindings) and a bridge given its handshake and its bus, as
// cmd/venue does, and waits until the bridge is in the lobby.
func startVenueBridge(t *testing.T, n *irctest.Network) *venueBridge {
	t.Helper()
	return startVenueBridgeAfter(t, n, nil)
}

// startVenueBridgeAfter is startVenueBridge running before(v) once the
// node is up, before the bridge connects.
func startVenueBridgeAfter(t *testing.T, n *irctest.Network, before func(v *venueBridge)) *venueBridge {
	t.Helper()
	return startVenueBridgeWith(t, n, before, nil)
}

// startVenueBridgeWith is startVenueBridgeAfter with configure(&cfg) run
// on the bridge's configuration before it starts.
func startVenueBridgeWith(t *testing.T, n *irctest.Network, before func(v *venueBridge), configure func(*pircan.Config)) *venueBridge {
	t.Helper()
	id := irctest.RandHex(3)
	account, password := "pb"+id, "pw-"+irctest.RandHex(8)
	reg := irctest.Dial(t, n, account, false)
	reg.Register(password)
	reg.Raw("QUIT")

	discard := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, b := memory.New(), bus.NewLocal()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := venue.New(venue.Config{Addr: ln.Addr().String(), Store: st, Bus: b, Logger: discard,
		Accounts: directory.IRCAccounts{Store: st}, IRCBridge: true})
	if err != nil {
		t.Fatal(err)
	}
	svc, portal := srv.Handshake()
	cfg := pircan.Config{
		Addr: n.Addr(false), Nick: "PIRCAN" + id, Account: account, Password: password,
		ServerPassword: n.BridgePass, Lobby: "#agents-" + id,
		BackoffMin: 100 * time.Millisecond, BackoffMax: 500 * time.Millisecond,
		// The handshake's own limits are what these tests meet, not the
		// bridge's requests per minute.
		Limits: pircan.Limits{PerRequester: 1000, Unidentified: 1000, Window: time.Minute, Registrations: 1000, RegistrationWindow: time.Hour},
		// Paced faster than the default 2 lines a second: these tests
		// check the handshake, pacer_test.go and the flood test the pace.
		Pace:  pircan.Pace{Burst: 20, PerSecond: 20, MaxQueued: 2000},
		Clock: clock.Real{}, Logger: discard,
		Handshake: svc, Portal: portal, Events: pircan.BusEvents{Bus: b},
	}
	if testing.Verbose() {
		cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if configure != nil {
		configure(&cfg)
	}
	dir := &directory.Service{Store: st, Now: time.Now}
	br := pircan.New(cfg, dir, pircan.NewMemoryState())
	ctx, cancel := context.WithCancel(context.Background())
	ready, served, ran := make(chan string, 1), make(chan error, 1), make(chan error, 1)
	go func() { served <- srv.ServeListener(ctx, ln, ready) }()
	t.Cleanup(func() {
		cancel()
		if err := <-ran; err != nil {
			t.Errorf("bridge: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("venue: %v", err)
		}
	})
	<-ready
	v := &venueBridge{base: "http://" + ln.Addr().String(), nick: cfg.Nick, lobby: cfg.Lobby, svc: svc, dir: dir,
		account: account, password: password}
	if before != nil {
		before(v)
	}
	go func() { ran <- br.Run(ctx) }()
	tb := &testBridge{Bridge: br, nick: cfg.Nick}
	v.br = tb
	tb.waitStatus(t, pircan.Status{Connected: true, Identified: true, Joined: true, Nick: cfg.Nick})
	return v
}

// ask sends a request and returns its reply (verb), setting aside the
// NOTIFY lines that arrive meanwhile (returned too).
func ask(t *testing.T, c *irctest.Client, bridge, text, verb string) (map[string]any, []string) {
	t.Helper()
	c.Raw("PRIVMSG " + bridge + " :" + text)
	return expectSkipping(t, c, bridge, verb)
}

func expectSkipping(t *testing.T, c *irctest.Client, bridge, verb string) (map[string]any, []string) {
	t.Helper()
	var notes []string
	for {
		r := c.Expect(bridge)
		if r.Verb == "NOTIFY" {
			notes = append(notes, r.Raw)
			continue
		}
		if r.Verb != verb {
			t.Fatalf("%s: got %s, want %s", c.Nick, r.Raw, verb)
		}
		return r.Obj, notes
	}
}

// askErr is ask for an ERROR with code.
func askErr(t *testing.T, c *irctest.Client, bridge, text, code string) {
	t.Helper()
	if m, _ := ask(t, c, bridge, text, "ERROR"); m["code"] != code {
		t.Fatalf("%s: %q answered %v, want %s", c.Nick, text, m, code)
	}
}

// expectNotify waits for the next NOTICE, which must be the NOTIFY line want.
func expectNotify(t *testing.T, c *irctest.Client, bridge, want string) {
	t.Helper()
	if r := c.Expect(bridge); r.Raw != "PIRCAN/1 NOTIFY "+want {
		t.Fatalf("%s: got %s, want NOTIFY %s", c.Nick, r.Raw, want)
	}
}

// list reads a list's items and its -END line.
func listOf(t *testing.T, c *irctest.Client, bridge, text, item, end string) ([]map[string]any, map[string]any) {
	t.Helper()
	c.Raw("PRIVMSG " + bridge + " :" + text)
	var items []map[string]any
	for {
		r := c.Expect(bridge)
		switch r.Verb {
		case "NOTIFY":
		case item:
			items = append(items, r.Obj)
		case end:
			return items, r.Obj
		default:
			t.Fatalf("%s: %q answered %s", c.Nick, text, r.Raw)
		}
	}
}

// Two IRC agents: CONTACT, ACCEPT with narrowed scopes, SEND and reply to
// 9 hops (the 9th refused), INBOX, REVOKE then SEND refused. NOTIFY comes
// at once (the bridge follows the agents it sees on the bus).
func TestIRCAgentsHandshake(t *testing.T) {
	t.Parallel()
	n := irctest.Shared(t)
	v := startVenueBridge(t, n)
	id := irctest.RandHex(3)
	cs := agents(t, n, []string{"ann" + id, "ben" + id}, []bool{true, false})
	ann, ben := cs[0], cs[1]
	annID := ann.Ask(v.nick, `PIRCAN/1 HELLO {"name":"Ann"}`, "HELLO")["agent_id"].(string)
	benID := ben.Ask(v.nick, `PIRCAN/1 HELLO {"name":"Ben"}`, "HELLO")["agent_id"].(string)
	// In the lobby with the bridge, they are followed: NOTIFY comes at once.
	joinLobby(t, ann, v.nick, v.lobby)
	joinLobby(t, ben, v.nick, v.lobby)

	c := ann.Ask(v.nick, `PIRCAN/1 CONTACT {"to":"`+benID+`","purpose":"Share data","scopes":["message","task:assess"],"ttl_days":30,"id":"c"}`, "CONTACT")
	if c["status"] != "pending" || c["re"] != "c" {
		t.Fatalf("CONTACT %v", c)
	}
	// Ben hears of it without asking.
	expectNotify(t, ben, v.nick, `{"type":"contact_request","pending":1}`)
	items, _ := listOf(t, ben, v.nick, `PIRCAN/1 CONTACTS`, "CONTACT-ITEM", "CONTACTS-END")
	if len(items) != 1 || items[0]["request_id"] != c["request_id"] || items[0]["purpose"] != "Share data" {
		t.Fatalf("CONTACTS %v", items)
	}
	a, _ := ask(t, ben, v.nick, `PIRCAN/1 ACCEPT {"request_id":"`+c["request_id"].(string)+`","scopes":["message"],"ttl_days":7}`, "ACCEPT")
	if fmt.Sprint(a["scopes"]) != "[message]" {
		t.Fatalf("ACCEPT %v", a)
	}
	expectNotify(t, ann, v.nick, `{"type":"contact_update"}`)
	items, _ = listOf(t, ann, v.nick, `PIRCAN/1 AGREEMENTS`, "AGREEMENT", "AGREEMENTS-END")
	with, _ := items[0]["with"].(map[string]any)
	if len(items) != 1 || fmt.Sprint(with["irc_accounts"]) != "["+strings.ToLower(ben.Nick)+"]" || fmt.Sprint(items[0]["scopes"]) != "[message]" {
		t.Fatalf("AGREEMENTS %v", items)
	}

	// Ann starts, they answer each other to hop 8; Ben's hop 9 is refused.
	s, _ := ask(t, ann, v.nick, `PIRCAN/1 SEND {"to":"`+benID+`","text":"hop 0"}`, "SEND")
	last := s["message_id"].(string)
	for hop := 1; hop <= handshake.MaxHops; hop++ {
		from, to := ben, annID
		if hop%2 == 0 {
			from, to = ann, benID
		}
		s, _ = ask(t, from, v.nick, fmt.Sprintf(`PIRCAN/1 SEND {"to":"%s","text":"hop %d","reply_to":"%s"}`, to, hop, last), "SEND")
		if s["hop"] != float64(hop) {
			t.Fatalf("hop %d: %v", hop, s)
		}
		last = s["message_id"].(string)
	}
	askErr(t, ben, v.nick, `PIRCAN/1 SEND {"to":"`+annID+`","text":"hop 9","reply_to":"`+last+`"}`, handshake.CodeLoopLimit)

	msgs, end := listOf(t, ben, v.nick, `PIRCAN/1 INBOX {"limit":10}`, "MESSAGE", "INBOX-END")
	var texts []string
	for _, m := range msgs {
		texts = append(texts, m["text"].(string))
	}
	if strings.Join(texts, ",") != "hop 0,hop 2,hop 4,hop 6,hop 8" || end["unread"] != 0.0 {
		t.Fatalf("Ben's INBOX %q %v", texts, end)
	}
	r, _ := ask(t, ann, v.nick, `PIRCAN/1 REVOKE {"agreement_id":"`+a["agreement_id"].(string)+`"}`, "REVOKE")
	if r["status"] != "revoked" {
		t.Fatalf("REVOKE %v", r)
	}
	askErr(t, ben, v.nick, `PIRCAN/1 SEND {"to":"`+annID+`","text":"after"}`, handshake.CodeNotAuthorized)
}

// identify reconnects as an existing NickServ account (nick = account).
func identify(t *testing.T, n *irctest.Network, nick string, password string) *irctest.Client {
	t.Helper()
	c := irctest.Dial(t, n, nick, false)
	c.Raw("PRIVMSG NickServ :IDENTIFY " + password)
	c.WaitCommand("900")
	return c
}

// NOTIFY after a reconnect: what happened while the agent was away (over
// IRC and over REST) comes collapsed, one line per type with its count,
// when it joins the lobby again.
func TestNotifyAfterReconnect(t *testing.T) {
	t.Parallel()
	n := irctest.Shared(t)
	v := startVenueBridge(t, n)
	id := irctest.RandHex(3)
	cs := agents(t, n, []string{"cat" + id, "dan" + id}, []bool{false, false})
	cat, dan := cs[0], cs[1]
	catID := cat.Ask(v.nick, `PIRCAN/1 HELLO`, "HELLO")["agent_id"].(string)
	danID := dan.Ask(v.nick, `PIRCAN/1 HELLO`, "HELLO")["agent_id"].(string)
	ctx := context.Background()
	rq, err := v.svc.Contact(ctx, catID, handshake.ContactInput{To: danID, Purpose: "p"}, time.Now())
	must(t, err)
	_, err = v.svc.Accept(ctx, handshake.AgentActor(danID), rq.ID, handshake.AcceptInput{}, time.Now())
	must(t, err)

	dan.Raw("QUIT")
	dan.WaitCommand("ERROR")
	// Away: two messages over IRC, a request from a venue agent over REST.
	for _, text := range []string{"one", "two"} {
		ask(t, cat, v.nick, `PIRCAN/1 SEND {"to":"`+danID+`","text":"`+text+`"}`, "SEND")
	}
	venueID, key := register(t, v.base, "Venue "+id)
	restJSON(t, v.base, key, "POST", "/v1/contacts", map[string]any{"to": danID, "purpose": "secret purpose"}, http.StatusCreated)

	dan = identify(t, n, dan.Nick, "pw-"+dan.Nick+"-secret")
	if got := dan.Pending(v.nick); len(got) != 0 {
		t.Fatalf("NOTIFY before the account was seen: %q", got)
	}
	joinLobby(t, dan, v.nick, v.lobby)
	expectNotify(t, dan, v.nick, `{"type":"contact_request","pending":1}`)
	expectNotify(t, dan, v.nick, `{"type":"message","unread":2}`)
	items, _ := listOf(t, dan, v.nick, `PIRCAN/1 CONTACTS`, "CONTACT-ITEM", "CONTACTS-END")
	if len(items) != 1 || items[0]["from"] != venueID {
		t.Fatalf("CONTACTS %v", items)
	}
}

// register registers a venue agent over REST: its id and api key.
func register(t *testing.T, base, name string) (string, string) {
	t.Helper()
	c, err := client.New(base)
	must(t, err)
	a, err := c.Register(context.Background(), name, "bouncer", nil)
	must(t, err)
	return a.ID, a.APIKey
}

// restJSON calls the venue's REST API as the agent with key and decodes
// the answer, which must have status want.
func restJSON(t *testing.T, base, key, method, path string, body any, want int) map[string]any {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, base+path, rd)
	must(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	must(t, err)
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %d %v, want %d", method, path, resp.StatusCode, out, want)
	}
	return out
}

// lobbyFrame reads the venue agent's lobby socket until a frame of typ.
func lobbyFrame(t *testing.T, ws *websocket.Conn, typ string) map[string]any {
	t.Helper()
	must(t, ws.SetReadDeadline(time.Now().Add(irctest.WaitFor)))
	for {
		var f map[string]any
		if err := ws.ReadJSON(&f); err != nil {
			t.Fatalf("lobby socket, waiting for %s: %v", typ, err)
		}
		if f["type"] == typ {
			return f
		}
	}
}

// An IRC agent and a venue agent (lobby socket and REST) reach each other
// through the same rules: the IRC agent asks, the venue agent accepts over
// REST on the push, they message each other both ways.
func TestIRCAndVenueAgent(t *testing.T) {
	t.Parallel()
	n := irctest.Shared(t)
	v := startVenueBridge(t, n)
	id := irctest.RandHex(3)
	eve := agents(t, n, []string{"eve" + id}, []bool{true})[0]
	eveID := eve.Ask(v.nick, `PIRCAN/1 HELLO {"name":"Eve"}`, "HELLO")["agent_id"].(string)
	venueID, key := register(t, v.base, "Venue "+id)
	ws, _, err := websocket.DefaultDialer.Dial(strings.Replace(v.base, "http", "ws", 1)+"/v1/agents/"+venueID+"/ws?token="+key, nil)
	must(t, err)
	defer ws.Close()
	// The socket is subscribed once it answers a frame; a push before
	// that could be missed.
	must(t, ws.WriteMessage(websocket.TextMessage, []byte(`{"type":"browse_bouncers","id":"b"}`)))
	must(t, ws.SetReadDeadline(time.Now().Add(irctest.WaitFor)))
	var answer map[string]any
	must(t, ws.ReadJSON(&answer))
	joinLobby(t, eve, v.nick, v.lobby) // the bridge follows Eve from here

	c := eve.Ask(v.nick, `PIRCAN/1 CONTACT {"to":"`+venueID+`","purpose":"Talk"}`, "CONTACT")
	f := lobbyFrame(t, ws, handshake.FrameContactRequested)
	if req, _ := f["request"].(map[string]any); req["request_id"] != c["request_id"] || req["from"] != eveID {
		t.Fatalf("contact_requested %v", f)
	}
	restJSON(t, v.base, key, "POST", "/v1/contacts/"+c["request_id"].(string)+"/accept", map[string]any{}, http.StatusOK)
	expectNotify(t, eve, v.nick, `{"type":"contact_update"}`)

	s := eve.Ask(v.nick, `PIRCAN/1 SEND {"to":"`+venueID+`","text":"Hello from IRC"}`, "SEND")
	f = lobbyFrame(t, ws, handshake.FrameMessageReceived)
	if m, _ := f["message"].(map[string]any); m["text"] != "Hello from IRC" || m["message_id"] != s["message_id"] {
		t.Fatalf("message_received %v", f)
	}
	restJSON(t, v.base, key, "POST", "/v1/messages", map[string]any{"to": eveID, "text": "Hello from the venue", "reply_to": s["message_id"]}, http.StatusCreated)
	expectNotify(t, eve, v.nick, `{"type":"message","unread":1}`)
	msgs, _ := listOf(t, eve, v.nick, `PIRCAN/1 INBOX`, "MESSAGE", "INBOX-END")
	from, _ := msgs[0]["from"].(map[string]any)
	if len(msgs) != 1 || msgs[0]["text"] != "Hello from the venue" || msgs[0]["hop"] != 1.0 || from["agent_id"] != venueID {
		t.Fatalf("INBOX %v", msgs)
	}
	// The venue agent's inbox over REST has Eve's message, marked read for it only.
	in := restJSON(t, v.base, key, "GET", "/v1/messages", nil, http.StatusOK)
	if fmt.Sprint(in) == "" || !strings.Contains(fmt.Sprint(in), "Hello from IRC") {
		t.Fatalf("GET /v1/messages %v", in)
	}
}

// Members already in the lobby when the bridge joins it (a restart) are
// seen through WHOX: what waits for them is sent, and they are followed.
func TestNotifyMembersFoundOnJoin(t *testing.T) {
	t.Parallel()
	n := irctest.Shared(t)
	id := irctest.RandHex(3)
	var hal *irctest.Client
	var halID, ivyID string
	v := startVenueBridgeAfter(t, n, func(v *venueBridge) {
		ctx := context.Background()
		cs := agents(t, n, []string{"hal" + id, "ivy" + id}, []bool{false, false})
		hal = cs[0]
		for i, c := range cs {
			a, err := v.dir.RegisterIRC(ctx, directory.IRCRegistration{Account: strings.ToLower(c.Nick), Nick: c.Nick, Name: c.Nick})
			must(t, err)
			if i == 0 {
				halID = a.ID
			} else {
				ivyID = a.ID
			}
		}
		hal.Raw("JOIN " + v.lobby)
		hal.WaitCommand("366") // end of NAMES: in the channel
		_, err := v.svc.Contact(ctx, ivyID, handshake.ContactInput{To: halID, Purpose: "p"}, time.Now())
		must(t, err)
	})
	expectNotify(t, hal, v.nick, `{"type":"contact_request","pending":1}`)
	// Followed: a new event comes at once.
	reqs, _, err := v.svc.Contacts(context.Background(), halID, handshake.ContactsQuery{}, time.Now())
	must(t, err)
	_, err = v.svc.Accept(context.Background(), handshake.AgentActor(halID), reqs[0].ID, handshake.AcceptInput{}, time.Now())
	must(t, err)
	_, err = v.svc.Send(context.Background(), ivyID, handshake.SendInput{To: halID, Text: "hi"}, time.Now())
	must(t, err)
	expectNotify(t, hal, v.nick, `{"type":"message","unread":1}`)
}
