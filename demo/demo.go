// Package demo is `venue demo`: two scripted agents and their principals
// play a whole negotiation on a running venue through package client, an
// observer prints it, and the receipt is verified (DELEGATION.md
// "Receipts"). cmd/venue only parses its flags.
package demo

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/venuehq/venue/client"
	"github.com/venuehq/venue/connect"
	"github.com/venuehq/venue/grants"
	"github.com/venuehq/venue/receipt"
)

// Options are what Run needs (the flags of `venue demo`).
type Options struct {
	// URL is the venue's base URL.
	URL string
	// AckWait bounds the wait for a frame's message_ack (default 5s).
	AckWait time.Duration
}

// The demo's script: what each principal allows, where each side opens,
// when it settles.
const (
	demoCategory         = "primary_slot"
	demoSends            = 2
	demoCeiling    int64 = 3500_00 // cents; the brand's grant: amount_usd.max
	demoFloor      int64 = 2500_00 // cents; the bouncer's grant: amount_usd.min
	demoBrandOpen  int64 = 2000_00
	demoBouncerAsk int64 = 3400_00
	demoCloseGap   int64 = 300_00 // a side accepts when the other is this close to its own last offer
	demoStep       int64 = 25_00  // counters move in $25 steps
)

// demoAgent is one side: its client, id and principal key.
type demoAgent struct {
	role, name string
	c          *client.Client
	id         string
	principal  ed25519.PrivateKey
}

// Run plays the demo on the venue at o.URL, printing it to out; it fails
// when anything in the protocol misbehaves (see the command's help).
func Run(ctx context.Context, o Options, out io.Writer) error {
	if o.AckWait <= 0 {
		o.AckWait = 5 * time.Second
	}
	c, err := client.New(o.URL)
	if err != nil {
		return err
	}
	info, err := c.Info(ctx)
	if err != nil {
		return fmt.Errorf("is a venue running at %s? %w", o.URL, err)
	}
	fmt.Fprintf(out, "venue %s at %s (grant audience %q)\n\n", info.Version, c.BaseURL(), info.Audience)

	suffix := fmt.Sprintf("%04x", time.Now().UnixNano()&0xffff)
	brand, err := demoRegister(ctx, c, out, "brand", "Demo Brand "+suffix, info.Audience,
		grants.Scope{Role: "brand", Amount: &grants.AmountLimit{MaxCents: usdCents(demoCeiling)}, Categories: []string{demoCategory}})
	if err != nil {
		return err
	}
	bouncer, err := demoRegister(ctx, c, out, "bouncer", "Demo Bouncer "+suffix, info.Audience,
		grants.Scope{Role: "bouncer", Amount: &grants.AmountLimit{MinCents: usdCents(demoFloor)}})
	if err != nil {
		return err
	}
	if _, err := bouncer.c.SetProfile(ctx, client.ProfileUpdate{
		Description: "A weekly letter for 40,000 readers", Categories: []string{demoCategory},
	}); err != nil {
		return fmt.Errorf("bouncer profile: %w", err)
	}

	negID, err := demoLobby(ctx, out, brand, bouncer)
	if err != nil {
		return err
	}
	return demoRoom(ctx, o, out, c, negID, brand, bouncer)
}

func usdCents(cents int64) *int64 { return &cents }

// demoRegister registers an agent, sets its principal's key and uploads the
// grant the principal signed.
func demoRegister(ctx context.Context, c *client.Client, out io.Writer, role, name, aud string, scope grants.Scope) (demoAgent, error) {
	pub, priv, err := grants.GenerateKey()
	if err != nil {
		return demoAgent{}, err
	}
	a, err := c.Register(ctx, name, role, nil)
	if err != nil {
		return demoAgent{}, fmt.Errorf("register the %s: %w", role, err)
	}
	ag := demoAgent{role: role, name: name, c: c.WithKey(a.APIKey), id: a.ID, principal: priv}
	thumb, err := ag.c.SetPrincipalKey(ctx, grants.PublicJWK(pub))
	if err != nil {
		return demoAgent{}, fmt.Errorf("the %s's principal key: %w", role, err)
	}
	now := time.Now()
	tok, err := grants.SignGrant(priv, grants.GrantClaims{
		Subject: a.ID, Audience: aud, IssuedAt: now, ExpiresAt: now.Add(time.Hour), Scope: scope,
	})
	if err != nil {
		return demoAgent{}, err
	}
	g, err := ag.c.UploadGrant(ctx, tok)
	if err != nil {
		return demoAgent{}, fmt.Errorf("the %s's grant: %w", role, err)
	}
	if g.Status != "active" {
		return demoAgent{}, fmt.Errorf("the %s's grant is %s, not active", role, g.Status)
	}
	fmt.Fprintf(out, "%-8s %s (%s)\n         principal key thumbprint %s…, grant %s %s\n",
		role, name, a.ID, thumb[:12], g.JTI, g.Scope)
	return ag, nil
}

