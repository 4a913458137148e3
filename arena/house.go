package arena

import (
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/venuehq/venue/client"
	"github.com/venuehq/venue/clock"
	"github.com/venuehq/venue/grants"
	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/wire"
)

// Names of the house agents.
const (
	HouseBouncerName = "House Bouncer"
	HouseBrandName   = "House Brand"
)

// MaxSparsPerBouncer is how many open negotiations the house brand keeps
// with one bouncer at a time; Spar refuses more (ErrBusy).
const MaxSparsPerBouncer = 2

// ErrBusy is Spar's refusal when the bouncer already has
// MaxSparsPerBouncer open negotiations with the house brand.
var ErrBusy = errors.New("arena: the house brand already has open negotiations with this bouncer")

// ErrHouseFull is Spar's refusal when the house plays MaxLive negotiations
// already.
var ErrHouseFull = errors.New("arena: the house plays as many negotiations as it can; try again in a few minutes")

// Caps of the house's own (HouseConfig.MaxPerBrand, MaxLive), so that one
// agent's spam does not take the house out of play for everybody else.
const (
	DefaultMaxPerBrand = 2   // arena negotiations one brand plays with the house bouncer at once
	DefaultMaxLive     = 200 // negotiations the house plays at once, both agents together
)

// HouseConfig is what the house agents need. Seed is a secret every node of
// a venue shares (the venue derives it from its receipt key): the house
// agents' ids, api keys and principal keys are derived from it, so every
// node and every restart plays the same two agents.
type HouseConfig struct {
	BaseURL string // the venue's own URL, http://host:port
	// Dial, when set, opens every connection of the house agents (REST
	// and sockets alike) instead of a TCP dial to BaseURL: the venue gives
	// its in-process server's (internal/inproc), so the house never dials
	// its own node over TCP nor counts against its caps per address.
	Dial     func(ctx context.Context, network, addr string) (net.Conn, error)
	Store    store.Store
	Seed     []byte
	Audience string // grant audience (the venue's aud)
	Clock    clock.Clock
	Log      *slog.Logger
	// MaxPerBrand caps the arena negotiations one brand has open with the
	// house bouncer (default DefaultMaxPerBrand); MaxLive the negotiations
	// the house plays at once (default DefaultMaxLive). Past them the house
	// bouncer declines a request at once, with a reason that starts with
	// the code (rate_limited, unavailable), and Spar says ErrHouseFull.
	MaxPerBrand int
	MaxLive     int
}

// House runs the venue's two sparring partners, a bouncer and a brand,
// through package client against the venue's own sockets, exactly as any
// agent would (in-process when HouseConfig.Dial is set). They take arena negotiations only: the house bouncer
// declines a live request at once; the house brand only ever opens arena
// negotiations (Spar). Each plays the strategy of Decide.
type House struct {
	cfg     HouseConfig
	opts    []client.Option // how the agents' clients connect (HouseConfig.Dial)
	bouncer houseAgent
	brand   houseAgent

	mu      sync.Mutex
	playing map[string]string // negotiation id -> brand id, the house bouncer's
	lobby   *client.Lobby     // the brand's lobby, nil while down
	open    map[string]int    // bouncer id -> open spars
	mine    map[string]string // negotiation id -> bouncer, open spars
	anchor  map[string]int64  // negotiation id -> anchor of a spar not yet playing
	quoted  map[string]quoted // offer id -> a brief the house bouncer quoted on
	ctx     context.Context   // Run's
	wg      sync.WaitGroup    // plays
	ready   chan struct{}     // closed once both lobbies were dialled once
	once    sync.Once
}

type houseAgent struct {
	id, key, name, role string
	priv                ed25519.PrivateKey
}

// derive is HMAC-SHA256(seed, label).
func derive(seed []byte, label string) []byte {
	m := hmac.New(sha256.New, seed)
	m.Write([]byte("venue house agent\x00" + label))
	return m.Sum(nil)
}

