package bench

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/venuehq/venue/grants"
)

// RunVenue sets up cfg.Negotiations live arena negotiations on the venue at
// cfg.URL (registration, principal keys, a grant for the brand, the lobby
// dance), opens both party sockets of each plus the observers, measures the
// server's heap per idle socket, then drives the load. The venue must allow
// the registration and frame rates the run needs (venue serve
// --register-per-minute / --frames-per-second).
func RunVenue(ctx context.Context, cfg Config) (Result, error) {
	cfg.defaults()
	res := Result{Target: "venue", Negotiations: cfg.Negotiations}
	n := cfg.Negotiations
	pairs := make([]*pair, n)
	negIDs := make([]string, n)
	audience, err := venueAudience(ctx, cfg.URL)
	if err != nil {
		return res, err
	}
	bar := newBar(cfg.Progress, n, "setting up negotiations")
	var setUp atomic.Int64
	err = parallel(ctx, n, cfg.Setup, func(i int) error {
		id, err := setupNegotiation(ctx, cfg.URL, audience, i)
		negIDs[i] = id.negID
		pairs[i] = &pair{}
		pairs[i].ends[0], pairs[i].ends[1] = nil, nil
		pairs[i].keys = [2]string{id.brandKey, id.bouncerKey}
		if bar != nil {
			_ = bar.Set(int(setUp.Add(1)))
		}
		return err
	})
	if err != nil {
		return res, fmt.Errorf("set up: %w", err)
	}
	heapBefore, err := heapInUse(ctx, cfg)
	if err != nil {
		return res, err
	}
	var (
		delivery, lateness                        samples
		delivered, errs, dropped, expired, opened atomic.Int64
	)
	done := make(chan struct{})
	rd := &reader{delivery: &delivery, lateness: &lateness, delivered: &delivered, errors: &errs, dropped: &dropped, expired: &expired}
	var socks []*websocket.Conn
	var sockMu = make(chan struct{}, 1)
	keep := func(ws *websocket.Conn) {
		sockMu <- struct{}{}
		socks = append(socks, ws)
		<-sockMu
	}
	bar = newBar(cfg.Progress, 2*n+cfg.Observers, "opening sockets")
	err = parallel(ctx, 2*n+cfg.Observers, cfg.Setup, func(i int) error {
		var path string
		var side int
		if i < 2*n {
			p := pairs[i/2]
			side = i % 2
			path = "/v1/negotiations/" + negIDs[i/2] + "/ws?token=" + p.keys[side]
		} else {
			path = "/v1/negotiations/" + negIDs[(i-2*n)%n] + "/ws/observe"
		}
		ws, _, err := dialer.DialContext(ctx, wsURL(cfg.URL, path), nil)
		if err != nil {
			return err
		}
		if _, _, err := ws.ReadMessage(); err != nil { // negotiation_started
			return err
		}
		keep(ws)
		if i < 2*n {
			pairs[i/2].ends[side] = newEndpoint(ws)
		}
		go rd.loop(ws, done, i < 2*n)
		if bar != nil {
			_ = bar.Set(int(opened.Add(1)))
		}
		return nil
	})
	defer func() {
		close(done)
		for _, ws := range socks {
			_ = ws.Close()
		}
	}()
	if err != nil {
		return res, fmt.Errorf("open sockets: %w", err)
	}
	res.Sockets = len(socks)
	time.Sleep(500 * time.Millisecond) // let the server settle before reading its heap
	heapAfter, err := heapInUse(ctx, cfg)
	if err != nil {
		return res, err
	}
	res.HeapPerSocket = (heapAfter - heapBefore) / float64(len(socks))
	// Read right after the collection heapInUse ran, with no other: a
	// forced cycle more (here, or before the latency phases) would change
	// how the runtime paces the first cycle of a latency phase.
	live0, scan0 := liveHeap(ctx, cfg, false)

	if cfg.TTLProbe {
		// The expiry phase, on its own before the latency phases so that
		// neither disturbs the other: every brand opens with a proposal of
		// the shortest ttl, all due within the time it takes to send them;
		// the phase ends when every socket has seen its proposal_expired.
		bar := newBar(cfg.Progress, len(socks), fmt.Sprintf("ttl probe: %d proposals expiring together", n))
		var before reading
		if cfg.Server != nil {
			before = cfg.Server.read(ctx)
		}
		for _, p := range pairs { // the brand opens; the bouncer moves next
			p.ends[0].out <- probeFrame
		}
		deadline := time.Now().Add(probeTTL + 20*time.Second)
		for expired.Load() < int64(len(socks)) && time.Now().Before(deadline) {
			if bar != nil {
				_ = bar.Set(int(expired.Load()))
			}
			time.Sleep(50 * time.Millisecond)
		}
		if cfg.Server != nil {
			res.ExpiryServer = usage(before, cfg.Server.read(ctx), 0)
		}
		res.ExpiryPhase = fmt.Sprintf("own phase before the latency phases: %d proposals of ttl %s, no frame load", n, probeTTL)
	}
	for _, p := range pairs { // alternate from the bouncer (after the brand's probe)
		p.sent.Store(0)
	}
	res.Phase, res.Sweep = phases(ctx, cfg, "venue", pairs, rd)
	if live0 > 0 {
		frames := res.Phase.Delivered
		for _, p := range res.Sweep {
			frames += p.Delivered
		}
		if live, scan := liveHeap(ctx, cfg, true); live > 0 && frames > 0 {
			res.KeptPerFrame, res.KeptScanPerFrame = (live-live0)/float64(frames), (scan-scan0)/float64(frames)
		}
	}
	res.ExpiryLateness = lateness.dist()
	res.Dropped = dropped.Load()
	res.Errors = errs.Load()
	return res, nil
}