// demoLobby matches the two in the lobby (arena mode) and returns the live
// negotiation's id.
func demoLobby(ctx context.Context, out io.Writer, brand, bouncer demoAgent) (string, error) {
	bl, err := brand.c.DialLobby(ctx, brand.id)
	if err != nil {
		return "", fmt.Errorf("brand lobby: %w", err)
	}
	defer bl.Close()
	kl, err := bouncer.c.DialLobby(ctx, bouncer.id)
	if err != nil {
		return "", fmt.Errorf("bouncer lobby: %w", err)
	}
	defer kl.Close()

	found, err := bl.BrowseBouncers(ctx, client.BrowseQuery{Category: demoCategory, Q: bouncer.name})
	if err != nil {
		return "", fmt.Errorf("browse_bouncers: %w", err)
	}
	ok := false
	for _, p := range found.Items {
		ok = ok || p.AgentID == bouncer.id
	}
	if !ok {
		return "", fmt.Errorf("browse_bouncers for %q in %s did not list the bouncer %s", bouncer.name, demoCategory, bouncer.id)
	}
	prof, err := bl.GetProfile(ctx, bouncer.id)
	if err != nil {
		return "", fmt.Errorf("get_profile: %w", err)
	}
	fmt.Fprintf(out, "\nlobby    the brand browses %s and finds %s: %q, reputation %d\n", demoCategory, prof.Name, prof.Description, prof.Reputation)

	off, err := bl.SubmitOffer(ctx, bouncer.id, client.Offer{
		Title: "Spring launch", Brief: fmt.Sprintf("%d sends in the primary slot", demoSends),
	}, true)
	if err != nil {
		return "", fmt.Errorf("submit_offer: %w", err)
	}
	created, err := bl.CreateNegotiation(ctx, off.OfferID)
	if err != nil {
		return "", fmt.Errorf("create_negotiation: %w", err)
	}
	fmt.Fprintf(out, "lobby    offer %s submitted (arena), negotiation %s requested\n", off.OfferID, created.NegotiationID)
	req, err := demoPush(ctx, kl, "negotiation_requested", created.NegotiationID)
	if err != nil {
		return "", err
	}
	if req.Brand == nil || req.Brand.AgentID != brand.id || !req.Arena {
		return "", fmt.Errorf("negotiation_requested does not show the brand's arena request: %s", req.Raw)
	}
	acc, err := kl.AcceptNegotiation(ctx, created.NegotiationID)
	if err != nil {
		return "", fmt.Errorf("accept_negotiation: %w", err)
	}
	if _, err := demoPush(ctx, bl, "negotiation_accepted", created.NegotiationID); err != nil {
		return "", err
	}
	fmt.Fprintf(out, "lobby    the bouncer accepts; live from %s until %s\n\n", acc.StartedAt, acc.DeadlineAt)
	return created.NegotiationID, nil
}

// demoPush waits for the lobby push of type typ about negID; other pushes
// (a request pushed twice, say) are skipped, an error push fails.
func demoPush(ctx context.Context, l *client.Lobby, typ, negID string) (client.Push, error) {
	for {
		select {
		case p, ok := <-l.Pushes():
			if !ok {
				return client.Push{}, fmt.Errorf("the lobby closed while waiting for %s: %v", typ, l.Err())
			}
			if p.Err != nil {
				return client.Push{}, fmt.Errorf("lobby error while waiting for %s: %w", typ, p.Err)
			}
			if p.Type == typ && p.NegotiationID == negID {
				return p, nil
			}
			if p.NegotiationID == negID && p.Type != "negotiation_requested" {
				return client.Push{}, fmt.Errorf("waiting for %s, got %s", typ, p.Raw)
			}
		case <-ctx.Done():
			return client.Push{}, fmt.Errorf("no %s: %w", typ, ctx.Err())
		}
	}
}

// demoOutcome is what one socket saw end the negotiation.
type demoOutcome struct {
	ended   client.Event
	lastAck *client.Ack // the party's last binding frame's ack
}

