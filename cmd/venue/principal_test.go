package main

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/venuehq/venue/grants"
	"github.com/venuehq/venue/grants/grantflag"
	"github.com/venuehq/venue/receipt"
)

// execute runs cmd with args and stdin, returning what it printed.
func execute(t *testing.T, cmd *cobra.Command, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetIn(strings.NewReader(stdin))
	if args == nil {
		args = []string{} // nil would make cobra read os.Args
	}
	cmd.SetArgs(args)
	cmd.SilenceUsage = true
	cmd.SilenceErrors = true
	err = cmd.Execute()
	return out.String(), errOut.String(), err
}

// principalKey writes a fresh principal key file and returns its path and
// public half.
func principalKey(t *testing.T) (string, ed25519.PublicKey) {
	t.Helper()
	pub, priv, err := grants.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "principal.pem")
	if err := os.WriteFile(path, grants.MarshalPrivateKeyPEM(priv), 0o600); err != nil {
		t.Fatal(err)
	}
	return path, pub
}

func ptr[T any](v T) *T { return &v }

func TestKeygen(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "k.pem")
	stdout, stderr, err := execute(t, keygenCmd(), "", "--out", path)
	if err != nil {
		t.Fatalf("keygen: %v", err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v, want 0600", fi.Mode().Perm())
	}
	pemBytes, _ := os.ReadFile(path)
	priv, err := grants.ParsePrivateKeyPEM(pemBytes)
	if err != nil {
		t.Fatalf("key file: %v", err)
	}
	if !strings.HasPrefix(stdout, `{"kty":"OKP","crv":"Ed25519","x":"`) || strings.Count(stdout, "\n") != 1 {
		t.Errorf("stdout %q, want one line {\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"x\":...}", stdout)
	}
	jwk, pub, err := grants.ParseJWK([]byte(stdout))
	if err != nil {
		t.Fatalf("printed JWK: %v", err)
	}
	if !pub.Equal(priv.Public()) {
		t.Error("printed JWK is not the public half of the key file")
	}
	if want := "thumbprint: " + grants.Thumbprint(jwk) + "\n"; !strings.HasSuffix(stderr, want) {
		t.Errorf("stderr %q, want it to end with %q", stderr, want)
	}
	if strings.Contains(stdout+stderr, string(pemBytes)) {
		t.Error("the private key was printed")
	}

	// No overwrite without --force; the file is untouched.
	if _, _, err := execute(t, keygenCmd(), "", "--out", path); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Errorf("second keygen: err %v, want a refusal naming --force", err)
	}
	if again, _ := os.ReadFile(path); !bytes.Equal(again, pemBytes) {
		t.Error("refused keygen changed the file")
	}

	// --force replaces it with a new key, mode 0600 even over a looser file.
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	stdout2, _, err := execute(t, keygenCmd(), "", "--out", path, "--force")
	if err != nil {
		t.Fatalf("keygen --force: %v", err)
	}
	if stdout2 == stdout {
		t.Error("--force printed the same key")
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("forced key file mode %v, want 0600", fi.Mode().Perm())
	}
	newPEM, _ := os.ReadFile(path)
	newPriv, err := grants.ParsePrivateKeyPEM(newPEM)
	if err != nil {
		t.Fatal(err)
	}
	if _, pub2, _ := grants.ParseJWK([]byte(stdout2)); !pub2.Equal(newPriv.Public()) {
		t.Error("forced keygen printed a JWK that is not the new file's")
	}
	if _, _, err := execute(t, keygenCmd(), ""); err == nil {
		t.Error("keygen without --out succeeded")
	}
}

