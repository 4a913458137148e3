package main

import (
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/venuehq/venue/client"
	"github.com/venuehq/venue/grants"
)

// registerGranted registers an agent whose principal grants it scope and
// returns its client (with its key) and id.
func registerGranted(t *testing.T, base, name, role string, scope grants.Scope) (*client.Client, string) {
	t.Helper()
	ctx := context.Background()
	c, err := client.New(base)
	if err != nil {
		t.Fatal(err)
	}
	pub, priv, _ := grants.GenerateKey()
	jwk := grants.PublicJWK(pub)
	a, err := c.Register(ctx, name, role, &jwk)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tok, err := grants.SignGrant(priv, grants.GrantClaims{Subject: a.ID, Audience: "venue", IssuedAt: now, ExpiresAt: now.Add(time.Hour), Scope: scope})
	if err != nil {
		t.Fatal(err)
	}
	ac := c.WithKey(a.APIKey)
	if _, err := ac.UploadGrant(ctx, tok); err != nil {
		t.Fatal(err)
	}
	return ac, a.ID
}

// TestConnectLobbyBouncer: a person plays the bouncer from the terminal: a
// scripted brand asks, the request shows, the person accepts and goes into
// the room, withdraws nothing (refused), escalates, counters, and the brand
// accepts; the receipt is verified and printed.
func TestConnectLobbyBouncer(t *testing.T) {
	t.Parallel()
	base := startCmdVenue(t)
	ctx := context.Background()
	brand, brandID := registerGranted(t, base, "Acme", "brand", grants.Scope{})
	bouncer, bouncerID := registerGranted(t, base, "Letters", "bouncer", grants.Scope{Amount: &grants.AmountLimit{MinCents: ptr(int64(2500_00))}})
	in, out, errOut, done := connectRun(t, "--url", base, "--key", bouncer.APIKey())
	out.waitFor(t, `lobby +you are Letters \(bouncer, `+bouncerID+`\)`)

	bl, err := brand.DialLobby(ctx, brandID)
	if err != nil {
		t.Fatal(err)
	}
	defer bl.Close()
	off, err := bl.SubmitOffer(ctx, bouncerID, client.Offer{Title: "Spring launch", Terms: client.Terms{AmountCents: 2000_00}}, true)
	if err != nil {
		t.Fatal(err)
	}
	created, err := bl.CreateNegotiation(ctx, off.OfferID)
	if err != nil {
		t.Fatal(err)
	}
	negID := created.NegotiationID
	out.waitFor(t, `request +`+negID+` from Acme \(`+brandID+`, reputation 0\): "Spring launch" \$2,000\.00 \(arena\)`)
	writeLine(t, in, "offer x 1 y") // a brand's command: refused before anything is sent
	errOut.waitFor(t, `refused, nothing sent: offer is for brands; you are a bouncer`)
	writeLine(t, in, "requests")
	out.waitFor(t, `(?s)request +`+negID+`.*request +`+negID)
	writeLine(t, in, "accept")
	out.waitFor(t, `accepted `+negID+` with Acme`)
	out.waitFor(t, `negotiation_started +negotiation `+negID+`: brand Acme, bouncer Letters`)
	select {
	case p := <-bl.Pushes():
		if p.Type != "negotiation_accepted" || p.NegotiationID != negID {
			t.Fatalf("brand got %s", p.Raw)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the brand was not told")
	}

	br, err := brand.DialRoom(ctx, negID, client.RoomOptions{AgentID: brandID})
	if err != nil {
		t.Fatal(err)
	}
	defer br.Close()
	if _, err := br.Propose(ctx, client.Terms{AmountCents: 2400_00}, 0, "2,400?"); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, `#1 +brand +propose_terms +\$2,400\.00  "2,400\?"`)
	writeLine(t, in, "[WITHDRAW]")
	out.waitFor(t, `error invalid_state: your withdraw did not land`)
	writeLine(t, in, "[ESCALATE] may I take 2,400?")
	out.waitFor(t, `#2 +you +escalate .*\[escalation [^\]]+\]  \(landed\)`)
	writeLine(t, in, `[COUNTER]{"amount_usd":2600}`)
	out.waitFor(t, `#3 +you +counter_terms +\$2,600\.00 .*\(landed\)`)
	if _, err := br.Accept(ctx, client.AcceptOpts{}); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, `negotiation_ended DEAL  \$2,600\.00`)
	out.waitFor(t, `receipt +verified: deal, 5 transcript frames, head hash `)
	out.waitFor(t, `lobby +back in the lobby as Letters`)
	in.Close()
	if err := waitDone(t, done); err != nil {
		t.Fatalf("connect: %v\n%s", err, out.String())
	}
	if strings.Count(errOut.String(), "refused") != 1 { // the brand's command alone
		t.Fatalf("stderr: %s", errOut.String())
	}
}