func newHouseAgent(seed []byte, role, name string) houseAgent {
	return houseAgent{
		id:   "agt_" + hex.EncodeToString(derive(seed, role+"/id")[:12]),
		key:  "bsk_" + base64.RawURLEncoding.EncodeToString(derive(seed, role+"/key")),
		priv: ed25519.NewKeyFromSeed(derive(seed, role+"/principal")),
		name: name, role: role,
	}
}

// NewHouse returns the house agents of cfg; Run plays them.
func NewHouse(cfg HouseConfig) *House {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.MaxPerBrand <= 0 {
		cfg.MaxPerBrand = DefaultMaxPerBrand
	}
	if cfg.MaxLive <= 0 {
		cfg.MaxLive = DefaultMaxLive
	}
	var opts []client.Option
	if cfg.Dial != nil { // one transport for every client of the house
		opts = append(opts,
			client.WithHTTPClient(&http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: cfg.Dial, MaxIdleConnsPerHost: 4}}),
			client.WithDialer(&websocket.Dialer{NetDialContext: cfg.Dial, HandshakeTimeout: 30 * time.Second}))
	}
	return &House{
		cfg:     cfg,
		opts:    opts,
		bouncer: newHouseAgent(cfg.Seed, negotiation.RoleBouncer, HouseBouncerName),
		brand:   newHouseAgent(cfg.Seed, negotiation.RoleBrand, HouseBrandName),
		open:    map[string]int{}, mine: map[string]string{}, anchor: map[string]int64{}, playing: map[string]string{},
		quoted: map[string]quoted{},
		ready:  make(chan struct{}),
	}
}

// BouncerID and BrandID are the house agents' agent ids.
func (h *House) BouncerID() string { return h.bouncer.id }

// BrandID is the house brand's agent id.
func (h *House) BrandID() string { return h.brand.id }

// Ready is closed once both house agents have their lobby sockets open.
func (h *House) Ready() <-chan struct{} { return h.ready }

// Ensure registers the house agents in the store (marked house, with their
// principal keys) unless they exist.
func (h *House) Ensure(ctx context.Context) error {
	for _, a := range []houseAgent{h.bouncer, h.brand} {
		jwk := grants.PublicJWK(a.priv.Public().(ed25519.PublicKey))
		raw, err := json.Marshal(jwk)
		if err != nil {
			return err
		}
		sum := sha256.Sum256([]byte(a.key))
		rec := store.Agent{
			ID: a.id, Name: a.name, Role: a.role, KeyHash: hex.EncodeToString(sum[:]),
			PrincipalKey: raw, PrincipalThumbprint: grants.Thumbprint(jwk), House: true,
			CreatedAt: h.cfg.Clock.Now().UTC(),
			Profile: store.Profile{Description: "The venue's sparring partner: takes arena negotiations at once " +
				"and plays a simple, documented, deterministic strategy. Never takes part in a live negotiation."},
		}
		if err := h.cfg.Store.CreateAgent(ctx, rec); err != nil && !errors.Is(err, store.ErrConflict) {
			return fmt.Errorf("arena: register %s: %w", a.name, err)
		}
	}
	return nil
}

// Run uploads each house agent's arena-only grant and keeps both lobby
// sockets open (redialling after a drop) until ctx ends; it waits for the
// negotiations it plays before returning.
func (h *House) Run(ctx context.Context) error {
	if err := h.Ensure(ctx); err != nil {
		return err
	}
	h.mu.Lock()
	h.ctx = ctx
	h.mu.Unlock()
	for _, a := range []houseAgent{h.bouncer, h.brand} {
		if err := h.uploadGrant(ctx, a); err != nil {
			return err
		}
	}
	var wg sync.WaitGroup
	readyB, readyK := make(chan struct{}), make(chan struct{})
	wg.Add(3)
	go func() { defer wg.Done(); h.keepLobby(ctx, h.bouncer, readyK) }()
	go func() { defer wg.Done(); h.keepLobby(ctx, h.brand, readyB) }()
	go func() {
		defer wg.Done()
		select {
		case <-readyB:
		case <-ctx.Done():
			return
		}
		select {
		case <-readyK:
			h.once.Do(func() { close(h.ready) })
		case <-ctx.Done():
		}
	}()
	wg.Wait()
	h.wg.Wait()
	return nil
}

