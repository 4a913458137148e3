package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/venuehq/venue/internal/irctest"
	"github.com/venuehq/venue/internal/testenv"
)

// schemaURL is the test Postgres with a fresh schema (created) as its
// search_path, so a command given DATABASE_URL migrates and uses it.
func schemaURL(t *testing.T) string {
	t.Helper()
	url := testenv.DatabaseURL(t)
	schema := testenv.Schema(t, url)
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), `CREATE SCHEMA `+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return url + sep + "search_path=" + schema
}

// runCmd runs the venue command with args until ctx ends; the returned
// channel gets its error.
func runCmd(ctx context.Context, args ...string) <-chan error {
	done := make(chan error, 1)
	root := rootCmd()
	root.SetArgs(args)
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	go func() { done <- root.ExecuteContext(ctx) }()
	return done
}

func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	_ = json.NewDecoder(resp.Body).Decode(v)
	return resp.StatusCode
}

// `venue serve` with PIRCAN_IRC_ADDR runs the bridge on the venue's
// Postgres store: /readyz shows it, an agent registered over REST is found
// over IRC, the channels file and `venue pircan channel` feed CHANNELS,
// /metrics counts the requests.
func TestServeRunsPircan(t *testing.T) {
	n := irctest.Shared(t)
	id := irctest.RandHex(3)
	account, password := "svc"+id, "pw-"+irctest.RandHex(8)
	reg := irctest.Dial(t, n, account, false)
	reg.Register(password)
	reg.Raw("QUIT")

	db := schemaURL(t)
	chans := filepath.Join(t.TempDir(), "channels.json")
	if err := os.WriteFile(chans, []byte(`[{"name":"#chem-`+id+`","topic":"Chemical releases"}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	// Before the venue starts, an operator adds a channel in the store.
	if err := <-runCmd(t.Context(), "pircan", "channel", "put", "#ops-"+id, "--topic", "Operators", "--database-url", db); err != nil {
		t.Fatalf("channel put: %v", err)
	}
	nick := "PIRCAN" + id
	for k, v := range map[string]string{
		"PIRCAN_IRC_ADDR": n.Addr(true), "PIRCAN_IRC_CA_FILE": n.CAFile, "PIRCAN_NICK": nick,
		"PIRCAN_ACCOUNT": account, "PIRCAN_PASSWORD": password, "PIRCAN_IRC_PASS": n.BridgePass,
		"PIRCAN_LOBBY": "#agents-" + id, "PIRCAN_CHANNELS": chans, "VENUE_LOG_LEVEL": "warn",
	} {
		t.Setenv(k, v)
	}
	addr, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	admin, err := freeAddr() // readiness and metrics are on the admin listener
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := runCmd(ctx, "serve", "--addr", addr, "--admin-addr", admin, "--database-url", db)
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()

	var ready struct {
		Ready  bool `json:"ready"`
		Pircan struct {
			Connected, Identified, Joined bool
		} `json:"pircan"`
	}
	deadline := time.Now().Add(irctest.WaitFor)
	for getJSON(t, "http://"+admin+"/readyz", &ready); !(ready.Pircan.Connected && ready.Pircan.Identified && ready.Pircan.Joined); getJSON(t, "http://"+admin+"/readyz", &ready) {
		if time.Now().After(deadline) {
			t.Fatalf("/readyz: %+v", ready)
		}
		time.Sleep(50 * time.Millisecond)
	}

	venueAgent, venueKey := registerAgent(t, "http://"+addr, "Chemical Newsletter "+id, "bouncer")
	c := irctest.Dial(t, n, "agent"+id, true)
	c.Register("pw-agent-" + id)
	h := c.Ask(nick, `PIRCAN/1 HELLO {"name":"Hazmat `+id+`"}`, "HELLO")
	c.Raw("PRIVMSG " + nick + ` :PIRCAN/1 FIND {"q":"` + id + `","limit":10}`)
	seen := map[string]string{}
	for {
		r := c.Expect(nick)
		if r.Verb == "FIND-END" {
			break
		}
		seen[r.Obj["agent_id"].(string)] = r.Obj["name"].(string)
	}
	if seen[venueAgent] != "Chemical Newsletter "+id || seen[h["agent_id"].(string)] != "Hazmat "+id {
		t.Fatalf("FIND over IRC saw %v; want the REST agent %s and the IRC agent", seen, venueAgent)
	}
	c.Raw("PRIVMSG " + nick + ` :PIRCAN/1 CHANNELS {"q":"` + id + `"}`)
	var names []string
	for r := c.Expect(nick); r.Verb == "CHANNEL"; r = c.Expect(nick) {
		names = append(names, r.Obj["name"].(string))
	}
	// The lobby is a known public channel (PIRCAN.md "The lobby").
	if strings.Join(names, " ") != "#agents-"+id+" #chem-"+id+" #ops-"+id {
		t.Fatalf("CHANNELS %q", names)
	}

	// The handshake through serve's wiring (the node's service, the IRC
	// account bindings, the bus waking the bridge): the IRC agent asks the
	// REST agent, which accepts over REST; they message both ways.
	c.Raw("JOIN #agents-" + id)
	// Joining the lobby brings its welcome (PIRCAN.md "The lobby").
	if w := c.Expect(nick); !strings.HasPrefix(w.Raw, "Welcome to #agents-"+id) {
		t.Fatalf("no welcome: %s", w.Raw)
	}
	req := c.Ask(nick, `PIRCAN/1 CONTACT {"to":"`+venueAgent+`","purpose":"Newsletter"}`, "CONTACT")
	restCall(t, "http://"+addr, venueKey, "POST", "/v1/contacts/"+req["request_id"].(string)+"/accept", `{}`, http.StatusOK)
	if r := c.Expect(nick); r.Raw != `PIRCAN/1 NOTIFY {"type":"contact_update"}` {
		t.Fatalf("after the REST accept: %s", r.Raw)
	}
	sent := c.Ask(nick, `PIRCAN/1 SEND {"to":"`+venueAgent+`","text":"Subscribe me"}`, "SEND")
	if in := restCall(t, "http://"+addr, venueKey, "GET", "/v1/messages", "", http.StatusOK); !strings.Contains(in, "Subscribe me") {
		t.Fatalf("the REST agent's inbox: %s", in)
	}
	restCall(t, "http://"+addr, venueKey, "POST", "/v1/messages", `{"to":"`+h["agent_id"].(string)+`","text":"Done","reply_to":"`+sent["message_id"].(string)+`"}`, http.StatusCreated)
	if r := c.Expect(nick); r.Raw != `PIRCAN/1 NOTIFY {"type":"message","unread":1}` {
		t.Fatalf("after the REST reply: %s", r.Raw)
	}
	if m := c.Ask(nick, `PIRCAN/1 INBOX`, "MESSAGE"); m["text"] != "Done" || m["hop"] != 1.0 {
		t.Fatalf("INBOX %v", m)
	}
	c.Expect(nick) // INBOX-END
	if ags := restCall(t, "http://"+addr, venueKey, "GET", "/v1/agreements", "", http.StatusOK); !strings.Contains(ags, `"irc_accounts":["agent`+id+`"]`) {
		t.Fatalf("the REST agent's agreements do not name the IRC account: %s", ags)
	}

	resp, err := http.Get("http://" + admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(metrics), `pircan_requests_total{verb="FIND"}`) {
		t.Fatal("/metrics has no pircan_requests_total for FIND")
	}
}

// restCall calls the venue's REST API with an agent's key; the answer must
// have status want.
func restCall(t *testing.T, base, key, method, path, body string, want int) string {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, b, want)
	}
	return string(b)
}

// Bad PIRCAN configuration fails at start, naming what is wrong.
func TestPircanConfigErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "channels.json")
	if err := os.WriteFile(bad, []byte(`[{"name":"no-hash"}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		env  map[string]string
		args []string
		want string
	}{
		{nil, []string{"pircan"}, "PIRCAN_IRC_ADDR"},
		{map[string]string{"PIRCAN_IRC_TLS": "maybe"}, []string{"pircan", "--irc-addr", "127.0.0.1:1"}, "PIRCAN_IRC_TLS"},
		{nil, []string{"pircan", "--irc-addr", "nohost"}, "host:port"},
		{nil, []string{"pircan", "--irc-addr", "127.0.0.1:1", "--account", "bot"}, "PIRCAN_PASSWORD"},
		{nil, []string{"pircan", "--irc-addr", "127.0.0.1:1", "--irc-ca-file", "/nonexistent.pem"}, "CA file"},
		{nil, []string{"pircan", "--irc-addr", "127.0.0.1:1", "--lobby", "agents"}, "lobby"},
		{nil, []string{"pircan", "--irc-addr", "127.0.0.1:1", "--channels", bad}, "entry 0"},
		{nil, []string{"pircan", "channel", "put", "#x"}, "DATABASE_URL"},
		{nil, []string{"pircan", "channel", "put", "bad name", "--database-url", "postgres://127.0.0.1:1/x"}, "channel name"},
	}
	for _, c := range cases {
		for _, k := range []string{"PIRCAN_IRC_ADDR", "PIRCAN_IRC_TLS", "DATABASE_URL"} {
			t.Setenv(k, "")
		}
		for k, v := range c.env {
			t.Setenv(k, v)
		}
		err := <-runCmd(t.Context(), c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want an error naming %s", c.args, err, c.want)
		}
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	irctest.StopAll()
	os.Exit(code)
}
