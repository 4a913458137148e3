package web_test

// Browser tests: the pages in a real headless Chromium (Debian's
// `chromium`, driven with chromedp) against a real venue on loopback. They
// run in the normal test run and are skipped, saying why, only when no
// Chromium is installed (.ci/run installs it). Screenshots at phone (390 px)
// and desktop widths go to the test's temp dir (and to
// $VENUE_SCREENSHOT_DIR when set, to keep them).

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/venuehq/venue/client"
	"github.com/venuehq/venue/clock"
	"github.com/venuehq/venue/grants"
	"github.com/venuehq/venue/venue"
)

// wait bounds every wait for the page; a safety net, never what is asserted.
const wait = 20 * time.Second

func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no Chromium installed (apt-get install chromium; .ci/run installs it): browser tests skipped")
	return ""
}

// browser starts a fresh headless Chromium with its own profile and
// returns a context for chromedp actions.
func browser(t *testing.T) context.Context {
	t.Helper()
	path := chromiumPath(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancelCtx(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// testVenue is a venue on loopback with the real clock (the page counts
// down against the browser's clock).
type testVenue struct {
	url string
	srv *venue.Server
}

func startVenue(t *testing.T, house bool) *testVenue {
	t.Helper()
	srv, err := venue.New(venue.Config{Addr: "127.0.0.1:0", Clock: clock.Real{}, HouseAgents: house,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan string, 1), make(chan error, 1)
	go func() { done <- srv.ServeListener(ctx, ln, ready) }()
	addr := <-ready
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	if house {
		select {
		case <-srv.House().Ready():
		case <-time.After(wait):
			t.Fatal("house agents not connected")
		}
	}
	return &testVenue{url: "http://" + addr, srv: srv}
}

// agent is a registered agent with a principal key and a grant of scope.
type agent struct {
	id   string
	name string
	c    *client.Client
}

func (v *testVenue) agent(t *testing.T, name, role string, scope grants.Scope) agent {
	t.Helper()
	ctx := context.Background()
	pub, priv, err := grants.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(v.url)
	if err != nil {
		t.Fatal(err)
	}
	jwk := grants.PublicJWK(pub)
	a, err := c.Register(ctx, name, role, &jwk)
	if err != nil {
		t.Fatal(err)
	}
	c = c.WithKey(a.APIKey)
	grant(t, c, priv, a.ID, scope)
	return agent{id: a.ID, name: name, c: c}
}

func grant(t *testing.T, c *client.Client, priv ed25519.PrivateKey, sub string, scope grants.Scope) {
	t.Helper()
	now := time.Now()
	tok, err := grants.SignGrant(priv, grants.GrantClaims{Subject: sub, Audience: "venue", IssuedAt: now, ExpiresAt: now.Add(time.Hour), Scope: scope})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.UploadGrant(context.Background(), tok); err != nil {
		t.Fatal(err)
	}
}

// match has brand ask bouncer and bouncer accept; it returns the id and
// both parties' rooms.
func match(t *testing.T, brand, bouncer agent, arena bool) (string, *client.Room, *client.Room) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	bl, err := brand.c.DialLobby(ctx, brand.id)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { bl.Close() })
	kl, err := bouncer.c.DialLobby(ctx, bouncer.id)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { kl.Close() })
	off, err := bl.SubmitOffer(ctx, bouncer.id, client.Offer{Title: "Spring launch", Brief: "Two sends"}, arena)
	if err != nil {
		t.Fatal(err)
	}
	created, err := bl.CreateNegotiation(ctx, off.OfferID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kl.AcceptNegotiation(ctx, created.NegotiationID); err != nil {
		t.Fatal(err)
	}
	room := func(a agent) *client.Room {
		r, err := a.c.DialRoom(ctx, created.NegotiationID, client.RoomOptions{Since: client.NoReplay})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	}
	return created.NegotiationID, room(brand), room(bouncer)
}

// until polls a JavaScript condition in the page until it is true.
func until(t *testing.T, ctx context.Context, what, js string) {
	t.Helper()
	ok, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingTimeout(wait), chromedp.WithPollingInterval(50*time.Millisecond)))
	if err != nil || !ok {
		body, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
		t.Fatalf("waiting for %s (%s): %v\npage text:\n%s", what, js, err, body)
	}
}

func text(t *testing.T, ctx context.Context, js string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
	if err != nil {
		t.Fatalf("evaluate %s: %v", js, err)
	}
	return s
}