func demoRoom(ctx context.Context, o Options, out io.Writer, c *client.Client, negID string, brand, bouncer demoAgent) error {
	obs, err := c.DialRoom(ctx, negID, client.RoomOptions{Observe: true})
	if err != nil {
		return fmt.Errorf("observe: %w", err)
	}
	defer obs.Close()

	labels := map[string]string{brand.id: "brand", bouncer.id: "bouncer"}
	who := func(id string) string {
		if l, ok := labels[id]; ok {
			return l
		}
		if id == "" {
			return "venue"
		}
		return id
	}
	fmt.Fprintln(out, "transcript, as an observer sees it:")
	// The observer is subscribed once it has its negotiation_started: from
	// then on it sees everything live, agent_thinking included (which no
	// replay can give).
	select {
	case ev, ok := <-obs.Events():
		if !ok || ev.Type != client.TypeNegotiationStarted {
			return fmt.Errorf("observer: want negotiation_started first, got %s (%v)", ev.Raw, obs.Err())
		}
		fmt.Fprintln(out, "  "+connect.FormatEvent(ev, who))
	case <-ctx.Done():
		return fmt.Errorf("observer: no negotiation_started: %w", ctx.Err())
	}
	kr, err := bouncer.c.DialRoom(ctx, negID, client.RoomOptions{})
	if err != nil {
		return fmt.Errorf("bouncer room: %w", err)
	}
	defer kr.Close()
	br, err := brand.c.DialRoom(ctx, negID, client.RoomOptions{})
	if err != nil {
		return fmt.Errorf("brand room: %w", err)
	}
	defer br.Close()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	var watched demoOutcome
	var lastSeq int64
	var outs [2]demoOutcome
	run := func(f func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(); err != nil {
				errs <- err
				cancel()
			}
		}()
	}
	run(func() (err error) { watched, lastSeq, err = demoWatch(ctx, obs, out, who); return })
	parties := [2]*demoParty{
		{role: "brand", me: brand.id, room: br, first: true, open: demoBrandOpen, limit: demoCeiling, ackWait: o.AckWait},
		{role: "bouncer", me: bouncer.id, room: kr, open: demoBouncerAsk, limit: demoFloor, ackWait: o.AckWait},
	}
	for i, p := range parties {
		run(func() (err error) { outs[i], err = p.play(ctx); return })
	}
	wg.Wait()
	close(errs)
	if err, failed := <-errs; failed {
		return err // the first failure; the others are its echo (context canceled)
	}

	// The outcome: every socket saw the same deal, the one accepted.
	end := watched.ended
	fmt.Fprintln(out)
	if end.Status != "deal" {
		return fmt.Errorf("the negotiation ended %s, not in a deal", end.Status)
	}
	for i, po := range outs {
		if po.ended.Seq != end.Seq || po.ended.Status != end.Status || po.ended.OfferHash != end.OfferHash || po.ended.Receipt != end.Receipt {
			return fmt.Errorf("the %s saw another ending than the observer: %s", parties[i].role, po.ended.Raw)
		}
	}
	terms, err := client.ParseTerms(end.Terms)
	if err != nil {
		return fmt.Errorf("the deal's terms: %w", err)
	}
	// The bouncer's accept took the brand's last counter.
	if a := outs[0].lastAck; a == nil || a.OfferHash != end.OfferHash {
		return fmt.Errorf("the deal's offer_hash %s is not the brand's last proposal's", end.OfferHash)
	}
	if terms.AmountCents > demoCeiling || terms.AmountCents < demoFloor {
		return fmt.Errorf("the deal at %s is outside the grants (%s-%s)", connect.FormatUSD(terms.AmountCents), connect.FormatUSD(demoFloor), connect.FormatUSD(demoCeiling))
	}
	fmt.Fprintf(out, "outcome  DEAL at %s, %s, %d sends (offer_hash %s)\n", connect.FormatUSD(terms.AmountCents), terms.Category, terms.Sends, end.OfferHash)

	// The receipt: the one in negotiation_ended, the one served, the JWKS
	// and the transcript all agree.
	claims, tr, err := c.VerifyReceipt(ctx, negID)
	if err != nil {
		return fmt.Errorf("receipt: %w", err)
	}
	served, err := c.Receipt(ctx, negID)
	if err != nil {
		return err
	}
	if served != end.Receipt {
		return errors.New("the receipt served differs from the one in negotiation_ended")
	}
	jwks, err := c.JWKS(ctx)
	if err != nil {
		return err
	}
	if _, err := receipt.Verify(end.Receipt, jwks); err != nil {
		return fmt.Errorf("the receipt of negotiation_ended: %w", err)
	}
	switch {
	case claims.Status != "deal" || claims.OfferHash != end.OfferHash:
		return fmt.Errorf("the receipt says %s %s, the room %s %s", claims.Status, claims.OfferHash, end.Status, end.OfferHash)
	case claims.Brand != brand.id || claims.Bouncer != bouncer.id || !claims.Arena:
		return fmt.Errorf("the receipt names %s and %s (arena %v)", claims.Brand, claims.Bouncer, claims.Arena)
	case claims.LastSeq != lastSeq || tr.HeadHash != claims.HeadHash || end.Hash != claims.HeadHash:
		return fmt.Errorf("the receipt commits to seq %d head %s; the observer saw seq %d head %s", claims.LastSeq, claims.HeadHash, lastSeq, end.Hash)
	}
	fmt.Fprintf(out, "receipt  OK: signed by the venue's key, %s, arena %v, %s to %s\n", claims.Status, claims.Arena, claims.StartedAt, claims.EndedAt)
	fmt.Fprintf(out, "transcript OK: %d entries re-hashed, head %s\n", len(tr.Entries), claims.HeadHash)
	return nil
}