// probeTTL is the ttl of the expiry phase's proposals (the shortest a
// proposal may name: PROTOCOL.md "Clocks").
const probeTTL = 10 * time.Second

var probeFrame = []byte(`{"type":"propose_terms","content":"probe","terms":{"amount_usd":100},"ttl_seconds":10}`)

// waitDelivered waits until want frames arrived at the other party or the
// grace period ends (polling a counter; the run is over).
func waitDelivered(got *atomic.Int64, want int64, grace time.Duration) {
	deadline := time.Now().Add(grace)
	for got.Load() < want && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
}

type setupIDs struct{ negID, brandKey, bouncerKey string }

func venueAudience(ctx context.Context, base string) (string, error) {
	var info struct {
		Aud string `json:"aud"`
	}
	if err := call(ctx, "GET", base+"/v1/info", "", nil, &info); err != nil {
		return "", fmt.Errorf("is a venue running at %s? %w", base, err)
	}
	return info.Aud, nil
}

// setupNegotiation registers a brand (with a grant) and a bouncer and runs
// the lobby dance to a live arena negotiation.
func setupNegotiation(ctx context.Context, base, aud string, i int) (setupIDs, error) {
	ag, err := setupAgents(ctx, base, aud, i)
	if err != nil {
		return setupIDs{}, err
	}
	defer ag.close()
	negID, err := ag.negotiate()
	return setupIDs{negID: negID, brandKey: ag.brandKey, bouncerKey: ag.bouncerKey}, err
}

// lobbyPair is a brand (with an unlimited grant) and a bouncer, with their
// lobby sockets open on one node.
type lobbyPair struct {
	brandKey, bouncerID, bouncerKey string
	bl, kl                          *websocket.Conn
	n                               int
}

func (p *lobbyPair) close() {
	_ = p.bl.Close()
	_ = p.kl.Close()
}

// setupAgents registers the pair on base, uploads the brand's grant and
// opens both lobby sockets.
func setupAgents(ctx context.Context, base, aud string, i int) (*lobbyPair, error) {
	pub, priv, err := grants.GenerateKey()
	if err != nil {
		return nil, err
	}
	var brand, bouncer struct {
		AgentID string `json:"agent_id"`
		APIKey  string `json:"api_key"`
	}
	if err := call(ctx, "POST", base+"/v1/register", "", map[string]any{"name": fmt.Sprintf("bench brand %d", i), "role": "brand", "principal_key": grants.PublicJWK(pub)}, &brand); err != nil {
		return nil, err
	}
	if err := call(ctx, "POST", base+"/v1/register", "", map[string]any{"name": fmt.Sprintf("bench bouncer %d", i), "role": "bouncer"}, &bouncer); err != nil {
		return nil, err
	}
	if err := uploadGrant(ctx, base, aud, brand.AgentID, brand.APIKey, priv); err != nil {
		return nil, err
	}
	bl, _, err := dialer.DialContext(ctx, wsURL(base, "/v1/agents/"+brand.AgentID+"/ws?token="+brand.APIKey), nil)
	if err != nil {
		return nil, err
	}
	kl, _, err := dialer.DialContext(ctx, wsURL(base, "/v1/agents/"+bouncer.AgentID+"/ws?token="+bouncer.APIKey), nil)
	if err != nil {
		_ = bl.Close()
		return nil, err
	}
	return &lobbyPair{brandKey: brand.APIKey, bouncerID: bouncer.AgentID, bouncerKey: bouncer.APIKey, bl: bl, kl: kl}, nil
}

// negotiate runs the lobby dance once more: an offer, its negotiation
// request, the bouncer's accept; it returns the live negotiation's id.
func (p *lobbyPair) negotiate() (string, error) {
	p.n++
	n := strconv.Itoa(p.n)
	offer, err := retryBusy(func() (map[string]any, error) {
		return request(p.bl, map[string]any{"type": "submit_offer", "id": "o" + n, "to": p.bouncerID, "arena": true, "offer": map[string]any{"title": "bench"}}, "offer_submitted")
	})
	if err != nil {
		return "", err
	}
	created, err := retryBusy(func() (map[string]any, error) {
		return request(p.bl, map[string]any{"type": "create_negotiation", "id": "c" + n, "offer_id": offer["offer_id"]}, "negotiation_created")
	})
	if err != nil {
		return "", err
	}
	negID, _ := created["negotiation_id"].(string)
	if _, err := request(p.kl, nil, "negotiation_requested"); err != nil {
		return "", err
	}
	if _, err := retryBusy(func() (map[string]any, error) {
		return request(p.kl, map[string]any{"type": "accept_negotiation", "id": "a" + n, "negotiation_id": negID}, "negotiation_accepted")
	}); err != nil {
		return "", err
	}
	return negID, nil
}