// screenshots saves the page at phone (390 px) and desktop widths.
func screenshots(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dirs := []string{t.TempDir()}
	if d := os.Getenv("VENUE_SCREENSHOT_DIR"); d != "" {
		dirs = append(dirs, d)
	}
	for _, size := range []struct {
		label string
		w, h  int64
	}{{"phone", 390, 844}, {"desktop", 1280, 900}} {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(size.w, size.h), chromedp.Sleep(100*time.Millisecond)); err != nil {
			t.Fatalf("viewport: %v", err)
		}
		png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatalf("screenshot: %v", err)
		}
		if len(png) < 1000 {
			t.Fatalf("screenshot %s %s: %d bytes", name, size.label, len(png))
		}
		// Nothing is wider than the phone's screen.
		if size.label == "phone" {
			wide, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth + 1`))
			if err != nil || wide {
				t.Errorf("%s at 390 px scrolls sideways (%v)", name, err)
			}
		}
		for _, d := range dirs {
			p := filepath.Join(d, fmt.Sprintf("%s-%s.png", name, size.label))
			if err := os.WriteFile(p, png, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("screenshot %s", p)
		}
	}
}

// TestBrowserArenaPractice: a brand practises against the house bouncer
// while /arena shows the negotiation appear and end, without a reload.
func TestBrowserArenaPractice(t *testing.T) {
	v := startVenue(t, true)
	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(v.url+"/arena")); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the feed socket", `document.getElementById("conn").textContent.startsWith("Live")`)
	until(t, ctx, "the empty list", `!document.getElementById("empty").hidden`)
	brand := v.agent(t, "Practising Brand", "brand", grants.Scope{})
	house := v.srv.House()
	cctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	bl, err := brand.c.DialLobby(cctx, brand.id)
	if err != nil {
		t.Fatal(err)
	}
	defer bl.Close()
	// The client finds the house bouncer online, marked house.
	found, err := bl.BrowseBouncers(cctx, client.BrowseQuery{Online: true})
	if err != nil || len(found.Items) != 1 || !found.Items[0].House || !found.Items[0].Online || found.Items[0].AgentID != house.BouncerID() ||
		found.Items[0].LastSeenAt == "" {
		t.Fatalf("online bouncers: %+v %v", found, err)
	}
	off, err := bl.SubmitOffer(cctx, house.BouncerID(), client.Offer{Title: "Practice round", Terms: map[string]any{"amount_usd": 3200}}, true)
	if err != nil {
		t.Fatal(err)
	}
	created, err := bl.CreateNegotiation(cctx, off.OfferID)
	if err != nil {
		t.Fatal(err)
	}
	row := `document.getElementById("row-` + created.NegotiationID + `")`
	until(t, ctx, "the row of the new negotiation", row+` !== null && `+row+`.dataset.status === "live"`)
	if got := text(t, ctx, row+`.innerText`); !strings.Contains(got, "Practising Brand") || !strings.Contains(got, "House Bouncer") {
		t.Fatalf("row %q", got)
	}
	r, err := brand.c.DialRoom(cctx, created.NegotiationID, client.RoomOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Propose(cctx, map[string]any{"amount_usd": 5000}, 0, "Five thousand."); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the deal in the row", row+`.dataset.status === "deal" && `+row+`.innerText.includes("$5,000.00")`)
	screenshots(t, ctx, "arena")
	// The home page counts it.
	if err := chromedp.Do(ctx, chromedp.Navigate(v.url+"/")); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the counts on /", `document.getElementById("count-ended").textContent === "1" && document.getElementById("count-deals").textContent === "1" && document.getElementById("count-live").textContent === "0"`)
	screenshots(t, ctx, "home")
	if err := chromedp.Do(ctx, chromedp.Navigate(v.url+"/arena")); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the list again", row+` !== null`)
	// Keyboard: the row's link is reachable with Tab from the top.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 900)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.activeElement.blur(), true`)); err != nil {
		t.Fatal(err)
	}
	want := "/negotiations/" + created.NegotiationID
	for i := 0; ; i++ {
		if i == 30 {
			t.Fatalf("30 Tabs never reached the row's link %s", want)
		}
		if err := chromedp.Do(ctx, chromedp.KeyEvent("\t")); err != nil {
			t.Fatal(err)
		}
		if text(t, ctx, `String(document.activeElement.getAttribute("href"))`) == want {
			break
		}
	}
}