func TestGrant(t *testing.T) {
	t.Parallel()
	keyFile, pub := principalKey(t)
	tests := []struct {
		name  string
		args  []string
		want  grants.Scope
		claim string // the grant claim as signed
	}{
		{
			name:  "no scope flags restrict nothing",
			claim: `{}`,
		},
		{
			name: "brand",
			args: []string{"--role", "brand", "--max-amount", "3500", "--category", "primary_slot", "--category", "story",
				"--max-sends", "2", "--budget", "10000"},
			want: grants.Scope{Role: "brand", Amount: &grants.AmountLimit{MaxCents: ptr[int64](350000)},
				Categories: []string{"primary_slot", "story"}, MaxSends: ptr(2), BudgetCents: ptr[int64](1000000)},
			claim: `{"role":"brand","amount_usd":{"max":3500},"categories":["primary_slot","story"],"max_sends":2,"budget_usd":10000}`,
		},
		{
			name: "bouncer with cents, counterparties, arena, negotiation",
			args: []string{"--role", "bouncer", "--min-amount", "2000.05", "--max-amount", "3500.10",
				"--counterparty", "agt_a", "--counterparty", "agt_b", "--arena-only", "--negotiation", "neg_9", "--max-sends", "0"},
			want: grants.Scope{Role: "bouncer",
				Amount:         &grants.AmountLimit{MinCents: ptr[int64](200005), MaxCents: ptr[int64](350010)},
				MaxSends:       ptr(0),
				Counterparties: []string{"agt_a", "agt_b"}, ArenaOnly: true, NegotiationID: "neg_9"},
			claim: `{"role":"bouncer","amount_usd":{"min":2000.05,"max":3500.1},"max_sends":0,"counterparties":["agt_a","agt_b"],"arena_only":true,"negotiation_id":"neg_9"}`,
		},
		{
			name: "terms beyond the amount",
			args: []string{"--flight-not-before", "2026-06-01", "--flight-not-after", "2026-06-30", "--max-usage-rights-days", "90",
				"--min-exclusivity-days", "0", "--max-exclusivity-days", "30", "--require", "flight", "--require", "category"},
			want: grants.Scope{Flight: &grants.FlightLimit{NotBefore: "2026-06-01", NotAfter: "2026-06-30"},
				UsageRightsDays: &grants.DaysLimit{Max: ptr(90)}, ExclusivityDays: &grants.DaysLimit{Min: ptr(0), Max: ptr(30)},
				RequiredTerms: []string{"flight", "category"}},
			claim: `{"flight":{"not_before":"2026-06-01","not_after":"2026-06-30"},"usage_rights_days":{"max":90},"exclusivity_days":{"min":0,"max":30},"required_terms":["flight","category"]}`,
		},
		{
			name:  "budget above one deal's maximum",
			args:  []string{"--budget", "20000000"},
			want:  grants.Scope{BudgetCents: ptr[int64](2_000_000_000)},
			claim: `{"budget_usd":20000000}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"--key", keyFile, "--agent", "agt_1"}, tt.args...)
			stdout, stderr, err := execute(t, grantCmd(), "", args...)
			if err != nil {
				t.Fatalf("grant: %v", err)
			}
			token := strings.TrimSuffix(stdout, "\n")
			if strings.ContainsAny(token, "\n ") || token == "" {
				t.Fatalf("stdout %q, want one token line", stdout)
			}
			g, err := grants.Verify(token, pub, "", grants.VerifyOptions{Audience: "venue", Subject: "agt_1", Now: time.Now()})
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if !reflect.DeepEqual(g.Scope, tt.want) {
				got, _ := json.Marshal(g.Scope)
				want, _ := json.Marshal(tt.want)
				t.Errorf("scope %s, want %s", got, want)
			}
			var claims struct{ Grant json.RawMessage }
			if err := grantflag.DecodePayload(token, &claims); err != nil {
				t.Fatal(err)
			}
			if string(claims.Grant) != tt.claim {
				t.Errorf("grant claim %s, want %s", claims.Grant, tt.claim)
			}
			if ttl := g.ExpiresAt.Sub(g.IssuedAt); ttl != 24*time.Hour {
				t.Errorf("exp - iat = %v, want 24h", ttl)
			}
			if !strings.Contains(stderr, g.JTI) {
				t.Errorf("stderr %q does not name the jti %s", stderr, g.JTI)
			}
		})
	}
}

func TestGrantTimesAndAudience(t *testing.T) {
	t.Parallel()
	keyFile, pub := principalKey(t)
	stdout, _, err := execute(t, grantCmd(), "", "--key", keyFile, "--agent", "agt_1", "--aud", "venue.example",
		"--ttl", "2h", "--not-before", "1h")
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(stdout)
	o := grants.VerifyOptions{Audience: "venue.example", Subject: "agt_1", Now: time.Now()}
	if _, err := grants.Verify(token, pub, "", o); err == nil || !strings.Contains(err.Error(), grants.CodeNotYetValid) {
		t.Errorf("Verify now: %v, want %s", err, grants.CodeNotYetValid)
	}
	o.Now = time.Now().Add(90 * time.Minute)
	g, err := grants.Verify(token, pub, "", o)
	if err != nil {
		t.Fatalf("Verify in 90 minutes: %v", err)
	}
	if d := g.ExpiresAt.Sub(g.NotBefore); d != 2*time.Hour {
		t.Errorf("exp - nbf = %v, want the 2h ttl", d)
	}
	o.Audience = "venue"
	if _, err := grants.Verify(token, pub, "", o); err == nil {
		t.Error("a grant for venue.example verified for audience venue")
	}
}

func TestGrantErrors(t *testing.T) {
	t.Parallel()
	keyFile, _ := principalKey(t)
	notPEM := filepath.Join(t.TempDir(), "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"--key", keyFile, "--agent", "agt_1"}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"missing key file", []string{"--key", filepath.Join(t.TempDir(), "nope.pem"), "--agent", "a"}, "read principal key"},
		{"not a key", []string{"--key", notPEM, "--agent", "a"}, "no PEM block"},
		{"no key flag", []string{"--agent", "a"}, "key"},
		{"no agent", []string{"--key", keyFile}, "agent"},
		{"three decimals", append(base, "--max-amount", "3.555"), "--max-amount \"3.555\""},
		{"not a number", append(base, "--min-amount", "$5"), "--min-amount"},
		{"negative", append(base, "--max-amount", "-5"), "negative"},
		{"too large", append(base, "--max-amount", "10000000.01"), "over the maximum"},
		{"budget three decimals", append(base, "--budget", "1.001"), "--budget"},
		{"budget injection", append(base, "--budget", `1,"arena_only":true`), "--budget"},
		{"budget string", append(base, "--budget", `"5"`), "--budget"},
		{"min above max", append(base, "--min-amount", "10", "--max-amount", "5"), "above amount_usd.max"},
		{"bad role", append(base, "--role", "buyer"), "role"},
		{"too many sends", append(base, "--max-sends", "1001"), "max_sends"},
		{"zero ttl", append(base, "--ttl", "0s"), "--ttl"},
		{"bad flight date", append(base, "--flight-not-after", "2026-6-30"), "flight"},
		{"flight backwards", append(base, "--flight-not-before", "2026-07-01", "--flight-not-after", "2026-06-30"), "flight"},
		{"usage rights too long", append(base, "--max-usage-rights-days", "3651"), "usage_rights_days"},
		{"exclusivity min above max", append(base, "--min-exclusivity-days", "9", "--max-exclusivity-days", "3"), "exclusivity_days"},
		{"unknown required term", append(base, "--require", "amount_usd"), "required_terms"},
		{"past not-before", append(base, "--not-before", "-1h"), "--not-before"},
		{"stray argument", append(base, "extra"), "unknown command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			stdout, _, err := execute(t, grantCmd(), "", tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err %v, want it to contain %q", err, tt.want)
			}
			if stdout != "" {
				t.Errorf("a failed grant printed %q", stdout)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	t.Parallel()
	keyFile, pub := principalKey(t)
	verify := func(t *testing.T, stdout string) *grants.Decision {
		t.Helper()
		d, err := grants.VerifyDecision(strings.TrimSpace(stdout), pub, "", grants.VerifyOptions{Audience: "venue", Now: time.Now()})
		if err != nil {
			t.Fatalf("VerifyDecision: %v", err)
		}
		return d
	}

	t.Run("approve", func(t *testing.T) {
		t.Parallel()
		stdout, _, err := execute(t, decideCmd(), "", "--key", keyFile, "--escalation", "neg_1.e1.e12", "approve",
			"--max-amount", "4000", "--category", "primary_slot")
		if err != nil {
			t.Fatal(err)
		}
		d := verify(t, stdout)
		want := grants.Scope{Amount: &grants.AmountLimit{MaxCents: ptr[int64](400000)},
			Categories: []string{"primary_slot"}, NegotiationID: "neg_1.e1"}
		if d.Decision != grants.DecisionApprove || d.EscalationID != "neg_1.e1.e12" || !reflect.DeepEqual(d.Scope, &want) {
			t.Errorf("decision %+v scope %+v, want approve of neg_1.e1.e12 with %+v", d, d.Scope, want)
		}
		if ttl := d.ExpiresAt.Sub(d.IssuedAt); ttl != 10*time.Minute {
			t.Errorf("ttl %v, want 10m", ttl)
		}
		if _, err := d.AsGrant("agt_1", "neg_1.e1"); err != nil {
			t.Errorf("AsGrant: %v", err)
		}
	})
	t.Run("approve without scope flags", func(t *testing.T) {
		t.Parallel()
		stdout, _, err := execute(t, decideCmd(), "", "--key", keyFile, "--escalation", "neg_2.e3", "approve", "--ttl", "1h")
		if err != nil {
			t.Fatal(err)
		}
		d := verify(t, stdout)
		if !reflect.DeepEqual(d.Scope, &grants.Scope{NegotiationID: "neg_2"}) {
			t.Errorf("scope %+v, want only negotiation_id neg_2", d.Scope)
		}
	})
	t.Run("deny", func(t *testing.T) {
		t.Parallel()
		stdout, _, err := execute(t, decideCmd(), "", "deny", "--key", keyFile, "--escalation", "neg_1.e4")
		if err != nil {
			t.Fatal(err)
		}
		if d := verify(t, stdout); d.Decision != grants.DecisionDeny || d.Scope != nil || d.EscalationID != "neg_1.e4" {
			t.Errorf("decision %+v, want a deny of neg_1.e4 without scope", d)
		}
	})

	errs := []struct {
		name string
		args []string
		want string
	}{
		{"deny with scope", []string{"--key", keyFile, "--escalation", "n.e1", "deny", "--max-amount", "5"}, "--max-amount"},
		{"no decision", []string{"--key", keyFile, "--escalation", "n.e1"}, "approve or deny"},
		{"bad decision", []string{"--key", keyFile, "--escalation", "n.e1", "maybe"}, "approve or deny"},
		{"escalation without .e", []string{"--key", keyFile, "--escalation", "neg_1", "approve"}, "<negotiation_id>.e<seq>"},
		{"escalation without seq", []string{"--key", keyFile, "--escalation", "neg_1.e", "approve"}, "<negotiation_id>.e<seq>"},
		{"escalation without negotiation", []string{"--key", keyFile, "--escalation", ".e1", "approve"}, "<negotiation_id>.e<seq>"},
		{"bad amount", []string{"--key", keyFile, "--escalation", "n.e1", "approve", "--max-amount", "1e40"}, "--max-amount"},
		{"missing key", []string{"--key", "/nonexistent/k.pem", "--escalation", "n.e1", "deny"}, "read principal key"},
	}
	for _, tt := range errs {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			stdout, _, err := execute(t, decideCmd(), "", tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err %v, want it to contain %q", err, tt.want)
			}
			if stdout != "" {
				t.Errorf("a failed decide printed %q", stdout)
			}
		})
	}
}

func TestDecidePost(t *testing.T) {
	t.Parallel()
	keyFile, pub := principalKey(t)
	type call struct{ path, auth, token string }
	calls := make(chan call, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct{ Token string }
		if r.Method != http.MethodPost || json.NewDecoder(r.Body).Decode(&body) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		calls <- call{r.URL.EscapedPath(), r.Header.Get("Authorization"), body.Token}
		if strings.Contains(r.URL.Path, "gone") {
			w.WriteHeader(http.StatusConflict)
			_, _ = io.WriteString(w, `{"error":{"code":"invalid_state","message":"escalation already resolved"}}`)
			return
		}
		_, _ = io.WriteString(w, `{"escalation_id":"neg_1.e2","decision":"approve"}`+"\n")
	}))
	t.Cleanup(srv.Close)

	stdout, _, err := execute(t, decideCmd(), "", "--key", keyFile, "--escalation", "neg_1.e2", "approve",
		"--max-amount", "10", "--url", srv.URL+"/", "--post", "--api-key", "bsk_test")
	if err != nil {
		t.Fatalf("decide --post: %v", err)
	}
	c := <-calls
	if c.path != "/v1/escalations/neg_1.e2/decision" || c.auth != "Bearer bsk_test" {
		t.Errorf("posted to %s with auth %q", c.path, c.auth)
	}
	if _, err := grants.VerifyDecision(c.token, pub, "", grants.VerifyOptions{Audience: "venue", Now: time.Now()}); err != nil {
		t.Errorf("posted token: %v", err)
	}
	if stdout != `{"escalation_id":"neg_1.e2","decision":"approve"}`+"\n" {
		t.Errorf("stdout %q, want the response body", stdout)
	}

	_, _, err = execute(t, decideCmd(), "", "--key", keyFile, "--escalation", "gone.e1", "deny", "--url", srv.URL, "--post")
	if err == nil || !strings.Contains(err.Error(), "409") || !strings.Contains(err.Error(), "escalation already resolved") {
		t.Errorf("err %v, want the 409 and its body", err)
	}
	<-calls
}

// signedNegotiation is a finished negotiation as the venue serves it.
type signedNegotiation struct {
	key        receipt.Key
	token      string
	transcript []byte
	head       string
}

func newSignedNegotiation(t *testing.T) signedNegotiation {
	t.Helper()
	key, err := receipt.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	frames := []string{
		`{"type":"negotiation_started","brand":"agt_b","bouncer":"agt_c","at":"2026-11-30T08:00:00.000Z"}`,
		`{"type":"offer","from":"agt_b","terms":{"amount_usd":3200,"category":"primary_slot","sends":2}}`,
		`{"type":"accept","from":"agt_c","offer_hash":"sha256:aa"}`,
	}
	var entries []receipt.Entry
	prev := ""
	for i, f := range frames {
		h, err := receipt.ChainHash(prev, json.RawMessage(f))
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, receipt.Entry{Seq: int64(i + 1), Frame: json.RawMessage(f), Hash: h})
		prev = h
	}
	doc, err := json.Marshal(map[string]any{"negotiation_id": "neg_1", "entries": entries, "last_seq": len(entries), "head_hash": prev})
	if err != nil {
		t.Fatal(err)
	}
	token, err := receipt.Sign(key, receipt.Claims{
		NegotiationID: "neg_1", Brand: "agt_b", Bouncer: "agt_c", Status: receipt.StatusDeal,
		Terms:     json.RawMessage(`{"amount_usd":3200,"category":"primary_slot","sends":2}`),
		OfferHash: "sha256:" + strings.Repeat("ab", 32), StartedAt: "2026-11-30T08:00:00.000Z",
		EndedAt: "2026-11-30T08:05:00.000Z", LastSeq: int64(len(entries)), HeadHash: prev, IssuedAt: time.Now(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return signedNegotiation{key: key, token: token, transcript: doc, head: prev}
}

// serveVenue serves jwks and the transcript of neg_1 as the venue does.
func serveVenue(t *testing.T, jwks, transcript []byte) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/jwks.json", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(jwks) })
	mux.HandleFunc("GET /v1/negotiations/neg_1/transcript", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(transcript) })
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestVerifyReceipt(t *testing.T) {
	t.Parallel()
	n := newSignedNegotiation(t)
	jwks := receipt.JWKS(n.key)
	okURL := serveVenue(t, jwks, n.transcript)
	wantOK := "transcript OK (3 entries, head " + n.head + ")\n"

	t.Run("fetched", func(t *testing.T) {
		t.Parallel()
		stdout, _, err := execute(t, verifyReceiptCmd(), "", n.token, "--url", okURL)
		if err != nil {
			t.Fatalf("verify-receipt: %v", err)
		}
		for _, want := range []string{"receipt OK", "neg_1", "agt_b", "agt_c", "deal", `{"amount_usd":3200,"category":"primary_slot","sends":2}`,
			"sha256:" + strings.Repeat("ab", 32), "2026-11-30T08:05:00.000Z", "last_seq     3", wantOK} {
			if !strings.Contains(stdout, want) {
				t.Errorf("stdout lacks %q:\n%s", want, stdout)
			}
		}
	})
	t.Run("transcript file, receipt on stdin", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "transcript.json")
		if err := os.WriteFile(path, n.transcript, 0o600); err != nil {
			t.Fatal(err)
		}
		jwksFile := filepath.Join(t.TempDir(), "jwks.json")
		if err := os.WriteFile(jwksFile, jwks, 0o600); err != nil {
			t.Fatal(err)
		}
		stdout, _, err := execute(t, verifyReceiptCmd(), `{"receipt":"`+n.token+`"}`, "-", "--transcript", path, "--jwks", jwksFile,
			"--url", "http://127.0.0.1:1") // nothing is fetched
		if err != nil || !strings.Contains(stdout, wantOK) {
			t.Errorf("err %v, stdout %s", err, stdout)
		}
	})
	t.Run("transcript on stdin", func(t *testing.T) {
		t.Parallel()
		stdout, _, err := execute(t, verifyReceiptCmd(), string(n.transcript), n.token, "--transcript", "-", "--url", okURL)
		if err != nil || !strings.Contains(stdout, wantOK) {
			t.Errorf("err %v, stdout %s", err, stdout)
		}
	})

	tampered := bytes.Replace(n.transcript, []byte(`"amount_usd":3200`), []byte(`"amount_usd":3201`), 1)
	if bytes.Equal(tampered, n.transcript) {
		t.Fatal("test transcript has no amount to tamper with")
	}
	other, err := receipt.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	impostor := other
	impostor.KID = n.key.KID // the right kid on the wrong key
	sig := n.token[strings.LastIndex(n.token, ".")+1:]
	flipped := "A"
	if sig[0] == 'A' {
		flipped = "B"
	}
	badSig := n.token[:strings.LastIndex(n.token, ".")+1] + flipped + sig[1:]
	fails := []struct {
		name       string
		jwks       []byte
		transcript []byte
		token      string
		args       []string
		want       string
	}{
		{name: "one byte changed in a frame", transcript: tampered, want: "transcript seq 2"},
		{name: "wrong key", jwks: receipt.JWKS(other), want: "unknown kid"},
		{name: "wrong key under the right kid", jwks: receipt.JWKS(impostor), want: "receipt does not verify"},
		{name: "bad signature", token: badSig, want: "receipt does not verify"},
		{name: "truncated transcript", transcript: []byte(`{"negotiation_id":"neg_1","entries":[]}`), want: "transcript seq 1: missing"},
		{name: "another negotiation's transcript",
			transcript: bytes.Replace(n.transcript, []byte(`"negotiation_id":"neg_1"`), []byte(`"negotiation_id":"neg_2"`), 1), want: "neg_2"},
		{name: "not JSON", transcript: []byte("<html>"), want: "transcript is not"},
		{name: "not a JWT", token: "hello", want: "receipt does not verify"},
		{name: "empty stdin", token: "-", want: "no receipt on stdin"},
		{name: "both on stdin", token: "-", args: []string{"--transcript", "-"}, want: "cannot both"},
	}
	for _, tt := range fails {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			j, tr, tok := jwks, n.transcript, n.token
			if tt.jwks != nil {
				j = tt.jwks
			}
			if tt.transcript != nil {
				tr = tt.transcript
			}
			if tt.token != "" {
				tok = tt.token
			}
			args := append([]string{tok, "--url", serveVenue(t, j, tr)}, tt.args...)
			stdout, _, err := execute(t, verifyReceiptCmd(), "", args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err %v, want it to contain %q", err, tt.want)
			}
			if strings.Contains(stdout, "transcript OK") {
				t.Errorf("stdout says OK:\n%s", stdout)
			}
		})
	}

	t.Run("venue down", func(t *testing.T) {
		t.Parallel()
		srv := httptest.NewServer(http.NotFoundHandler())
		t.Cleanup(srv.Close)
		if _, _, err := execute(t, verifyReceiptCmd(), "", n.token, "--url", srv.URL); err == nil || !strings.Contains(err.Error(), "404") {
			t.Errorf("err %v, want the 404", err)
		}
	})
}