func (h *House) client(a houseAgent) (*client.Client, error) {
	c, err := client.New(h.cfg.BaseURL, h.opts...)
	if err != nil {
		return nil, err
	}
	return c.WithKey(a.key), nil
}

// uploadGrant signs, with the agent's principal key, a grant for arena
// negotiations only, without other limits, valid for a year, and uploads
// it. Its jti is derived from the seed and the month, so every node and
// every restart in a month uploads the same grant (a duplicate_jti answer
// means it is there already) instead of piling up new ones.
func (h *House) uploadGrant(ctx context.Context, a houseAgent) error {
	c, err := h.client(a)
	if err != nil {
		return err
	}
	now := h.cfg.Clock.Now().UTC()
	month := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	jti := "house-" + hex.EncodeToString(derive(h.cfg.Seed, a.role+"/grant/"+month.Format("2006-01"))[:16])
	tok, err := grants.SignGrant(a.priv, grants.GrantClaims{
		Subject: a.id, Audience: h.cfg.Audience, IssuedAt: month, ExpiresAt: month.AddDate(1, 0, 0), JTI: jti,
		Scope: grants.Scope{Role: a.role, ArenaOnly: true},
	})
	if err != nil {
		return err
	}
	if _, err := c.UploadGrant(ctx, tok); err != nil && !client.IsCode(err, wire.CodeDuplicateJTI) {
		return fmt.Errorf("arena: grant of %s: %w", a.name, err)
	}
	return nil
}

// keepLobby dials a's lobby and serves it, redialling with backoff.
func (h *House) keepLobby(ctx context.Context, a houseAgent, ready chan struct{}) {
	backoff := 100 * time.Millisecond
	first := true
	for ctx.Err() == nil {
		c, err := h.client(a)
		if err != nil {
			h.cfg.Log.Error("house agent", "agent_id", a.id, "err", err)
			return
		}
		l, err := c.DialLobby(ctx, a.id)
		if err != nil {
			h.cfg.Log.Warn("house agent: lobby dial failed; retrying", "agent_id", a.id, "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 10*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		if a.role == negotiation.RoleBrand {
			h.mu.Lock()
			h.lobby = l
			h.mu.Unlock()
		}
		if first {
			close(ready)
			first = false
		}
		h.serveLobby(ctx, a, c, l)
		if a.role == negotiation.RoleBrand {
			h.mu.Lock()
			h.lobby = nil
			h.mu.Unlock()
		}
		_ = l.Close()
	}
}

func (h *House) serveLobby(ctx context.Context, a houseAgent, c *client.Client, l *client.Lobby) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-l.Done():
			return
		case p, ok := <-l.Pushes():
			if !ok {
				return
			}
			h.onPush(ctx, a, c, l, p)
		}
	}
}

func (h *House) onPush(ctx context.Context, a houseAgent, c *client.Client, l *client.Lobby, p client.Push) {
	log := h.cfg.Log.With("agent_id", a.id, "negotiation_id", p.NegotiationID)
	switch {
	case a.role == negotiation.RoleBouncer && p.Type == "negotiation_requested":
		if !p.Arena {
			if _, err := l.DeclineNegotiation(ctx, p.NegotiationID, "the house bouncer plays arena negotiations only"); err != nil {
				log.Warn("house bouncer: decline", "err", err)
			}
			return
		}
		brand := ""
		if p.Brand != nil {
			brand = p.Brand.AgentID
		}
		if reason := h.take(p.NegotiationID, brand); reason != "" {
			if _, err := l.DeclineNegotiation(ctx, p.NegotiationID, reason); err != nil {
				log.Warn("house bouncer: decline", "err", err)
			}
			return
		}
		if _, err := l.AcceptNegotiation(ctx, p.NegotiationID); err != nil {
			// Another node's house bouncer may have taken it first.
			log.Info("house bouncer: accept refused", "err", err)
			h.release(p.NegotiationID)
			return
		}
		h.play(ctx, a, c, p.NegotiationID, anchorOf(p.Offer))
	case a.role == negotiation.RoleBouncer && p.Type == client.TypeBriefReceived:
		h.quote(ctx, l, p)
	case a.role == negotiation.RoleBouncer && p.Type == client.TypeBriefClosed:
		h.mu.Lock()
		q, ok := h.quoted[p.OfferID]
		delete(h.quoted, p.OfferID)
		h.mu.Unlock()
		if ok && p.Awarded && p.NegotiationID != "" {
			h.take(p.NegotiationID, q.brand) // recorded if within the caps; the award is made, so it plays either way
			h.play(ctx, a, c, p.NegotiationID, q.anchor)
		}
	case a.role == negotiation.RoleBrand && p.Type == "negotiation_accepted":
		h.startSpar(p.NegotiationID)
	case a.role == negotiation.RoleBrand && p.Type == "negotiation_declined":
		h.done(p.NegotiationID)
	}
}

