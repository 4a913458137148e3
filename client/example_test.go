package client_test

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/venuehq/venue/client"
	"github.com/venuehq/venue/clock"
	"github.com/venuehq/venue/grants"
	"github.com/venuehq/venue/venue"
)

// startVenue runs a real venue on a loopback port, in memory, and returns
// its base URL and a function that stops it. clk may be nil (wall clock).
func startVenue(clk clock.Clock) (baseURL string, stop func()) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	srv, err := venue.New(venue.Config{
		Addr: ln.Addr().String(), PublicURL: base, Clock: clk,
		Logger:            slog.New(slog.NewTextHandler(io.Discard, nil)),
		RegisterPerMinute: 1000,
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- srv.ServeListener(ctx, ln, ready) }()
	select {
	case <-ready:
	case err := <-done:
		log.Fatal(err)
	}
	return base, func() {
		cancel()
		if err := <-done; err != nil {
			log.Print(err)
		}
	}
}

// agent is a registered agent with its client and its principal's key.
type agent struct {
	*client.Client
	ID        string
	Principal ed25519.PrivateKey
}

// newAgent registers an agent whose principal (a fresh key) grants it scope
// for 24 hours from now.
func newAgent(ctx context.Context, c *client.Client, name, role string, scope grants.Scope, now time.Time) (agent, error) {
	pub, priv, err := grants.GenerateKey()
	if err != nil {
		return agent{}, err
	}
	jwk := grants.PublicJWK(pub)
	a, err := c.Register(ctx, name, role, &jwk)
	if err != nil {
		return agent{}, err
	}
	ag := agent{Client: c.WithKey(a.APIKey), ID: a.ID, Principal: priv}
	tok, err := grants.SignGrant(priv, grants.GrantClaims{
		Subject: a.ID, Audience: "venue", IssuedAt: now, ExpiresAt: now.Add(24 * time.Hour), Scope: scope,
	})
	if err != nil {
		return agent{}, err
	}
	if _, err := ag.UploadGrant(ctx, tok); err != nil {
		return agent{}, err
	}
	return ag, nil
}

func cents(c int64) *int64 { return &c }

// waitFor bounds how long an example or test waits for a frame over
// loopback: a safety net, never the thing asserted.
const waitFor = 5 * time.Second

// next returns the next event of r, skipping agent_thinking.
func next(r *client.Room) (client.Event, error) {
	t := time.NewTimer(waitFor)
	defer t.Stop()
	for {
		select {
		case ev, ok := <-r.Events():
			if !ok {
				return client.Event{}, fmt.Errorf("events closed: %v", r.Err())
			}
			if ev.Type == client.TypeAgentThinking {
				continue
			}
			return ev, nil
		case <-t.C:
			return client.Event{}, errors.New("no event in time")
		}
	}
}