// errBusy is in the error of a frame or call the venue answered with
// unavailable (503): nothing changed, the same frame may be sent again.
const errBusy = "unavailable"

// retryBusy runs fn again, up to 10 times, while the venue says it is
// busy.
func retryBusy(fn func() (map[string]any, error)) (map[string]any, error) {
	for i := 0; ; i++ {
		m, err := fn()
		if err == nil || i == 9 || !strings.Contains(err.Error(), errBusy) {
			return m, err
		}
		time.Sleep(time.Duration(200*(i+1)) * time.Millisecond)
	}
}

func uploadGrant(ctx context.Context, base, aud, agentID, key string, priv ed25519.PrivateKey) error {
	now := time.Now()
	tok, err := grants.SignGrant(priv, grants.GrantClaims{Subject: agentID, Audience: aud, IssuedAt: now, ExpiresAt: now.Add(time.Hour)})
	if err != nil {
		return err
	}
	return call(ctx, "POST", base+"/v1/grants", key, map[string]any{"token": tok}, nil)
}

// request sends frame (if any) and reads until a frame of type want.
func request(ws *websocket.Conn, frame map[string]any, want string) (map[string]any, error) {
	if frame != nil {
		if err := ws.WriteJSON(frame); err != nil {
			return nil, err
		}
	}
	_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		var m map[string]any
		if err := ws.ReadJSON(&m); err != nil {
			return nil, fmt.Errorf("waiting for %s: %w", want, err)
		}
		switch m["type"] {
		case want:
			return m, nil
		case "error":
			return nil, fmt.Errorf("waiting for %s: error %v: %v", want, m["code"], m["message"])
		}
	}
}

// call makes a JSON REST call; a non-2xx status is an error with the body.
func call(ctx context.Context, method, url, key string, body, out any) error {
	_, err := retryBusy(func() (map[string]any, error) { return nil, call1(ctx, method, url, key, body, out) })
	return err
}

// call1 is one try of call.
func call1(ctx context.Context, method, url, key string, body, out any) error {
	var rd *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return err
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var raw bytes.Buffer
	_, _ = raw.ReadFrom(resp.Body)
	if resp.StatusCode == http.StatusServiceUnavailable {
		return fmt.Errorf("%s %s: %d %s: %s", method, strings.SplitN(url, "?", 2)[0], resp.StatusCode, errBusy, strings.TrimSpace(raw.String()))
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %d %s", method, strings.SplitN(url, "?", 2)[0], resp.StatusCode, strings.TrimSpace(raw.String()))
	}
	if out != nil {
		return json.Unmarshal(raw.Bytes(), out)
	}
	return nil
}

// RunRelay drives the same load through the bare relay at cfg.URL.
func RunRelay(ctx context.Context, cfg Config) (Result, error) {
	cfg.defaults()
	res := Result{Target: "relay", Negotiations: cfg.Negotiations}
	n := cfg.Negotiations
	pairs := make([]*pair, n)
	for i := range pairs {
		pairs[i] = &pair{}
	}
	heapBefore, err := heapInUse(ctx, cfg)
	if err != nil {
		return res, err
	}
	var (
		delivery, lateness                samples
		delivered, errs, dropped, expired atomic.Int64
	)
	done := make(chan struct{})
	rd := &reader{delivery: &delivery, lateness: &lateness, delivered: &delivered, errors: &errs, dropped: &dropped, expired: &expired}
	socks := make([]*websocket.Conn, 2*n)
	err = parallel(ctx, 2*n, cfg.Setup, func(i int) error {
		side := "a"
		if i%2 == 1 {
			side = "b"
		}
		ws, _, err := dialer.DialContext(ctx, wsURL(cfg.URL, fmt.Sprintf("/relay/%d/%s", i/2, side)), nil)
		if err != nil {
			return err
		}
		socks[i] = ws
		pairs[i/2].ends[i%2] = newEndpoint(ws)
		go rd.loop(ws, done, true)
		return nil
	})
	defer func() {
		close(done)
		for _, ws := range socks {
			if ws != nil {
				_ = ws.Close()
			}
		}
	}()
	if err != nil {
		return res, fmt.Errorf("open relay sockets: %w", err)
	}
	res.Sockets = 2 * n
	time.Sleep(500 * time.Millisecond)
	heapAfter, err := heapInUse(ctx, cfg)
	if err != nil {
		return res, err
	}
	res.HeapPerSocket = (heapAfter - heapBefore) / float64(2*n)
	res.Phase, res.Sweep = phases(ctx, cfg, "relay", pairs, rd)
	res.Dropped = dropped.Load()
	return res, nil
}