// quoted is a brief the house bouncer quoted on, until it closes.
type quoted struct {
	brand  string
	anchor int64
}

// quote answers a brief_received (PROTOCOL.md "Sealed briefs"): the house
// bouncer quotes its opening on an arena brief, within its own grant, the
// offer's other terms kept; it declines a live one, and one while the
// house is full.
func (h *House) quote(ctx context.Context, l *client.Lobby, p client.Push) {
	log := h.cfg.Log.With("offer_id", p.OfferID)
	brand := ""
	if p.Brand != nil {
		brand = p.Brand.AgentID
	}
	reason := "the house bouncer plays arena negotiations only"
	if p.Arena {
		reason = h.full(brand)
	}
	if reason != "" {
		if err := l.DeclineBrief(ctx, p.OfferID, reason); err != nil {
			log.Warn("house bouncer: decline brief", "err", err)
		}
		return
	}
	anchor := anchorOf(p.Offer)
	open, _ := Limits(negotiation.RoleBouncer, anchor)
	if _, err := l.SubmitQuote(ctx, p.OfferID, WithAmount(offerTerms(p.Offer), open), "the house's opening"); err != nil {
		log.Info("house bouncer: quote refused", "err", err)
		return
	}
	h.mu.Lock()
	h.quoted[p.OfferID] = quoted{brand: brand, anchor: anchor}
	h.mu.Unlock()
}

// full says why the house bouncer would refuse to play with brand now
// ("" when it would play): the caps of take, without taking a place.
func (h *House) full(brand string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.refusalLocked(brand)
}

// take reserves a place for the house bouncer to play negID with brand, or
// says why not: "rate_limited: ..." past MaxPerBrand for that brand,
// "unavailable: ..." past MaxLive.
func (h *House) take(negID, brand string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r := h.refusalLocked(brand); r != "" {
		return r
	}
	h.playing[negID] = brand
	return ""
}

// refusalLocked is take's refusal for brand, "" when it may play.
func (h *House) refusalLocked(brand string) string {
	of := 0
	for _, b := range h.playing {
		if b == brand {
			of++
		}
	}
	switch {
	case of >= h.cfg.MaxPerBrand:
		return fmt.Sprintf("%s: you have %d practice negotiations open with the house bouncer, the most it plays with one brand; finish one first", wire.CodeRateLimited, of)
	case h.liveLocked() >= h.cfg.MaxLive:
		return fmt.Sprintf("%s: the house plays %d negotiations already, the most it plays at once; try again in a few minutes", wire.CodeUnavailable, h.cfg.MaxLive)
	}
	return ""
}

// release frees the house bouncer's place in negID.
func (h *House) release(negID string) {
	h.mu.Lock()
	delete(h.playing, negID)
	h.mu.Unlock()
}

// liveLocked counts the negotiations the house plays or has asked for.
func (h *House) liveLocked() int {
	n := len(h.playing)
	for _, o := range h.open {
		n += o
	}
	return n
}