// TestBrowserSpectator: the spectator page of a live negotiation shows the
// proposal and the counter arrive, the turn switch and the clocks move;
// a cut socket catches up without gaps or duplicates; a scope_block and an
// escalation's content never reach the page, the pause does; at the end
// the receipt is verified in the browser.
func TestBrowserSpectator(t *testing.T) {
	v := startVenue(t, false)
	brand := v.agent(t, "Acme Brand", "brand", grants.Scope{Amount: &grants.AmountLimit{MaxCents: ptr[int64](432100)}})
	bouncer := v.agent(t, "Weekly Letter", "bouncer", grants.Scope{})
	negID, b, k := match(t, brand, bouncer, false)
	ctx := browser(t)
	// The page reaches the venue through a TCP proxy the test can cut.
	px := newProxy(t, strings.TrimPrefix(v.url, "http://"))
	if err := chromedp.Do(ctx, chromedp.Navigate("http://"+px.addr()+"/negotiations/"+negID)); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the observe socket", `window.venueSpectator && venueSpectator.connected() && document.getElementById("status").textContent === "live"`)
	cctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()

	if _, err := b.Propose(cctx, map[string]any{"amount_usd": 3200, "sends": 2}, 2*time.Minute, "Two sends for $3,200."); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the proposal", `document.querySelector('#transcript li[data-seq="1"]') !== null && document.getElementById("standing-body").innerText.includes("$3,200.00")`)
	until(t, ctx, "the bouncer on turn", `document.getElementById("turn-who").textContent.startsWith("Weekly Letter") && document.getElementById("party-bouncer").classList.contains("on-turn")`)
	first := text(t, ctx, `document.getElementById("turn-left").textContent`)
	if !strings.HasPrefix(first, "0:") && !strings.HasPrefix(first, "1:") {
		t.Fatalf("turn clock %q", first)
	}
	until(t, ctx, "the turn clock to move", `document.getElementById("turn-left").textContent !== `+jsString(first))
	until(t, ctx, "the deadline and expiry clocks", `/^\d+:\d\d$/.test(document.getElementById("deadline-left").textContent) && /^\d+:\d\d$/.test(document.getElementById("standing-left").textContent)`)

	if _, err := k.Counter(cctx, map[string]any{"amount_usd": 3500, "sends": 2, "flight": map[string]any{"start": "2026-06-01", "end": "2026-06-30"},
		"usage_rights_days": 90, "exclusivity": map[string]any{"categories": []string{"fintech"}, "days": 30}}, 0, "I can do $3,500."); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the counter and the turn back to the brand", `document.querySelector('#transcript li[data-seq="2"]') !== null && document.getElementById("turn-who").textContent.startsWith("Acme Brand") && document.getElementById("standing-body").innerText.includes("$3,500.00")`)
	// The terms beyond the amount, as labelled fields.
	for _, want := range []string{"Sends: 2", "Flight: 2026-06-01 to 2026-06-30", "Usage rights: 90 days", "Exclusivity: fintech for 30 days"} {
		until(t, ctx, want, `document.getElementById("standing-body").innerText.includes(`+jsString(want)+`)`)
	}

	// Over the grant: a scope_block to the brand alone.
	_, err := b.Counter(cctx, map[string]any{"amount_usd": 9876}, 0, "SECRET-SCOPE-ATTEMPT")
	var sb *client.ScopeBlock
	if !asScopeBlock(err, &sb) || !sb.Failed("amount_usd") {
		t.Fatalf("over the grant: %v", err)
	}

	// Cut the network under the page and keep it down while three frames
	// land: the page's socket drops (no close frame) and its reconnects fail.
	px.cut()
	until(t, ctx, "the socket down", `!venueSpectator.connected() && document.getElementById("conn").textContent.startsWith("Connection lost")`)
	// Text that JSON escapes differently in Go and JavaScript (and markup
	// that must stay text): the chain must still verify in the browser.
	if _, err := b.Message(cctx, "While you were away <b>&amp;</b> \u2014 \U0001F389 \u00e9 \"quoted\" \u2028 <script>alert(1)</script>"); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Research(cctx, "Checking last quarter's open rates."); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Escalate(cctx, "PRIVATE-ESCALATION-NOTE: may I go to 4,000?", map[string]any{"amount_usd": 4000}); err != nil {
		t.Fatal(err)
	}
	px.restore()
	until(t, ctx, "the catch-up", `venueSpectator.lastSeq() === 5 && document.querySelectorAll("#transcript li").length === 5`)
	seqs := text(t, ctx, `Array.from(document.querySelectorAll("#transcript li"), (li) => li.dataset.seq).join(",")`)
	if seqs != "1,2,3,4,5" {
		t.Fatalf("transcript seqs after the catch-up: %s", seqs)
	}
	if n := text(t, ctx, `String(document.querySelectorAll("#transcript b, #transcript script").length)`); n != "0" {
		t.Fatalf("message text became markup: %s elements", n)
	}
	until(t, ctx, "the pause shown", `document.querySelector('#transcript li[data-seq="5"] .pause') !== null && document.getElementById("turn-left").textContent === "paused"`)
	screenshots(t, ctx, "spectator-live")

	// The brand takes the counter: a deal, and the receipt verified here.
	if _, err := b.Accept(cctx, client.AcceptOpts{}); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the receipt verified", `document.getElementById("verify-result") !== null`)
	if got := text(t, ctx, `document.getElementById("verify").innerText`); !strings.Contains(got, "Receipt verified in your browser") ||
		!strings.Contains(got, "SHA-256 chain of 7 transcript entries") {
		t.Fatalf("verification: %q", got)
	}
	until(t, ctx, "the reputations after a live deal", `document.getElementById("brand-rep").textContent === "1" && document.getElementById("bouncer-rep").textContent === "1"`)
	html := text(t, ctx, `document.documentElement.outerHTML`)
	// Whole words only: a hash, a token or an id on the page may hold
	// "9876" among its hex or base64 digits by chance (about one run in a
	// hundred failed so).
	for _, secret := range []string{"SECRET-SCOPE-ATTEMPT", "9876", "9,876", "4321", "4,321", "PRIVATE-ESCALATION-NOTE", "4,000", "scope_block", "amount_usd 9876"} {
		if regexp.MustCompile(`\b` + regexp.QuoteMeta(secret) + `\b`).MatchString(html) {
			t.Errorf("the page shows %q, which no spectator may see", secret)
		}
	}
	screenshots(t, ctx, "spectator-ended")
}