// demoWatch prints what the observer sees after its negotiation_started,
// checking that it is what the protocol promises: seqs 1, 2, 3, ... without
// a gap, only the frames a negotiation to a deal has.
func demoWatch(ctx context.Context, obs *client.Room, out io.Writer, who func(string) string) (demoOutcome, int64, error) {
	var last int64
	for {
		select {
		case <-ctx.Done():
			return demoOutcome{}, last, fmt.Errorf("observer: %w", ctx.Err())
		case ev, ok := <-obs.Events():
			if !ok {
				return demoOutcome{}, last, fmt.Errorf("the observer's socket ended before negotiation_ended: %v", obs.Err())
			}
			switch ev.Type {
			case client.TypeAgentThinking:
				fmt.Fprintln(out, "  "+connect.FormatEvent(ev, who))
				continue
			case client.TypeNegotiationMessage, client.TypeNegotiationEnded:
			default:
				return demoOutcome{}, last, fmt.Errorf("observer: unexpected frame %s", ev.Raw)
			}
			if ev.Seq != last+1 {
				return demoOutcome{}, last, fmt.Errorf("observer: seq %d after seq %d: a gap", ev.Seq, last)
			}
			last = ev.Seq
			fmt.Fprintln(out, "  "+connect.FormatEvent(ev, who))
			if ev.Type == client.TypeNegotiationEnded {
				return demoOutcome{ended: ev}, last, nil
			}
		}
	}
}

// demoParty is a scripted agent: it opens at open, and answers each of the
// other side's offers by accepting it when it is within demoCloseGap of its
// own last offer, else by countering halfway (in $25 steps), never past its
// principal's limit.
type demoParty struct {
	role    string
	me      string
	room    *client.Room
	first   bool  // opens the negotiation (the brand: on turn first)
	open    int64 // opening amount, cents
	limit   int64 // the grant's ceiling (brand) or floor (bouncer), cents
	ackWait time.Duration

	mine    int64 // the last amount (cents) this side put on the table; 0: none yet
	lastAck *client.Ack
	talked  bool
}

func (p *demoParty) terms(amount int64) client.Terms {
	return client.Terms{AmountCents: amount, Category: demoCategory, Sends: demoSends}
}

// send sends one frame and checks its ack.
func (p *demoParty) send(ctx context.Context, f client.Frame) (*client.Ack, error) {
	sctx, cancel := context.WithTimeout(ctx, p.ackWait)
	defer cancel()
	ack, err := p.room.Send(sctx, f)
	var sb *client.ScopeBlock
	switch {
	case errors.As(err, &sb):
		return nil, fmt.Errorf("%s: %s got a scope_block: %w", p.role, f.Type, err)
	case errors.Is(err, context.DeadlineExceeded):
		return nil, fmt.Errorf("%s: no message_ack for %s within %s", p.role, f.Type, p.ackWait)
	case err != nil:
		return nil, fmt.Errorf("%s: %s: %w", p.role, f.Type, err)
	case ack.Seq <= 0 || ack.FrameType != f.Type || ack.ID == "":
		return nil, fmt.Errorf("%s: a malformed message_ack for %s: %s", p.role, f.Type, ack.Raw)
	case (f.Type == client.FrameProposeTerms || f.Type == client.FrameCounterTerms) && (ack.ProposalID == "" || ack.OfferHash == ""):
		return nil, fmt.Errorf("%s: the ack of %s lacks proposal_id or offer_hash: %s", p.role, f.Type, ack.Raw)
	}
	return ack, nil
}

