package venue_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/venuehq/venue/handshake"
	hspostgres "github.com/venuehq/venue/handshake/postgres"
	"github.com/venuehq/venue/store/postgres"
	"github.com/venuehq/venue/store/storetest"
	"github.com/venuehq/venue/venue"
)

// Two venue agents over REST: a contact request reaches the target's lobby
// socket, the accept reaches the requester's, a message is pushed, the
// reply chain is linked, and a revoke ends it for both. Then an agent that
// is not on a socket (as an IRC agent of the bridge, through the Go API)
// and a venue agent message each other both ways.
func TestHandshakeVenueAgents(t *testing.T) {
	t.Parallel()
	for name, mut := range map[string]func(*venue.Config){
		"memory": func(*venue.Config) {},
		"postgres": func(cfg *venue.Config) {
			st := migratedStore(t)
			cfg.Store, cfg.Handshake = st, hspostgres.New(st.Pool())
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var ircAgent string
			v := newE2E(t, mut, func(cfg *venue.Config) {
				cfg.Accounts = accountsFunc(func() string { return ircAgent })
			})
			a := v.register("Alpha", "brand")
			b := v.register("Bravo", "bouncer")
			bl, al := v.lobby(b), v.lobby(a)
			// A round trip on each lobby: its session has subscribed to the
			// pushes (the dial returns at the upgrade, before it does).
			for _, l := range []*e2eConn{bl, al} {
				l.send(map[string]any{"type": "get_profile", "id": "sync", "agent_id": a.id})
				l.expect("profile")
			}

			code, m := v.do("POST", "/v1/contacts", a.key, map[string]any{"to": b.id, "purpose": "share data", "scopes": []string{"message", "task:assess"}})
			if code != http.StatusCreated {
				t.Fatalf("contact: %d %v", code, m)
			}
			push := bl.expect(handshake.FrameContactRequested)
			req := push["request"].(map[string]any)
			if req["request_id"] != m["request_id"] || req["purpose"] != "share data" || push["policy"] != "agent-decides" {
				t.Fatalf("push %v", push)
			}
			code, m = v.do("POST", "/v1/contacts/"+str(req["request_id"])+"/accept", b.key, map[string]any{"scopes": []string{"message"}, "ttl_days": 7})
			if code != http.StatusOK {
				t.Fatalf("accept: %d %v", code, m)
			}
			if got := al.expect(handshake.FrameAgreementUpdated)["agreement"].(map[string]any); got["status"] != "active" || got["role"] != "requester" {
				t.Fatalf("agreement push %v", got)
			}
			code, m = v.do("POST", "/v1/messages", a.key, map[string]any{"to": b.id, "text": "hello"})
			if code != http.StatusCreated {
				t.Fatalf("send: %d %v", code, m)
			}
			msg := bl.expect(handshake.FrameMessageReceived)["message"].(map[string]any)
			if msg["text"] != "hello" || msg["from"].(map[string]any)["agent_id"] != a.id {
				t.Fatalf("message push %v", msg)
			}
			code, m = v.do("POST", "/v1/messages", b.key, map[string]any{"to": a.id, "text": "hi", "reply_to": msg["message_id"]})
			if code != http.StatusCreated || num(m["hop"]) != 1 || m["conversation_id"] != msg["message_id"] {
				t.Fatalf("reply: %d %v", code, m)
			}
			al.expect(handshake.FrameMessageReceived)

			// The bridge's side: an agent with no socket, driven through the Go API.
			c := v.register("Charlie", "bouncer")
			ircAgent = c.id
			svc, portal := v.srv.Handshake()
			ctx := context.Background()
			r, err := svc.Contact(ctx, c.id, handshake.ContactInput{To: b.id, Purpose: "irc says hi"}, v.clock.Now())
			if err != nil {
				t.Fatal(err)
			}
			bl.expect(handshake.FrameContactRequested)
			if code, m := v.do("POST", "/v1/contacts/"+r.ID+"/accept", b.key, nil); code != http.StatusOK {
				t.Fatalf("accept irc: %d %v", code, m)
			}
			if _, err := svc.Send(ctx, c.id, handshake.SendInput{To: b.id, Text: "from IRC", IRC: true}, v.clock.Now()); err != nil {
				t.Fatal(err)
			}
			if got := bl.expect(handshake.FrameMessageReceived)["message"].(map[string]any); got["text"] != "from IRC" {
				t.Fatalf("irc message %v", got)
			}
			if code, m := v.do("POST", "/v1/messages", b.key, map[string]any{"to": c.id, "text": "from the venue"}); code != http.StatusCreated {
				t.Fatalf("send to irc: %d %v", code, m)
			}
			inbox, err := svc.Inbox(ctx, c.id, 5, v.clock.Now())
			if err != nil || len(inbox) != 1 || inbox[0].Text != "from the venue" {
				t.Fatalf("irc inbox %v %v", inbox, err)
			}
			notes, err := svc.TakeNotifications(ctx, c.id, v.clock.Now())
			if err != nil || len(notes) != 1 || notes[0].Type != handshake.NotifyContactUpdate {
				t.Fatalf("irc notifications %+v %v", notes, err)
			}
			// The venue agent sees the IRC account of the other party.
			_, m = v.do("GET", "/v1/agreements", b.key, nil)
			var accounts []any
			for _, ag := range m["agreements"].([]any) {
				if with := ag.(map[string]any)["with"].(map[string]any); with["agent_id"] == c.id {
					accounts = with["irc_accounts"].([]any)
				}
			}
			if len(accounts) != 1 || accounts[0] != "charlie" {
				t.Fatalf("irc_accounts %v in %v", accounts, m)
			}
			// LOGOUT with no session ends none; the page is mounted.
			if n, err := portal.Logout(ctx, "charlie", v.clock.Now()); err != nil || n != 0 {
				t.Fatalf("logout %d %v", n, err)
			}
			res, err := apiClient(t).Get(v.url + "/owner")
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/html; charset=utf-8" {
				t.Fatalf("owner page %d %v", res.StatusCode, res.Header)
			}
		})
	}
}