// TestBrowserTamperedReceipt: a receipt served with one byte changed is
// shown as not verified, saying what does not match.
func TestBrowserTamperedReceipt(t *testing.T) {
	v := startVenue(t, false)
	brand := v.agent(t, "B", "brand", grants.Scope{})
	bouncer := v.agent(t, "K", "bouncer", grants.Scope{})
	negID, b, _ := match(t, brand, bouncer, true)
	cctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if _, err := b.Message(cctx, "Hello."); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Walk(cctx, "No."); err != nil {
		t.Fatal(err)
	}
	// The same venue behind a handler that changes one byte of the
	// receipt's signature on the receipt route.
	tampered := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/receipt") {
			v.srv.Handler().ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		v.srv.Handler().ServeHTTP(rec, r)
		body := rec.Body.String()
		i := strings.LastIndex(body, ".") + 5 // a character inside the signature
		c := byte('A')
		if body[i] == 'A' {
			c = 'B'
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(rec.Code)
		_, _ = io.WriteString(w, body[:i]+string(c)+body[i+1:])
	}))
	defer tampered.Close()
	ctx := browser(t)
	for _, tc := range []struct {
		url, want string
	}{
		{v.url, "Receipt verified in your browser"},
		{tampered.URL, "Receipt NOT verified"},
	} {
		if err := chromedp.Do(ctx, chromedp.Navigate(tc.url+"/negotiations/"+negID)); err != nil {
			t.Fatal(err)
		}
		until(t, ctx, "the verification", `document.getElementById("verify-result") !== null`)
		got := text(t, ctx, `document.getElementById("verify").innerText`)
		if !strings.Contains(got, tc.want) {
			t.Fatalf("%s: %q, want %q", tc.url, got, tc.want)
		}
		if tc.url == tampered.URL && !strings.Contains(got, "signature does not verify") {
			t.Fatalf("tampered receipt: %q does not say the signature fails", got)
		}
	}
	screenshots(t, ctx, "spectator-tampered")
}

func ptr[T any](v T) *T { return &v }

func jsString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

func asScopeBlock(err error, out **client.ScopeBlock) bool {
	sb, ok := err.(*client.ScopeBlock)
	if ok {
		*out = sb
	}
	return ok
}

// proxy is a TCP proxy to a venue that a test can cut: cut closes every
// connection through it at once and refuses new ones until restore.
type proxy struct {
	t    *testing.T
	ln   net.Listener
	to   string
	mu   sync.Mutex
	down bool
	open map[net.Conn]struct{}
	wg   sync.WaitGroup
}

func newProxy(t *testing.T, to string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{t: t, ln: ln, to: to, open: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(func() { _ = ln.Close(); p.cut(); p.wg.Wait() })
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) serve() {
	defer p.wg.Done()
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		down := p.down
		if !down {
			p.open[in] = struct{}{}
		}
		p.mu.Unlock()
		if down {
			_ = in.Close()
			continue
		}
		out, err := net.Dial("tcp", p.to)
		if err != nil {
			_ = in.Close()
			continue
		}
		p.mu.Lock()
		p.open[out] = struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go func() { defer p.wg.Done(); _, _ = io.Copy(out, in); _ = out.Close() }()
		go func() { defer p.wg.Done(); _, _ = io.Copy(in, out); _ = in.Close() }()
	}
}

func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for c := range p.open {
		_ = c.Close()
		delete(p.open, c)
	}
}

func (p *proxy) restore() {
	p.mu.Lock()
	p.down = false
	p.mu.Unlock()
}