func (p *demoParty) offer(ctx context.Context, typ string, amount int64, content string) error {
	ack, err := p.send(ctx, client.Frame{Type: typ, Terms: p.terms(amount), Content: content})
	if err != nil {
		return err
	}
	p.mine, p.lastAck = amount, ack
	return nil
}

// play runs the script on the room's events until negotiation_ended.
func (p *demoParty) play(ctx context.Context) (demoOutcome, error) {
	for {
		var ev client.Event
		select {
		case <-ctx.Done():
			return demoOutcome{}, fmt.Errorf("%s: %w", p.role, ctx.Err())
		case e, ok := <-p.room.Events():
			if !ok {
				return demoOutcome{}, fmt.Errorf("%s: the socket ended before negotiation_ended: %v", p.role, p.room.Err())
			}
			ev = e
		}
		switch ev.Type {
		case client.TypeNegotiationStarted:
			if ev.Context == nil || ev.Context.Status != "live" {
				return demoOutcome{}, fmt.Errorf("%s: negotiation_started without a live context: %s", p.role, ev.Raw)
			}
			if p.first {
				if ev.Context.Turn != p.me {
					return demoOutcome{}, fmt.Errorf("%s: expected to be on turn first: %s", p.role, ev.Raw)
				}
				if _, err := p.send(ctx, client.Frame{Type: client.FrameMessage, Content: "Hello! We'd love two sends in your primary slot this spring."}); err != nil {
					return demoOutcome{}, err
				}
				if err := p.offer(ctx, client.FrameProposeTerms, p.open, "Two sends, primary slot: we can do "+connect.FormatUSD(p.open)+"."); err != nil {
					return demoOutcome{}, err
				}
			}
		case client.TypeAgentThinking:
		case client.TypeNegotiationMessage:
			if ev.From == p.me {
				continue // our own frame, replayed after a reconnect
			}
			if err := p.answer(ctx, ev); err != nil {
				return demoOutcome{}, err
			}
		case client.TypeNegotiationEnded:
			return demoOutcome{ended: ev, lastAck: p.lastAck}, nil
		default:
			return demoOutcome{}, fmt.Errorf("%s: unexpected frame %s", p.role, ev.Raw)
		}
	}
}

// answer reacts to the other side's frame.
func (p *demoParty) answer(ctx context.Context, ev client.Event) error {
	switch ev.FrameType {
	case client.FrameMessage, client.FrameResearch, client.FrameAccept:
		return nil // talk; an accept is followed by negotiation_ended
	case client.FrameProposeTerms, client.FrameCounterTerms:
	default:
		return fmt.Errorf("%s: the other side sent %s, not in the script", p.role, ev.FrameType)
	}
	t, err := client.ParseTerms(ev.Terms)
	if err != nil {
		return fmt.Errorf("%s: %w", p.role, err)
	}
	theirs := t.AmountCents
	if p.mine == 0 { // the bouncer's first answer: look, think, ask high
		if !p.talked {
			p.talked = true
			if _, err := p.send(ctx, client.Frame{Type: client.FrameResearch, Content: "Looking up the brand's past campaigns and our open rates."}); err != nil {
				return err
			}
			if err := p.room.Thinking(ctx); err != nil {
				return err
			}
		}
		return p.offer(ctx, client.FrameCounterTerms, p.open, "Our primary slot goes for "+connect.FormatUSD(p.open)+" for two sends.")
	}
	if gap := theirs - p.mine; gap <= demoCloseGap && -gap <= demoCloseGap && p.within(theirs) {
		_, err := p.send(ctx, client.Frame{Type: client.FrameAccept}) // bare: takes what stands
		return err
	}
	// Halfway, to the nearest step (half a step rounds up).
	next := (p.mine + theirs + demoStep) / (2 * demoStep) * demoStep
	if !p.within(next) {
		next = p.limit
	}
	return p.offer(ctx, client.FrameCounterTerms, next, "Meet me at "+connect.FormatUSD(next)+"?")
}

// within reports whether the principal's grant allows amount.
func (p *demoParty) within(amount int64) bool {
	if p.role == "brand" {
		return amount <= p.limit
	}
	return amount >= p.limit
}