// Spar has the house brand open an arena negotiation with bouncerID (for a
// bouncer that wants to practise): an arena offer and its request, which
// the bouncer then accepts or declines like any other. anchorCents is the
// amount of the offer's terms (0: DefaultAnchorCents). It returns the
// negotiation id. Errors: ErrBusy; the venue's refusals (*client.Error,
// e.g. invalid_argument when bouncerID is no bouncer); an error when the
// house brand's lobby is not open.
func (h *House) Spar(ctx context.Context, bouncerID string, anchorCents int64) (string, error) {
	if anchorCents <= 0 {
		anchorCents = DefaultAnchorCents
	}
	h.mu.Lock()
	l := h.lobby
	busy := h.open[bouncerID] >= MaxSparsPerBouncer
	full := h.liveLocked() >= h.cfg.MaxLive
	if !busy && !full && l != nil {
		h.open[bouncerID]++
	}
	h.mu.Unlock()
	if busy {
		return "", ErrBusy
	}
	if full {
		return "", ErrHouseFull
	}
	if l == nil {
		return "", errors.New("arena: the house brand is not connected")
	}
	release := func() {
		h.mu.Lock()
		h.open[bouncerID]--
		h.mu.Unlock()
	}
	terms := json.RawMessage(fmt.Sprintf(`{"amount_usd":%d.%02d}`, anchorCents/100, anchorCents%100))
	off, err := l.SubmitOffer(ctx, bouncerID, client.Offer{Title: "Practice with the house brand",
		Brief: "A sparring negotiation in the arena: nothing binds, nothing settles.", Terms: terms}, true)
	if err != nil {
		release()
		return "", err
	}
	created, err := l.CreateNegotiation(ctx, off.OfferID)
	if err != nil {
		release()
		return "", err
	}
	h.mu.Lock()
	h.mine[created.NegotiationID] = bouncerID
	h.anchor[created.NegotiationID] = anchorCents
	h.mu.Unlock()
	// The accept push may have come before the reply (and found nothing
	// to play): the store says whether the room is live already.
	if st, err := h.cfg.Store.Negotiation(ctx, created.NegotiationID); err == nil && st.Status != negotiation.StatusPending {
		if st.Status == negotiation.StatusLive {
			h.startSpar(created.NegotiationID)
		} else {
			h.done(created.NegotiationID)
		}
	}
	return created.NegotiationID, nil
}

// startSpar plays spar negID as the house brand, once.
func (h *House) startSpar(negID string) {
	h.mu.Lock()
	_, ok := h.mine[negID]
	anchor, playing := h.anchor[negID]
	if ok && playing {
		delete(h.anchor, negID) // taken: a second call finds it playing
	}
	ctx := h.ctx
	h.mu.Unlock()
	if !ok || !playing {
		return
	}
	c, err := h.client(h.brand)
	if err != nil {
		h.done(negID)
		return
	}
	h.play(ctx, h.brand, c, negID, anchor)
}

// done releases a spar's slot (its request was declined or it ended).
func (h *House) done(negID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	b, ok := h.mine[negID]
	if !ok {
		return
	}
	delete(h.mine, negID)
	delete(h.anchor, negID)
	h.open[b]--
}

// anchorOf reads terms.amount_usd of an offer (0 when absent or invalid).
func anchorOf(offer json.RawMessage) int64 {
	var o struct {
		Terms json.RawMessage `json:"terms"`
	}
	if json.Unmarshal(offer, &o) != nil || len(o.Terms) == 0 {
		return 0
	}
	t, err := negotiation.ParseTerms(o.Terms)
	if err != nil {
		return 0
	}
	return t.AmountCents
}

// play starts playing negotiation negID as a.
func (h *House) play(ctx context.Context, a houseAgent, c *client.Client, negID string, anchor int64) {
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		p := &player{h: h, a: a, negID: negID, anchor: anchor, log: h.cfg.Log.With("agent_id", a.id, "negotiation_id", negID)}
		if err := p.run(ctx, c); err != nil && ctx.Err() == nil {
			p.log.Warn("house agent: negotiation", "err", err)
		}
		if a.role == negotiation.RoleBrand {
			h.done(negID)
		} else {
			h.release(negID)
		}
	}()
}