// nextPush returns the next lobby push of type typ.
func nextPush(l *client.Lobby, typ string) (client.Push, error) {
	t := time.NewTimer(waitFor)
	defer t.Stop()
	for {
		select {
		case p, ok := <-l.Pushes():
			if !ok {
				return client.Push{}, fmt.Errorf("lobby closed: %v", l.Err())
			}
			if p.Type == typ {
				return p, nil
			}
		case <-t.C:
			return client.Push{}, fmt.Errorf("no %s in time", typ)
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		log.Fatal(err)
	}
	return v
}

// Example is a whole negotiation: two agents whose principals granted them a
// ceiling and a floor meet in the lobby, negotiate to a deal, and anyone
// verifies the venue's receipt against the transcript.
func Example() {
	base, stop := startVenue(nil)
	defer stop()
	ctx := context.Background()
	c := must(client.New(base))
	now := time.Now()

	brand := must(newAgent(ctx, c, "Acme Brand Agent", "brand",
		grants.Scope{Amount: &grants.AmountLimit{MaxCents: cents(350000)}, Categories: []string{"primary_slot"}}, now))
	bouncer := must(newAgent(ctx, c, "Newsletter Bouncer", "bouncer",
		grants.Scope{Amount: &grants.AmountLimit{MinCents: cents(250000)}}, now))

	// The lobby: the brand offers, the bouncer accepts.
	bl := must(brand.DialLobby(ctx, brand.ID))
	defer bl.Close()
	kl := must(bouncer.DialLobby(ctx, bouncer.ID))
	defer kl.Close()
	off := must(bl.SubmitOffer(ctx, bouncer.ID, client.Offer{Title: "Spring launch", Brief: "Two sends"}, true))
	created := must(bl.CreateNegotiation(ctx, off.OfferID))
	req := must(nextPush(kl, "negotiation_requested"))
	fmt.Println("bouncer is asked by", req.Brand.Name)
	must(kl.AcceptNegotiation(ctx, req.NegotiationID))
	must(nextPush(bl, "negotiation_accepted"))

	// The room.
	negID := created.NegotiationID
	br := must(brand.DialRoom(ctx, negID, client.RoomOptions{}))
	defer br.Close()
	kr := must(bouncer.DialRoom(ctx, negID, client.RoomOptions{}))
	defer kr.Close()
	started := must(next(br))
	fmt.Println(started.Type, "- brand on turn:", started.Context.Turn == brand.ID)
	must(next(kr))

	ack := must(br.Propose(ctx, client.Terms{AmountCents: 2800_00, Category: "primary_slot", Sends: 2}, 0, "Two sends for $2,800."))
	fmt.Println("brand proposed, seq", ack.Seq)
	ev := must(next(kr))
	t := must(client.ParseTerms(ev.Terms))
	fmt.Printf("bouncer sees %s $%s\n", ev.FrameType, grants.FormatUSD(t.AmountCents))

	ack = must(kr.Counter(ctx, client.Terms{AmountCents: 3100_00, Category: "primary_slot", Sends: 2}, 0, "$3,100 and it's yours."))
	fmt.Println("bouncer countered, seq", ack.Seq)
	must(next(br))

	ack = must(br.Accept(ctx, client.AcceptOpts{})) // bare: takes what stands
	fmt.Println("brand accepted, seq", ack.Seq)
	end := must(next(br))
	t = must(client.ParseTerms(end.Terms))
	fmt.Printf("%s: %s at $%s\n", end.Type, end.Status, grants.FormatUSD(t.AmountCents))

	claims, tr := must2(c.VerifyReceipt(ctx, negID))
	fmt.Println("receipt verifies:", claims.Status, "arena", claims.Arena, "over", len(tr.Entries), "transcript frames")
	// Output:
	// bouncer is asked by Acme Brand Agent
	// negotiation_started - brand on turn: true
	// brand proposed, seq 1
	// bouncer sees propose_terms $2800.00
	// bouncer countered, seq 2
	// brand accepted, seq 3
	// negotiation_ended: deal at $3100.00
	// receipt verifies: deal arena true over 4 transcript frames
}

func must2[A, B any](a A, b B, err error) (A, B) {
	if err != nil {
		log.Fatal(err)
	}
	return a, b
}

// ExampleClient_Register registers an agent, gives it a principal key and a
// grant, and shows a typed REST refusal.
func ExampleClient_Register() {
	base, stop := startVenue(nil)
	defer stop()
	ctx := context.Background()
	c := must(client.New(base))

	a := must(c.Register(ctx, "Letters from Lisbon", "bouncer", nil))
	me := c.WithKey(a.APIKey)
	pub, priv := must2(grants.GenerateKey())
	thumb := must(me.SetPrincipalKey(ctx, grants.PublicJWK(pub)))
	fmt.Println("thumbprint is", len(thumb), "characters")

	now := time.Now()
	tok := must(grants.SignGrant(priv, grants.GrantClaims{
		Subject: a.ID, Audience: "venue", IssuedAt: now, ExpiresAt: now.Add(time.Hour),
		Scope: grants.Scope{Amount: &grants.AmountLimit{MinCents: cents(250000)}},
	}))
	g := must(me.UploadGrant(ctx, tok))
	fmt.Println("grant", g.Status, string(g.Scope))

	// The same token again: every grant needs a fresh jti.
	_, err := me.UploadGrant(ctx, tok)
	var ve *client.Error
	if errors.As(err, &ve) {
		fmt.Println(ve.Status, ve.Code)
	}
	_, err = c.Register(ctx, "x", "marketer", nil)
	fmt.Println(client.IsCode(err, "invalid_argument"))
	// Output:
	// thumbprint is 43 characters
	// grant active {"amount_usd":{"min":2500}}
	// 409 duplicate_jti
	// true
}

// ExampleRoom_Propose shows a binding frame reaching past the grant: the
// venue answers with a scope_block, a *client.ScopeBlock naming every check
// that failed, and nobody else sees the frame.
func ExampleRoom_Propose() {
	base, stop := startVenue(nil)
	defer stop()
	ctx := context.Background()
	c := must(client.New(base))
	now := time.Now()
	brand := must(newAgent(ctx, c, "Acme", "brand",
		grants.Scope{Amount: &grants.AmountLimit{MaxCents: cents(300000)}, Categories: []string{"footer"}}, now))
	bouncer := must(newAgent(ctx, c, "Letters", "bouncer", grants.Scope{}, now))
	negID := must(match(ctx, brand, bouncer))

	br := must(brand.DialRoom(ctx, negID, client.RoomOptions{}))
	defer br.Close()
	_, err := br.Propose(ctx, client.Terms{AmountCents: 3500_00, Category: "primary_slot", Sends: 2}, 2*time.Minute, "")
	var sb *client.ScopeBlock
	if errors.As(err, &sb) {
		for _, ch := range sb.Checks {
			fmt.Printf("%s: limit %s, got %s\n", ch.Check, ch.Limit, ch.Got)
		}
	}
	// Within the grant it lands.
	ack := must(br.Propose(ctx, client.Terms{AmountCents: 2900_00, Category: "footer"}, 2*time.Minute, ""))
	fmt.Println("landed as seq", ack.Seq)
	// Output:
	// amount_usd: limit 3000.00, got 3500.00
	// category: limit [footer], got primary_slot
	// landed as seq 1
}

// match runs the lobby dance (offer, request, accept) in arena mode and
// returns the live negotiation's id.
func match(ctx context.Context, brand, bouncer agent) (string, error) {
	bl, err := brand.DialLobby(ctx, brand.ID)
	if err != nil {
		return "", err
	}
	defer bl.Close()
	kl, err := bouncer.DialLobby(ctx, bouncer.ID)
	if err != nil {
		return "", err
	}
	defer kl.Close()
	off, err := bl.SubmitOffer(ctx, bouncer.ID, client.Offer{Title: "Spring launch", Brief: "Two sends"}, true)
	if err != nil {
		return "", err
	}
	created, err := bl.CreateNegotiation(ctx, off.OfferID)
	if err != nil {
		return "", err
	}
	if _, err := kl.AcceptNegotiation(ctx, created.NegotiationID); err != nil {
		return "", err
	}
	return created.NegotiationID, nil
}

// A minimal bouncer (the README's): it takes the first request and accepts
// any proposal of at least $2,500, countering anything less. It is compiled,
// not run.
func Example_minimalBouncer() {
	ctx := context.Background()
	c, err := client.New("http://127.0.0.1:8080", client.WithAPIKey(os.Getenv("VENUE_API_KEY")))
	if err != nil {
		log.Fatal(err)
	}
	me, err := c.Me(ctx)
	if err != nil {
		log.Fatal(err)
	}
	lobby, err := c.DialLobby(ctx, me.AgentID)
	if err != nil {
		log.Fatal(err)
	}
	defer lobby.Close()
	req := <-lobby.Pushes() // negotiation_requested
	acc, err := lobby.AcceptNegotiation(ctx, req.NegotiationID)
	if err != nil {
		log.Fatal(err)
	}
	room, err := c.DialRoom(ctx, acc.NegotiationID, client.RoomOptions{AgentID: me.AgentID})
	if err != nil {
		log.Fatal(err)
	}
	defer room.Close()
	for ev := range room.Events() {
		if ev.FrameType != client.FrameProposeTerms && ev.FrameType != client.FrameCounterTerms {
			continue
		}
		t, err := client.ParseTerms(ev.Terms)
		if err != nil {
			log.Fatal(err)
		}
		if t.AmountCents >= client.Dollars(2500) {
			_, err = room.Accept(ctx, client.AcceptOpts{OfferHash: ev.OfferHash})
		} else {
			_, err = room.Counter(ctx, client.Terms{AmountCents: client.Dollars(2500)}, 0, "$2,500 and it's yours.")
		}
		if err != nil {
			log.Print(err) // a scope_block or an error frame: the room goes on
		}
	}
}
