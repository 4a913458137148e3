package client_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/venuehq/venue/client"
	"github.com/venuehq/venue/clock"
	"github.com/venuehq/venue/grants"
	"github.com/venuehq/venue/receipt"
)

// pair is a live negotiation with both parties' rooms.
type pair struct {
	negID          string
	brand, bouncer agent
	b, k           *client.Room
}

func livePair(t *testing.T, c *client.Client, fc *clock.Fake, brandScope, bouncerScope grants.Scope) pair {
	t.Helper()
	ctx := context.Background()
	brand := mustAgent(t, c, fc, "Acme", "brand", brandScope)
	bouncer := mustAgent(t, c, fc, "Letters", "bouncer", bouncerScope)
	negID, err := match(ctx, brand, bouncer)
	if err != nil {
		t.Fatal(err)
	}
	return pair{negID: negID, brand: brand, bouncer: bouncer,
		b: dialRoom(t, brand.Client, negID, client.RoomOptions{}), k: dialRoom(t, bouncer.Client, negID, client.RoomOptions{})}
}

func dialRoom(t *testing.T, c *client.Client, negID string, o client.RoomOptions) *client.Room {
	t.Helper()
	r, err := c.DialRoom(context.Background(), negID, o)
	if err != nil {
		t.Fatalf("dial room: %v", err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func expect(t *testing.T, r *client.Room, typ string) client.Event {
	t.Helper()
	ev, err := next(r)
	if err != nil {
		t.Fatalf("want %s: %v", typ, err)
	}
	if ev.Type != typ {
		t.Fatalf("want %s, got %s: %s", typ, ev.Type, ev.Raw)
	}
	return ev
}

func expectMessage(t *testing.T, r *client.Room, seq int64, frameType string) client.Event {
	t.Helper()
	ev := expect(t, r, client.TypeNegotiationMessage)
	if ev.Seq != seq || ev.FrameType != frameType {
		t.Fatalf("want seq %d %s, got %s", seq, frameType, ev.Raw)
	}
	return ev
}

// acked returns a check of a send's result: acked(t)(room.Message(...)).
func acked(t *testing.T) func(*client.Ack, error) *client.Ack {
	t.Helper()
	return func(ack *client.Ack, err error) *client.Ack {
		t.Helper()
		if err != nil {
			t.Fatalf("send: %v", err)
		}
		return ack
	}
}

// expectClosed waits for the events channel to close.
func expectClosed(t *testing.T, r *client.Room) {
	t.Helper()
	timeout := time.After(waitFor)
	for {
		select {
		case ev, ok := <-r.Events():
			if !ok {
				return
			}
			if ev.Type != client.TypeAgentThinking {
				t.Fatalf("want the end of events, got %s", ev.Raw)
			}
		case <-timeout:
			t.Fatal("events not closed in time")
		}
	}
}

func ctx5(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	t.Cleanup(cancel)
	return ctx
}

// TestRoomDeal is a whole negotiation with every kind of talk, watched by
// an observer, to a deal whose receipt verifies.
func TestRoomDeal(t *testing.T) {
	t.Parallel()
	c, fc := setup(t)
	ctx := ctx5(t)
	p := livePair(t, c, fc, grants.Scope{}, grants.Scope{})
	obs := dialRoom(t, c, p.negID, client.RoomOptions{Observe: true})
	if _, err := obs.Message(ctx, "hi"); err == nil {
		t.Fatal("an observer sent")
	}
	for _, r := range []*client.Room{p.b, p.k, obs} {
		st := expect(t, r, client.TypeNegotiationStarted)
		if st.NegotiationID != p.negID || st.Context == nil || st.Context.Turn != p.brand.ID || st.Context.Brand.Name != "Acme" ||
			!st.Context.Arena || st.Context.DeadlineAt != "2026-11-30T08:08:00.000Z" {
			t.Fatalf("started: %s", st.Raw)
		}
	}

	ack := acked(t)(p.b.Message(ctx, "Hello from Acme."))
	if ack.Seq != 1 || ack.FrameType != "message" || ack.Turn != p.bouncer.ID || !strings.HasPrefix(ack.Re, "c") || ack.ID == "" {
		t.Fatalf("ack: %s", ack.Raw)
	}
	for _, r := range []*client.Room{p.k, obs} {
		if ev := expectMessage(t, r, 1, "message"); ev.Content != "Hello from Acme." || ev.From != p.brand.ID || ev.Hash == "" {
			t.Fatalf("relayed: %s", ev.Raw)
		}
	}
	if err := p.b.Thinking(ctx); err != nil {
		t.Fatal(err)
	}
	if ev := <-p.k.Events(); ev.Type != client.TypeAgentThinking || ev.From != p.brand.ID {
		t.Fatalf("thinking: %s", ev.Raw)
	}
	acked(t)(p.k.Research(ctx, "checking Acme's last campaigns"))
	expectMessage(t, p.b, 2, "research")

	ack = acked(t)(p.k.Propose(ctx, client.Terms{AmountCents: 3200_00, Category: "primary_slot", Sends: 2}, 2*time.Minute, "Two sends, $3,200."))
	if ack.ProposalID == "" || !strings.HasPrefix(ack.OfferHash, "sha256:") || ack.ExpiresAt != "2026-11-30T08:02:00.000Z" {
		t.Fatalf("proposal ack: %s", ack.Raw)
	}
	ev := expectMessage(t, p.b, 3, "propose_terms")
	terms, err := client.ParseTerms(ev.Terms)
	if err != nil || terms.AmountCents != 3200_00 || terms.Sends != 2 || ev.ProposalID != ack.ProposalID || ev.OfferHash != ack.OfferHash {
		t.Fatalf("proposal: %s %v", ev.Raw, err)
	}
	first := ack
	// The brand counters, then the bouncer withdraws nothing of its own:
	// invalid_state as a typed *Error, nothing changes.
	ack = acked(t)(p.b.Counter(ctx, map[string]any{"amount_usd": 2800, "category": "primary_slot", "sends": 2, "note": "opaque"}, 0, ""))
	if ev := expectMessage(t, p.k, 4, "counter_terms"); ev.Replaces != first.ProposalID || !strings.Contains(string(ev.Terms), `"note":"opaque"`) {
		t.Fatalf("counter: %s", ev.Raw)
	}
	_, err = p.k.Withdraw(ctx, "")
	var e *client.Error
	if !errors.As(err, &e) || e.Code != "invalid_state" || e.Status != 0 {
		t.Fatalf("withdraw of the other side's proposal: %v", err)
	}
	// Accept naming the standing proposal by id: a deal.
	ack = acked(t)(p.k.Accept(ctx, client.AcceptOpts{ProposalID: ack.ProposalID, Content: "Deal."}))
	if ack.Seq != 5 || ack.FrameType != "accept" {
		t.Fatalf("accept ack: %s", ack.Raw)
	}
	expectMessage(t, p.b, 5, "accept")
	var receipts []string
	for _, r := range []*client.Room{p.b, p.k, obs} {
		if r == obs {
			for seq, typ := range []string{"research", "propose_terms", "counter_terms", "accept"} {
				expectMessage(t, obs, int64(seq+2), typ)
			}
		}
		end := expect(t, r, client.TypeNegotiationEnded)
		if end.Status != "deal" || end.Seq != 6 || end.Receipt == "" || !strings.Contains(string(end.Terms), `"amount_usd":2800`) {
			t.Fatalf("ended: %s", end.Raw)
		}
		receipts = append(receipts, end.Receipt)
		expectClosed(t, r)
	}
	if p.b.Err() != nil || p.b.LastSeq() != 6 || obs.LastSeq() != 6 {
		t.Fatalf("after the deal: err %v, last seq %d/%d", p.b.Err(), p.b.LastSeq(), obs.LastSeq())
	}
	// The socket stays up for late replies: a frame after the end is refused.
	if _, err := p.b.Message(ctx, "thanks"); !client.IsCode(err, "invalid_state") {
		t.Fatalf("message after the end: %v", err)
	}

	claims, tr, err := c.VerifyReceipt(ctx, p.negID)
	if err != nil || claims.Status != "deal" || claims.LastSeq != 6 || len(tr.Entries) != 6 || claims.Brand != p.brand.ID {
		t.Fatalf("verify receipt: %+v %v", claims, err)
	}
	jwks, _ := c.JWKS(ctx)
	for _, tok := range receipts {
		if cl, err := receipt.Verify(tok, jwks); err != nil || cl.HeadHash != tr.HeadHash {
			t.Fatalf("the receipt of negotiation_ended: %v", err)
		}
	}
	// Close is idempotent and leaves nothing running.
	for i := 0; i < 2; i++ {
		if err := p.b.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.b.Message(ctx, "late"); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("send after Close: %v", err)
	}
	select {
	case <-p.b.Done():
	default:
		t.Fatal("Done open after Close")
	}
}

// TestRoomScopeBlock: binding frames past the grant come back as a typed
// *ScopeBlock naming every failed check; nothing lands and the other side
// sees nothing.
func TestRoomScopeBlock(t *testing.T) {
	t.Parallel()
	c, fc := setup(t)
	ctx := ctx5(t)
	p := livePair(t, c, fc,
		grants.Scope{Amount: &grants.AmountLimit{MaxCents: cents(350000)}, Categories: []string{"primary_slot"}},
		grants.Scope{Amount: &grants.AmountLimit{MinCents: cents(250000)}})
	expect(t, p.b, client.TypeNegotiationStarted)
	expect(t, p.k, client.TypeNegotiationStarted)

	_, err := p.b.Propose(ctx, client.Terms{AmountCents: 3600_00, Category: "footer"}, 0, "")
	var sb *client.ScopeBlock
	if !errors.As(err, &sb) || sb.FrameType != "propose_terms" || len(sb.Checks) != 2 || !sb.Failed("amount_usd") || !sb.Failed("category") ||
		sb.Checks[0].Limit != "3500.00" || sb.Checks[0].Got != "3600.00" || !strings.HasPrefix(sb.Re, "c") {
		t.Fatalf("scope_block: %#v %v", sb, err)
	}
	if !strings.Contains(err.Error(), "amount_usd, category") {
		t.Fatalf("error text: %v", err)
	}
	// Under the bouncer's floor.
	acked(t)(p.b.Propose(ctx, client.Terms{AmountCents: 2000_00, Category: "primary_slot"}, 0, ""))
	expectMessage(t, p.k, 1, "propose_terms")
	_, err = p.k.Accept(ctx, client.AcceptOpts{})
	if !errors.As(err, &sb) || !sb.Failed("amount_usd") || sb.FrameType != "accept" {
		t.Fatalf("accept under the floor: %v", err)
	}
	ack := acked(t)(p.k.Counter(ctx, client.Terms{AmountCents: 3000_00, Category: "primary_slot"}, 0, ""))
	expectMessage(t, p.b, 2, "counter_terms")
	// A stale offer hash.
	_, err = p.b.Accept(ctx, client.AcceptOpts{Terms: client.Terms{AmountCents: 2000_00, Category: "primary_slot"}})
	if !errors.As(err, &sb) || !sb.Failed("offer_hash") || len(sb.Checks) != 1 {
		t.Fatalf("stale accept: %v", err)
	}
	ack = acked(t)(p.b.Accept(ctx, client.AcceptOpts{OfferHash: ack.OfferHash}))
	if ack.Seq != 3 {
		t.Fatalf("the blocked frames used seqs: %s", ack.Raw)
	}
	// The bouncer saw only what landed.
	expectMessage(t, p.k, 3, "accept")
	if end := expect(t, p.k, client.TypeNegotiationEnded); end.Status != "deal" {
		t.Fatalf("ended: %s", end.Raw)
	}
}

// TestRoomClocks: the venue's clocks on a fake clock: a proposal's ttl lapses
// (proposal_expired to both, accept refused), then the brand misses its
// turn and the negotiation ends; Events closes after negotiation_ended.
func TestRoomClocks(t *testing.T) {
	t.Parallel()
	c, fc := setup(t)
	ctx := ctx5(t)
	p := livePair(t, c, fc, grants.Scope{}, grants.Scope{})
	expect(t, p.b, client.TypeNegotiationStarted)
	expect(t, p.k, client.TypeNegotiationStarted)
	ack := acked(t)(p.b.Propose(ctx, client.Terms{AmountCents: 2500_00}, 5*time.Second, ""))
	if ack.ExpiresAt != "2026-11-30T08:00:10.000Z" {
		t.Fatalf("ttl not clamped to 10 s: %s", ack.Raw)
	}
	expectMessage(t, p.k, 1, "propose_terms")
	fc.Advance(10 * time.Second)
	for _, r := range []*client.Room{p.b, p.k} {
		ex := expect(t, r, client.TypeProposalExpired)
		if ex.ProposalID != ack.ProposalID || ex.By != p.brand.ID || ex.Seq != 2 {
			t.Fatalf("proposal_expired: %s", ex.Raw)
		}
	}
	if _, err := p.k.Accept(ctx, client.AcceptOpts{}); !client.IsCode(err, "invalid_state") {
		t.Fatalf("accept after expiry: %v", err)
	}
	// The brand's move passed the turn to the bouncer at 08:00:00.
	fc.Advance(50 * time.Second)
	for _, r := range []*client.Room{p.b, p.k} {
		end := expect(t, r, client.TypeNegotiationEnded)
		if end.Status != "turn_missed" || end.By != p.bouncer.ID || end.Receipt == "" {
			t.Fatalf("ended: %s", end.Raw)
		}
		expectClosed(t, r)
	}
}

// tap dials the TCP connections of a client's sockets so that a test can
// cut them, hold redials at a gate, or refuse them.
type tap struct {
	mu     sync.Mutex
	conns  []*tapConn
	gate   chan struct{} // while not nil, dials wait for it to close
	refuse bool
	dials  atomic.Int32
	held   chan struct{} // receives when a dial waits at the gate
}

func newTap() *tap { return &tap{held: make(chan struct{}, 16)} }

func (tp *tap) dialer() *websocket.Dialer {
	return &websocket.Dialer{HandshakeTimeout: waitFor, NetDialContext: tp.dial}
}

func (tp *tap) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	tp.dials.Add(1)
	tp.mu.Lock()
	gate, refuse := tp.gate, tp.refuse
	tp.mu.Unlock()
	if refuse {
		return nil, errors.New("tap: refused")
	}
	if gate != nil {
		tp.held <- struct{}{}
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	tc := &tapConn{Conn: c}
	tp.mu.Lock()
	tp.conns = append(tp.conns, tc)
	tp.mu.Unlock()
	return tc, nil
}

func (tp *tap) last() *tapConn {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return tp.conns[len(tp.conns)-1]
}

func (tp *tap) hold() {
	tp.mu.Lock()
	tp.gate = make(chan struct{})
	tp.mu.Unlock()
}

func (tp *tap) release() {
	tp.mu.Lock()
	close(tp.gate)
	tp.gate = nil
	tp.mu.Unlock()
}

var errCut = errors.New("tap: connection cut")

// tapConn can be cut (closed under the client), or made to lose everything
// it receives after its next write.
type tapConn struct {
	net.Conn
	deafAfterWrite atomic.Bool
	deaf           atomic.Bool
	request        atomic.Value // string: the first write, the HTTP upgrade request
}

func (c *tapConn) Write(b []byte) (int, error) {
	c.request.CompareAndSwap(nil, string(b))
	if c.deafAfterWrite.Load() {
		c.deaf.Store(true) // before the write: the answer may beat its return
	}
	return c.Conn.Write(b)
}

func (c *tapConn) Read(b []byte) (int, error) {
	if c.deaf.Load() {
		return 0, errCut
	}
	n, err := c.Conn.Read(b)
	if c.deaf.Load() {
		return 0, errCut
	}
	return n, err
}

// TestRoomReconnect: the brand's connection is cut mid-negotiation; while
// it is down the bouncer moves and the brand sends; after the redial
// (?since=) the brand has every frame exactly once and its frame landed
// once. Then an ack is lost on the wire: the frame is resent with the same
// id, the venue answers with the original ack, and it acted once.
func TestRoomReconnect(t *testing.T) {
	t.Parallel()
	c, fc := setup(t)
	ctx := ctx5(t)
	brand := mustAgent(t, c, fc, "Acme", "brand", grants.Scope{})
	bouncer := mustAgent(t, c, fc, "Letters", "bouncer", grants.Scope{})
	negID, err := match(ctx, brand, bouncer)
	if err != nil {
		t.Fatal(err)
	}
	tp := newTap()
	tapped, _ := client.New(c.BaseURL(), client.WithDialer(tp.dialer()), client.WithAPIKey(brand.APIKey()))
	b := dialRoom(t, tapped, negID, client.RoomOptions{BackoffBase: time.Millisecond, BackoffMax: 10 * time.Millisecond})
	k := dialRoom(t, bouncer.Client, negID, client.RoomOptions{})

	// Every event the brand gets, in order, collected apart.
	var got []client.Event
	gotMu := sync.Mutex{}
	arrived := make(chan struct{}, 64)
	go func() {
		for ev := range b.Events() {
			gotMu.Lock()
			got = append(got, ev)
			gotMu.Unlock()
			arrived <- struct{}{}
		}
		close(arrived)
	}()
	waitSeq := func(seq int64) {
		t.Helper()
		timeout := time.After(waitFor)
		for {
			gotMu.Lock()
			n := len(got)
			last := int64(0)
			if n > 0 {
				last = got[n-1].Seq
			}
			gotMu.Unlock()
			if last >= seq {
				return
			}
			select {
			case _, ok := <-arrived:
				if !ok {
					t.Fatalf("brand events closed waiting for seq %d: %v", seq, b.Err())
				}
			case <-timeout:
				t.Fatalf("brand never got seq %d", seq)
			}
		}
	}

	expect(t, k, client.TypeNegotiationStarted)
	acked(t)(b.Message(ctx, "one"))
	expectMessage(t, k, 1, "message")
	acked(t)(k.Message(ctx, "two"))
	waitSeq(2)

	// Cut the brand's connection and hold its redial.
	tp.hold()
	if err := tp.last().Conn.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-tp.held:
	case <-time.After(waitFor):
		t.Fatal("the room did not redial")
	}
	acked(t)(k.Message(ctx, "three, while you were away"))
	acked(t)(k.Propose(ctx, client.Terms{AmountCents: 3000_00}, 0, ""))
	type result struct {
		ack *client.Ack
		err error
	}
	sent := make(chan result, 1)
	go func() {
		ack, err := b.Message(ctx, "five, sent while down")
		sent <- result{ack, err}
	}()
	tp.release()
	waitSeq(4)
	res := <-sent
	if res.err != nil || res.ack.Seq != 5 {
		t.Fatalf("send while down: %+v", res)
	}
	if ev := expectMessage(t, k, 5, "message"); ev.Content != "five, sent while down" {
		t.Fatalf("bouncer got %s", ev.Raw)
	}
	if b.Reconnects() != 1 {
		t.Fatalf("reconnects %d, want 1", b.Reconnects())
	}
	if req, _ := tp.last().request.Load().(string); !strings.Contains(req, "?since=2 ") || strings.Contains(req, "token=") ||
		!strings.Contains(req, "Authorization: Bearer bsk_") {
		t.Fatalf("the redial asked for %q, want ?since=2 with the key in Authorization", strings.SplitN(req, "\r\n", 2)[0])
	}

	// Lose the ack of the next frame: the venue takes it, its answer never
	// arrives, the room redials and resends the frame with the same id.
	tp.last().deafAfterWrite.Store(true)
	ack := acked(t)(b.Message(ctx, "six, ack lost"))
	if ack.Seq != 6 || b.Reconnects() != 2 {
		t.Fatalf("resent frame: seq %d, reconnects %d", ack.Seq, b.Reconnects())
	}
	if ev := expectMessage(t, k, 6, "message"); ev.Content != "six, ack lost" {
		t.Fatalf("bouncer got %s", ev.Raw)
	}
	if req, _ := tp.last().request.Load().(string); !strings.Contains(req, "?since=5 ") || strings.Contains(req, "token=") {
		t.Fatalf("the second redial asked for %q, want ?since=5", strings.SplitN(req, "\r\n", 2)[0])
	}
	acked(t)(b.Accept(ctx, client.AcceptOpts{}))
	expectMessage(t, k, 7, "accept")
	expect(t, k, client.TypeNegotiationEnded)
	for range arrived { // until the brand's events close after negotiation_ended
	}

	// The brand saw 2, 3, 4 from the bouncer and the end, each once, in
	// order; not its own 6, replayed because its ack was lost (its ack
	// stood for it).
	var seqs []int64
	for _, ev := range got {
		if ev.Type != client.TypeNegotiationStarted {
			seqs = append(seqs, ev.Seq)
		}
	}
	if want := []int64{2, 3, 4, 8}; !equalSeqs(seqs, want) {
		t.Fatalf("brand events seqs %v, want %v", seqs, want)
	}
	if got[0].Type != client.TypeNegotiationStarted {
		t.Fatalf("first event %s", got[0].Raw)
	}
	// The transcript has every frame once.
	tr, err := c.Transcript(ctx, negID)
	if err != nil || len(tr.Entries) != 8 {
		t.Fatalf("transcript: %d entries, %v", len(tr.Entries), err)
	}
	if n := strings.Count(string(tr.Raw), "six, ack lost"); n != 1 {
		t.Fatalf("the resent frame is %d times in the transcript", n)
	}
	if n := strings.Count(string(tr.Raw), "five, sent while down"); n != 1 {
		t.Fatalf("the frame sent while down is %d times in the transcript", n)
	}
}

func equalSeqs(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestRoomGivesUp: when every redial fails the room gives up after
// MaxReconnects: pending sends fail, Events closes and Err says why.
func TestRoomGivesUp(t *testing.T) {
	t.Parallel()
	c, fc := setup(t)
	ctx := ctx5(t)
	brand := mustAgent(t, c, fc, "Acme", "brand", grants.Scope{})
	bouncer := mustAgent(t, c, fc, "Letters", "bouncer", grants.Scope{})
	negID, err := match(ctx, brand, bouncer)
	if err != nil {
		t.Fatal(err)
	}
	tp := newTap()
	tapped, _ := client.New(c.BaseURL(), client.WithDialer(tp.dialer()), client.WithAPIKey(brand.APIKey()))
	b := dialRoom(t, tapped, negID, client.RoomOptions{MaxReconnects: 3, BackoffBase: time.Millisecond})
	expect(t, b, client.TypeNegotiationStarted)
	tp.mu.Lock()
	tp.refuse = true
	tp.mu.Unlock()
	_ = tp.last().Conn.Close()
	expectClosed(t, b)
	<-b.Done()
	if err := b.Err(); err == nil || !strings.Contains(err.Error(), "gave up reconnecting") {
		t.Fatalf("Err: %v", err)
	}
	if n := tp.dials.Load(); n != 4 {
		t.Fatalf("%d dials, want 1 + 3 redials", n)
	}
	if _, err := b.Message(ctx, "anyone?"); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("send after giving up: %v", err)
	}
}

// TestRoomDialErrors: refusals before the upgrade are typed.
func TestRoomDialErrors(t *testing.T) {
	t.Parallel()
	c, fc := setup(t)
	ctx := ctx5(t)
	brand := mustAgent(t, c, fc, "Acme", "brand", grants.Scope{})
	bouncer := mustAgent(t, c, fc, "Letters", "bouncer", grants.Scope{})
	stranger := mustAgent(t, c, fc, "Stranger", "brand", grants.Scope{})
	negID, err := match(ctx, brand, bouncer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.DialRoom(ctx, negID, client.RoomOptions{}); err == nil {
		t.Fatal("a party's socket without a key")
	}
	_, err = stranger.DialRoom(ctx, negID, client.RoomOptions{})
	wantCode(t, err, http.StatusForbidden, "forbidden")
	_, err = c.WithKey("bsk_nope").DialRoom(ctx, negID, client.RoomOptions{})
	wantCode(t, err, http.StatusUnauthorized, "unauthorized")
	if err != nil && strings.Contains(err.Error(), "bsk_nope") {
		t.Fatalf("the token leaked into an error: %v", err)
	}
	_, err = brand.DialRoom(ctx, "neg_nope", client.RoomOptions{})
	wantCode(t, err, http.StatusNotFound, "not_found")
	if _, err := brand.DialRoom(ctx, negID, client.RoomOptions{Since: -2}); err == nil {
		t.Fatal("Since -2 taken")
	}
}

// TestRoomSince: joining with Since replays the transcript after it; with
// NoReplay the room joins live.
func TestRoomSince(t *testing.T) {
	t.Parallel()
	c, fc := setup(t)
	ctx := ctx5(t)
	p := livePair(t, c, fc, grants.Scope{}, grants.Scope{})
	for _, s := range []string{"one", "two", "three"} {
		acked(t)(p.b.Message(ctx, s))
	}
	from1 := dialRoom(t, p.bouncer.Client, p.negID, client.RoomOptions{Since: 1})
	live := dialRoom(t, c, p.negID, client.RoomOptions{Observe: true, Since: client.NoReplay})
	all := dialRoom(t, c, p.negID, client.RoomOptions{Observe: true})
	if st := expect(t, from1, client.TypeNegotiationStarted); st.Context.LastSeq != 3 {
		t.Fatalf("started: %s", st.Raw)
	}
	expectMessage(t, from1, 2, "message")
	expectMessage(t, from1, 3, "message")
	expect(t, all, client.TypeNegotiationStarted)
	for seq := int64(1); seq <= 3; seq++ {
		expectMessage(t, all, seq, "message")
	}
	expect(t, live, client.TypeNegotiationStarted)
	if live.LastSeq() != 3 {
		t.Fatalf("a live observer's last seq: %d", live.LastSeq())
	}
	acked(t)(p.k.Message(ctx, "four"))
	for _, r := range []*client.Room{from1, live, all} {
		if r != from1 { // the bouncer's own frame is not echoed to it live
			expectMessage(t, r, 4, "message")
		}
	}
	acked(t)(p.b.Walk(ctx, "bye"))
	for _, r := range []*client.Room{from1, live, all} {
		expectMessage(t, r, 5, "walk")
		if end := expect(t, r, client.TypeNegotiationEnded); end.Status != "walked" || end.By != p.brand.ID {
			t.Fatalf("ended: %s", end.Raw)
		}
	}
}

// TestRoomEscalation: an agent blocked by its grant escalates; its principal
// approves through Decide; the agent gets escalation_resolved and the
// proposal now lands. Reject, withdraw and close (Leave) on the way.
func TestRoomEscalation(t *testing.T) {
	t.Parallel()
	c, fc := setup(t)
	ctx := ctx5(t)
	p := livePair(t, c, fc, grants.Scope{Amount: &grants.AmountLimit{MaxCents: cents(300000)}}, grants.Scope{})
	expect(t, p.b, client.TypeNegotiationStarted)
	expect(t, p.k, client.TypeNegotiationStarted)
	big := client.Terms{AmountCents: 3400_00, Category: "primary_slot"}
	if _, err := p.b.Propose(ctx, big, 0, ""); err == nil {
		t.Fatal("over the ceiling, landed")
	}
	ack := acked(t)(p.b.Escalate(ctx, "need $3,400 for the primary slot", big))
	if ack.EscalationID == "" || !ack.TurnPaused {
		t.Fatalf("escalate ack: %s", ack.Raw)
	}
	if ev := expectMessage(t, p.k, 1, "escalate"); ev.Content != "" || len(ev.Terms) != 0 {
		t.Fatalf("the escalation leaked: %s", ev.Raw)
	}
	now := fc.Now()
	tok, err := grants.SignDecision(p.brand.Principal, grants.DecisionClaims{
		EscalationID: ack.EscalationID, Decision: "approve", Audience: "venue", IssuedAt: now, ExpiresAt: now.Add(time.Hour),
		Grant: &grants.Scope{Amount: &grants.AmountLimit{MaxCents: cents(350000)}},
	})
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.Decide(ctx, ack.EscalationID, tok)
	if err != nil || d.Decision != "approve" || d.NegotiationID != p.negID {
		t.Fatalf("decide: %+v %v", d, err)
	}
	if _, err := c.Decide(ctx, ack.EscalationID, tok); !client.IsCode(err, "escalation_closed") {
		t.Fatalf("second decision: %v", err)
	}
	if res := expect(t, p.b, client.TypeEscalationResolved); res.EscalationID != ack.EscalationID || res.Decision != "approve" {
		t.Fatalf("resolved: %s", res.Raw)
	}
	acked(t)(p.b.Propose(ctx, big, 0, ""))
	expectMessage(t, p.k, 2, "propose_terms")
	acked(t)(p.k.Reject(ctx, "too much"))
	expectMessage(t, p.b, 3, "reject")
	acked(t)(p.b.Propose(ctx, client.Terms{AmountCents: 3300_00}, 0, ""))
	expectMessage(t, p.k, 4, "propose_terms")
	acked(t)(p.b.Withdraw(ctx, "on second thought"))
	expectMessage(t, p.k, 5, "withdraw")
	acked(t)(p.k.Leave(ctx, "see you"))
	expectMessage(t, p.b, 6, "close")
	if end := expect(t, p.b, client.TypeNegotiationEnded); end.Status != "walked" || end.By != p.bouncer.ID {
		t.Fatalf("ended: %s", end.Raw)
	}
}

// TestRoomOwnFramesOnReplay: a replay carries the party's own frames; by
// default they are not delivered (an agent must not answer itself), with
// IncludeOwn they are, marked Own.
func TestRoomOwnFramesOnReplay(t *testing.T) {
	t.Parallel()
	c, fc := setup(t)
	ctx := ctx5(t)
	brand := mustAgent(t, c, fc, "Acme", "brand", grants.Scope{})
	bouncer := mustAgent(t, c, fc, "Letters", "bouncer", grants.Scope{})
	negID, err := match(ctx, brand, bouncer)
	if err != nil {
		t.Fatal(err)
	}
	b := dialRoom(t, brand.Client, negID, client.RoomOptions{})
	k := dialRoom(t, bouncer.Client, negID, client.RoomOptions{})
	expect(t, b, client.TypeNegotiationStarted)
	expect(t, k, client.TypeNegotiationStarted)
	acked(t)(b.Message(ctx, "mine"))
	expectMessage(t, k, 1, "message")
	acked(t)(k.Message(ctx, "theirs"))
	expectMessage(t, b, 2, "message")

	plain := dialRoom(t, brand.Client, negID, client.RoomOptions{Since: 0})
	expect(t, plain, client.TypeNegotiationStarted)
	if ev := expectMessage(t, plain, 2, "message"); ev.Own || ev.From != bouncer.ID {
		t.Fatalf("default replay: first delivered %s (own %v), want the bouncer's seq 2", ev.Raw, ev.Own)
	}
	marked := dialRoom(t, brand.Client, negID, client.RoomOptions{Since: 0, IncludeOwn: true, AgentID: brand.ID})
	expect(t, marked, client.TypeNegotiationStarted)
	if ev := expectMessage(t, marked, 1, "message"); !ev.Own || ev.Content != "mine" {
		t.Fatalf("IncludeOwn: seq 1 %s own %v, want the brand's own, marked", ev.Raw, ev.Own)
	}
	if ev := expectMessage(t, marked, 2, "message"); ev.Own {
		t.Fatalf("IncludeOwn: the bouncer's frame is marked own: %s", ev.Raw)
	}
}
