package connect

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"io"
	"log/slog"
	"net"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/venuehq/venue/client"
	"github.com/venuehq/venue/grants"
	"github.com/venuehq/venue/venue"
)

// waitFor is how long a test waits for a line it expects (a safety net
// only: the waits end on the line).
const waitFor = 10 * time.Second

// startVenue runs a real venue (memory store, wall clock unless mut sets
// another) on a loopback port for the life of the test and returns its
// base URL.
func startVenue(t *testing.T, mut ...func(*venue.Config)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	cfg := venue.Config{Addr: ln.Addr().String(), PublicURL: base, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, m := range mut {
		m(&cfg)
	}
	srv, err := venue.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan string, 1), make(chan error, 1)
	go func() { done <- srv.ServeListener(ctx, ln, ready) }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return base
}

// agent registers an agent whose principal grants it scope (one hour).
func agent(t *testing.T, base, name, role string, scope grants.Scope) (*client.Client, string) {
	t.Helper()
	a := agentOf(t, base, name, role, scope)
	return a.c, a.id
}

// principalAgent is an agent with what its principal holds: the principal
// key and the jti of the grant it signed.
type principalAgent struct {
	c        *client.Client
	id       string
	priv     ed25519.PrivateKey
	audience string
	jti      string
}

// agentOf registers an agent whose principal grants it scope (one hour) and
// returns the principal's key and grant with it.
func agentOf(t *testing.T, base, name, role string, scope grants.Scope) principalAgent {
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
	info, err := c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tok, err := grants.SignGrant(priv, grants.GrantClaims{Subject: a.ID, Audience: info.Audience, IssuedAt: now, ExpiresAt: now.Add(time.Hour), Scope: scope})
	if err != nil {
		t.Fatal(err)
	}
	ac := c.WithKey(a.APIKey)
	g, err := ac.UploadGrant(ctx, tok)
	if err != nil {
		t.Fatal(err)
	}
	return principalAgent{c: ac, id: a.ID, priv: priv, audience: info.Audience, jti: g.JTI}
}