// accountsFunc binds account "charlie" to the agent id it returns.
type accountsFunc func() string

func (f accountsFunc) AgentsOf(_ context.Context, account string) ([]string, error) {
	if account == "charlie" && f() != "" {
		return []string{f()}, nil
	}
	return nil, nil
}

func (f accountsFunc) AccountsOf(_ context.Context, agentID string) ([]string, error) {
	if agentID != "" && agentID == f() {
		return []string{"charlie"}, nil
	}
	return nil, nil
}

func migratedStore(t *testing.T) *postgres.Store {
	t.Helper()
	url := storetest.DatabaseURL(t)
	schema := storetest.Schema(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := postgres.New(ctx, url, postgres.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

// Two nodes on one Postgres and one Redis: a contact made on node 1
// reaches the target's lobby socket on node 2, the accept on node 2
// reaches the requester's socket on node 1, and a message crosses too; the
// hourly contact limit is one for both nodes.
func TestHandshakeTwoNodes(t *testing.T) {
	t.Parallel()
	c := newMNCluster(t, e2eStart)
	n1, n2 := c.node("n1"), c.node("n2")
	a := n1.register(c, "Alpha", "brand")
	b := n2.register(c, "Bravo", "bouncer")
	al, bl := n1.lobby(a), n2.lobby(b)
	for _, l := range []*mnSock{al, bl} { // subscribed before the first push (see TestHandshakeVenueAgents)
		l.send(map[string]any{"type": "get_profile", "id": "sync", "agent_id": a.id})
		l.expect("profile")
	}
	var req map[string]any
	if code := n1.do("POST", "/v1/contacts", a.key, map[string]any{"to": b.id, "purpose": "across nodes"}, &req); code != http.StatusCreated {
		t.Fatalf("contact: %d %v", code, req)
	}
	if got := bl.expect(handshake.FrameContactRequested)["request"].(map[string]any); got["request_id"] != req["request_id"] {
		t.Fatalf("push on node 2: %v", got)
	}
	var ag map[string]any
	if code := n2.do("POST", "/v1/contacts/"+str(req["request_id"])+"/accept", b.key, nil, &ag); code != http.StatusOK {
		t.Fatalf("accept: %d %v", code, ag)
	}
	if got := al.expect(handshake.FrameAgreementUpdated)["agreement"].(map[string]any); got["agreement_id"] != ag["agreement_id"] {
		t.Fatalf("push on node 1: %v", got)
	}
	var m map[string]any
	if code := n1.do("POST", "/v1/messages", a.key, map[string]any{"to": b.id, "text": "hello from n1"}, &m); code != http.StatusCreated {
		t.Fatalf("send: %d %v", code, m)
	}
	if got := bl.expect(handshake.FrameMessageReceived)["message"].(map[string]any); got["text"] != "hello from n1" {
		t.Fatalf("message push %v", got)
	}
	// 9 more requests alternate between the nodes; the 11th is over the hour's 10.
	for i := range 10 {
		other := n1.register(c, fmt.Sprint("Other ", i), "bouncer")
		node := []*mnNode{n1, n2}[i%2]
		var out map[string]any
		code := node.do("POST", "/v1/contacts", a.key, map[string]any{"to": other.id, "purpose": "p"}, &out)
		want := http.StatusCreated
		if i == 9 {
			want = http.StatusTooManyRequests
		}
		if code != want || (i == 9 && out["error"].(map[string]any)["code"] != handshake.CodeRateLimited) {
			t.Fatalf("request %d on %s: %d %v, want %d", i+2, node.name, code, out, want)
		}
	}
}