// TestConnectLobbyBrand: a person plays the brand: browses, offers, a
// scripted bouncer accepts, the room opens, the person walks.
func TestConnectLobbyBrand(t *testing.T) {
	t.Parallel()
	base := startCmdVenue(t)
	ctx := context.Background()
	brand, _ := registerGranted(t, base, "Acme", "brand", grants.Scope{})
	bouncer, bouncerID := registerGranted(t, base, "Letters", "bouncer", grants.Scope{})
	kl, err := bouncer.DialLobby(ctx, bouncerID)
	if err != nil {
		t.Fatal(err)
	}
	defer kl.Close()
	in, out, errOut, done := connectRun(t, "--url", base, "--key", brand.APIKey(), "--arena")
	out.waitFor(t, `lobby +you are Acme \(brand`)
	writeLine(t, in, "browse lett")
	out.waitFor(t, `bouncers 1 of 1\n +`+bouncerID+`  Letters  reputation 0`)
	writeLine(t, in, "offer "+bouncerID+" 3,200 Spring launch")
	out.waitFor(t, `offered +\S+ to `+bouncerID+`: "Spring launch" at \$3,200\.00`)
	var negID string
	select {
	case p := <-kl.Pushes():
		if p.Type != "negotiation_requested" || !p.Arena {
			t.Fatalf("bouncer got %s", p.Raw)
		}
		negID = p.NegotiationID
	case <-time.After(5 * time.Second):
		t.Fatal("no request")
	}
	out.waitFor(t, `asked +`+negID+`: waiting for the bouncer`)
	if _, err := kl.AcceptNegotiation(ctx, negID); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, `accepted `+negID+`: Letters .* took your request`)
	out.waitFor(t, `negotiation_started +negotiation `+negID+`: brand Acme, bouncer Letters  arena  turn: brand \(you\)`)
	writeLine(t, in, "[WALK]")
	out.waitFor(t, `negotiation_ended WALKED`)
	out.waitFor(t, `receipt +verified: walked`)
	out.waitFor(t, `lobby +back in the lobby as Acme; offers are arena`)
	in.Close()
	if err := waitDone(t, done); err != nil {
		t.Fatalf("connect: %v\n%s", err, out.String())
	}
	if errOut.String() != "" {
		t.Fatalf("stderr: %s", errOut.String())
	}
}

// conns records the TCP connections a dialer makes, so a test can cut them.
type conns struct {
	mu   sync.Mutex
	list []net.Conn
}

func (c *conns) dialer() *websocket.Dialer {
	return &websocket.Dialer{HandshakeTimeout: 5 * time.Second, NetDialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			c.mu.Lock()
			c.list = append(c.list, conn)
			c.mu.Unlock()
		}
		return conn, err
	}}
}

// cutLast closes the newest connection.
func (c *conns) cutLast(t *testing.T) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.list[len(c.list)-1].Close(); err != nil {
		t.Fatal(err)
	}
}

// TestConnectSaysWhenItDrops: the lobby's and then the room's connection is
// cut under `venue connect`; it says so on stderr, reconnects, says that
// too, and goes on.
func TestConnectSaysWhenItDrops(t *testing.T) {
	t.Parallel()
	base := startCmdVenue(t)
	ctx := context.Background()
	brand, brandID := registerGranted(t, base, "Acme", "brand", grants.Scope{})
	bouncer, bouncerID := registerGranted(t, base, "Letters", "bouncer", grants.Scope{})
	var cs conns
	pr, pw := io.Pipe()
	t.Cleanup(func() { pw.Close() })
	out, errOut, done := newSyncBuffer(), newSyncBuffer(), make(chan error, 1)
	go func() {
		done <- runCobra(t, connectCmdWith(client.WithDialer(cs.dialer()),
			client.WithLobbyBackoff(client.Backoff{Base: time.Millisecond, Max: 10 * time.Millisecond})),
			pr, out, errOut, "--url", base, "--key", bouncer.APIKey())
	}()
	out.waitFor(t, `lobby +you are Letters`)
	cs.cutLast(t)
	errOut.waitFor(t, `connection dropped: the lobby socket \(`+bouncerID+`\): .*; reconnecting`)
	errOut.waitFor(t, `reconnected: the lobby socket \(`+bouncerID+`\) is back \(reconnect 1\)`)

	// The request made after the drop reaches the new socket.
	bl, err := brand.DialLobby(ctx, brandID)
	if err != nil {
		t.Fatal(err)
	}
	defer bl.Close()
	off, err := bl.SubmitOffer(ctx, bouncerID, client.Offer{Title: "Spring"}, true)
	if err != nil {
		t.Fatal(err)
	}
	created, err := bl.CreateNegotiation(ctx, off.OfferID)
	if err != nil {
		t.Fatal(err)
	}
	negID := created.NegotiationID
	out.waitFor(t, `request +`+negID)
	writeLine(t, pw, "accept "+negID)
	out.waitFor(t, `negotiation_started +negotiation `+negID)
	cs.cutLast(t)
	errOut.waitFor(t, `connection dropped: the negotiation socket \(`+negID+`\)`)
	errOut.waitFor(t, `reconnected: the negotiation socket \(`+negID+`\) is back \(reconnect 1\)`)
	br, err := brand.DialRoom(ctx, negID, client.RoomOptions{AgentID: brandID})
	if err != nil {
		t.Fatal(err)
	}
	defer br.Close()
	if _, err := br.Message(ctx, "still there?"); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, `#1 +brand +message +"still there\?"`)
	writeLine(t, pw, "[WALK]")
	out.waitFor(t, `receipt +verified: walked`)
	writeLine(t, pw, "quit")
	if err := waitDone(t, done); err != nil {
		t.Fatalf("connect: %v", err)
	}
}