// revokeGrant posts the principal's revocation of the agent's grant
// (POST /v1/revocations, DELEGATION.md "Revoking without the agent").
func (a principalAgent) revokeGrant(t *testing.T) {
	t.Helper()
	now := time.Now()
	tok, err := grants.SignRevocation(a.priv, grants.RevocationClaims{Subject: a.id, Audience: a.audience, Kind: grants.RevokeGrant,
		GrantJTI: a.jti, IssuedAt: now, ExpiresAt: now.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.c.Raw(context.Background(), "POST", "/v1/revocations", map[string]string{"token": tok}, false); err != nil {
		t.Fatal(err)
	}
}

// output is what Run writes, readable while it writes, and waited on.
type output struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{}
}

func newOutput() *output { return &output{changed: make(chan struct{}, 1)} }

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	select {
	case o.changed <- struct{}{}:
	default:
	}
	return o.buf.Write(p)
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// waitFor waits until the output matches re and returns the output.
func (o *output) waitFor(t *testing.T, re string) string {
	t.Helper()
	rx := regexp.MustCompile(re)
	timeout := time.After(waitFor)
	for {
		s := o.String()
		if rx.MatchString(s) {
			return s
		}
		select {
		case <-o.changed:
		case <-timeout:
			t.Fatalf("output never matched %q:\n%s", re, s)
		}
	}
}

// session is one Run: its stdin, stdout, stderr and its end.
type session struct {
	in       *io.PipeWriter
	out, err *output
	done     chan error
}

func start(t *testing.T, o Options) *session {
	t.Helper()
	pr, pw := io.Pipe()
	s := &session{in: pw, out: newOutput(), err: newOutput(), done: make(chan error, 1)}
	t.Cleanup(func() { pw.Close() })
	go func() { s.done <- Run(context.Background(), o, pr, s.out, s.err) }()
	return s
}

func (s *session) line(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

func (s *session) end(t *testing.T) error {
	t.Helper()
	select {
	case err := <-s.done:
		return err
	case <-time.After(waitFor):
		t.Fatal("Run did not return")
		return nil
	}
}

// request waits for the bouncer's next request push.
func request(t *testing.T, l *client.Lobby) client.Push {
	t.Helper()
	for {
		select {
		case p := <-l.Pushes():
			if p.Type == "negotiation_requested" {
				return p
			}
		case <-time.After(waitFor):
			t.Fatal("no request")
		}
	}
}

// TestLobbyArenaAndBack: a brand plays from the lobby: arena says which
// mode its offers are in, arena on makes the next offer practice; when
// that negotiation ends (walked) the receipt is verified and it is back
// in the lobby, where arena off makes the next offer live; quit ends Run.
func TestLobbyArenaAndBack(t *testing.T) {
	t.Parallel()
	base := startVenue(t)
	ctx := context.Background()
	brand, _ := agent(t, base, "Acme", "brand", grants.Scope{})
	bouncer, bouncerID := agent(t, base, "Letters", "bouncer", grants.Scope{})
	kl, err := bouncer.DialLobby(ctx, bouncerID)
	if err != nil {
		t.Fatal(err)
	}
	defer kl.Close()
	s := start(t, Options{URL: base, Key: brand.APIKey()})
	s.out.waitFor(t, `lobby +you are Acme \(brand, agt_\w+\); offers are live \(arena on: practice\)\. lobby: browse .* arena \[on\|off\]`)
	s.line(t, "arena")
	s.out.waitFor(t, `arena +offers are live`)
	s.line(t, "arena maybe")
	s.err.waitFor(t, `refused, nothing sent: arena on, arena off`)
	s.line(t, "arena on")
	s.out.waitFor(t, `arena +offers are arena practice \(arena off: live\)`)
	s.line(t, "offer "+bouncerID+" 3000 Practice run")
	if p := request(t, kl); !p.Arena {
		t.Fatalf("after arena on, a live request: %s", p.Raw)
	} else if _, err := kl.AcceptNegotiation(ctx, p.NegotiationID); err != nil {
		t.Fatal(err)
	}
	s.out.waitFor(t, `offered +\S+ to `+bouncerID+`: "Practice run" at \$3,000\.00 \(arena\)`)
	s.out.waitFor(t, `negotiation_started .*  arena  turn: brand \(you\)`)
	s.line(t, "[WALK]")
	s.out.waitFor(t, `receipt +verified: walked`)
	s.out.waitFor(t, `lobby +back in the lobby as Acme; offers are arena practice`)

	s.line(t, "arena off")
	s.out.waitFor(t, `arena +offers are live \(arena on: practice\)`)
	s.line(t, "offer "+bouncerID+" 3100 The real thing")
	if p := request(t, kl); p.Arena {
		t.Fatalf("after arena off, an arena request: %s", p.Raw)
	}
	s.out.waitFor(t, `"The real thing" at \$3,100\.00 \(live\)`)
	s.line(t, "quit")
	if err := s.end(t); err != nil {
		t.Fatalf("Run: %v\n%s", err, s.out.String())
	}
}

// TestRefusalsSaidOnce: a scope_block and an error each come back as one
// line that says what was refused and why, each reason once.
func TestRefusalsSaidOnce(t *testing.T) {
	t.Parallel()
	base := startVenue(t)
	ctx := context.Background()
	brand, brandID := agent(t, base, "Acme", "brand", grants.Scope{Amount: &grants.AmountLimit{MaxCents: ptr(int64(3000_00))}})
	bouncer, bouncerID := agent(t, base, "Letters", "bouncer", grants.Scope{})
	bl, err := brand.DialLobby(ctx, brandID)
	if err != nil {
		t.Fatal(err)
	}
	defer bl.Close()
	kl, err := bouncer.DialLobby(ctx, bouncerID)
	if err != nil {
		t.Fatal(err)
	}
	defer kl.Close()
	off, err := bl.SubmitOffer(ctx, bouncerID, client.Offer{Title: "Spring"}, true)
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
	s := start(t, Options{URL: base, Key: brand.APIKey(), Negotiation: created.NegotiationID})
	s.out.waitFor(t, `negotiation_started`)
	s.line(t, `[TERMS]{"amount_usd":3600}`)
	got := s.out.waitFor(t, `scope_block: [^\n]*\n`)
	line := regexp.MustCompile(`scope_block: [^\n]*`).FindString(got)
	if !regexp.MustCompile(`^scope_block: your propose_terms did not land, nobody saw it: amount_usd 3600\.00 is above the grant's maximum 3000\.00$`).MatchString(line) {
		t.Fatalf("the scope_block line: %q", line)
	}
	for _, w := range strings.Fields(line) {
		if len(w) > 6 && strings.Count(line, w) > 1 && w != "propose_terms" {
			t.Fatalf("%q is said twice in %q", w, line)
		}
	}
	s.line(t, "[REJECT]")
	got = s.out.waitFor(t, `error invalid_state: your reject did not land: [^\n]+\n`)
	if strings.Count(got, "invalid_state") != 1 || strings.Count(got, "scope_block") != 1 {
		t.Fatalf("each refusal once:\n%s", got)
	}
	s.in.Close()
	if err := s.end(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if e := s.err.String(); e != "" {
		t.Fatalf("stderr: %s", e)
	}
}

func ptr[T any](v T) *T { return &v }

// TestLobbySaysWhatAppliesToTheRole: a bouncer's lobby says that requests
// to it are printed as they come and lists a bouncer's commands, nothing
// of offers or the arena (a brand's); a brand's verb typed by a bouncer,
// and a bouncer's by a brand, is refused here and nothing is sent.
func TestLobbySaysWhatAppliesToTheRole(t *testing.T) {
	t.Parallel()
	base := startVenue(t)
	bouncer, _ := agent(t, base, "Letters", "bouncer", grants.Scope{})
	brand, _ := agent(t, base, "Acme", "brand", grants.Scope{})

	k := start(t, Options{URL: base, Key: bouncer.APIKey()})
	got := k.out.waitFor(t, `lobby +you are Letters \(bouncer, agt_\w+\); [^\n]*\n`)
	if !regexp.MustCompile(`lobby +you are Letters \(bouncer, agt_\w+\); requests and briefs to you are printed as they come\. lobby: browse \[TEXT\] · profile AGENT_ID · requests · accept \[NEGOTIATION_ID\] · decline NEGOTIATION_ID \[WHY\] · help · quit\n`).MatchString(got) {
		t.Fatalf("a bouncer's lobby:\n%s", got)
	}
	k.line(t, "arena on")
	k.err.waitFor(t, `refused, nothing sent: arena is for brands; you are a bouncer`)
	k.line(t, "help")
	got = k.out.waitFor(t, `\nlobby: browse[^\n]*\n`)
	if strings.Contains(got, "offer") || strings.Contains(got, "arena") {
		t.Fatalf("a bouncer is told of offers or the arena:\n%s", got)
	}
	k.line(t, "quit")
	if err := k.end(t); err != nil {
		t.Fatalf("Run: %v", err)
	}

	b := start(t, Options{URL: base, Key: brand.APIKey()})
	got = b.out.waitFor(t, `lobby +you are Acme \(brand, agt_\w+\); [^\n]*\n`)
	if !regexp.MustCompile(`lobby +you are Acme \(brand, agt_\w+\); offers are live \(arena on: practice\)\. lobby: browse \[TEXT\] · profile AGENT_ID · offer BOUNCER_ID AMOUNT TITLE · arena \[on\|off\] · help · quit\n`).MatchString(got) {
		t.Fatalf("a brand's lobby:\n%s", got)
	}
	b.line(t, "accept neg_1")
	b.err.waitFor(t, `refused, nothing sent: accept is for bouncers; you are a brand`)
	b.line(t, "quit")
	if err := b.end(t); err != nil {
		t.Fatalf("Run: %v", err)
	}
}
