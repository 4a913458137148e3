package main

import (
	"context"
	"encoding/json"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/venuehq/venue/client"
	"github.com/venuehq/venue/grants"
)

// connectParties registers a brand and a bouncer (grants without limits),
// matches them and returns the negotiation, the brand's api_key and the
// bouncer's room.
func connectParties(t *testing.T, base string) (negID, brandKey string, bouncer *client.Room) {
	t.Helper()
	ctx := context.Background()
	c, err := client.New(base)
	if err != nil {
		t.Fatal(err)
	}
	register := func(name, role string) (*client.Client, string) {
		pub, priv, _ := grants.GenerateKey()
		jwk := grants.PublicJWK(pub)
		a, err := c.Register(ctx, name, role, &jwk)
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		tok, err := grants.SignGrant(priv, grants.GrantClaims{Subject: a.ID, Audience: "venue", IssuedAt: now, ExpiresAt: now.Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		ac := c.WithKey(a.APIKey)
		if _, err := ac.UploadGrant(ctx, tok); err != nil {
			t.Fatal(err)
		}
		return ac, a.ID
	}
	bc, brandID := register("Acme", "brand")
	kc, bouncerID := register("Letters", "bouncer")
	bl, err := bc.DialLobby(ctx, brandID)
	if err != nil {
		t.Fatal(err)
	}
	defer bl.Close()
	kl, err := kc.DialLobby(ctx, bouncerID)
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
	kr, err := kc.DialRoom(ctx, created.NegotiationID, client.RoomOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = kr.Close() })
	return created.NegotiationID, bc.APIKey(), kr
}

// nextFrom returns the next event of r that is not agent_thinking or
// negotiation_started.
func nextFrom(t *testing.T, r *client.Room) client.Event {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case ev, ok := <-r.Events():
			if !ok {
				t.Fatalf("events closed: %v", r.Err())
			}
			if ev.Type == client.TypeAgentThinking || ev.Type == client.TypeNegotiationStarted {
				continue
			}
			return ev
		case <-timeout:
			t.Fatal("no event in time")
		}
	}
}

// connectRun runs `venue connect` on a pipe for stdin; it returns the pipe
// and a channel with the command's result.
func connectRun(t *testing.T, args ...string) (stdin *io.PipeWriter, stdout, stderr *syncBuffer, done chan error) {
	t.Helper()
	pr, pw := io.Pipe()
	stdout, stderr, done = newSyncBuffer(), newSyncBuffer(), make(chan error, 1)
	t.Cleanup(func() { pw.Close() })
	go func() { done <- runCobra(t, connectCmd(), pr, stdout, stderr, args...) }()
	return pw, stdout, stderr, done
}

func writeLine(t *testing.T, w io.Writer, line string) {
	t.Helper()
	if _, err := io.WriteString(w, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

func waitDone(t *testing.T, done chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("connect did not end")
		return nil
	}
}

// TestConnect plays the brand's side through `venue connect` against a
// scripted bouncer on the client package, to a deal.
func TestConnect(t *testing.T) {
	t.Parallel()
	base := startCmdVenue(t)
	negID, brandKey, bouncer := connectParties(t, base)
	in, out, errOut, done := connectRun(t, "--url", base, "--key", brandKey, "--negotiation", negID)

	out.waitFor(t, `negotiation_started\s+negotiation `+negID+`: brand Acme, bouncer Letters  arena  turn: brand \(you\)`)
	writeLine(t, in, "Hello from the connector.")
	out.waitFor(t, `#1 +you +message +"Hello from the connector\."  \(landed\)`)
	if ev := nextFrom(t, bouncer); ev.Seq != 1 || ev.FrameType != "message" || ev.Content != "Hello from the connector." {
		t.Fatalf("bouncer got %s", ev.Raw)
	}

	writeLine(t, in, `[TERMS]{"amount_usd":2000,"category":"primary_slot","sends":2}`)
	out.waitFor(t, `#2 +you +propose_terms +\$2,000\.00 · primary_slot · 2 sends  \[proposal `+negID+`\.p2\]  \(landed\)`)
	ev := nextFrom(t, bouncer)
	if terms, _ := client.ParseTerms(ev.Terms); ev.Seq != 2 || ev.FrameType != "propose_terms" || terms.AmountCents != 2000_00 {
		t.Fatalf("bouncer got %s", ev.Raw)
	}

	// Refused locally: nothing is sent.
	writeLine(t, in, "[TERMS]oops")
	errOut.waitFor(t, `refused, nothing sent: \[TERMS\]: terms are not valid JSON`)
	writeLine(t, in, "[ACCEPT]extra")
	errOut.waitFor(t, `refused, nothing sent: \[ACCEPT\] takes nothing after it`)
	// An unknown bracket is talk.
	writeLine(t, in, "[FOO] just talking")
	out.waitFor(t, `#3 +you +message +"\[FOO\] just talking"`)
	if ev := nextFrom(t, bouncer); ev.Seq != 3 || ev.Content != "[FOO] just talking" {
		t.Fatalf("bouncer got %s (the refused lines were sent?)", ev.Raw)
	}
	// Refused by the venue: printed as it came.
	writeLine(t, in, "[REJECT]")
	out.waitFor(t, `error invalid_state: your reject did not land: `)

	ctx := context.Background()
	if _, err := bouncer.Counter(ctx, client.Terms{AmountCents: 2600_00, Category: "primary_slot", Sends: 2}, 0, "Meet at 2,600?"); err != nil {
		t.Fatal(err)
	}
	out.waitFor(t, `#4 +bouncer +counter_terms +\$2,600\.00 · primary_slot · 2 sends  "Meet at 2,600\?"`)
	writeLine(t, in, "[ACCEPT]")
	out.waitFor(t, `#6 +venue +negotiation_ended DEAL  \$2,600\.00`)
	if err := waitDone(t, done); err != nil {
		t.Fatalf("connect: %v\n%s", err, out.String())
	}
	s := out.String()
	if !regexp.MustCompile(`#5 +you +accept .*\(landed\)\n.*#6 +venue +negotiation_ended`).MatchString(s) || strings.Contains(errOut.String(), "error") {
		t.Fatalf("output:\n%s\nstderr:\n%s", s, errOut.String())
	}
	if ev := nextFrom(t, bouncer); ev.Seq != 5 || ev.FrameType != "accept" {
		t.Fatalf("bouncer got %s", ev.Raw)
	}
	if ev := nextFrom(t, bouncer); ev.Type != "negotiation_ended" || ev.Status != "deal" {
		t.Fatalf("bouncer got %s", ev.Raw)
	}
}

// TestConnectJSON: --json prints the frames as received; EOF on stdin ends
// the command cleanly while the negotiation goes on.
func TestConnectJSON(t *testing.T) {
	t.Parallel()
	base := startCmdVenue(t)
	negID, brandKey, bouncer := connectParties(t, base)
	if _, err := bouncer.Message(context.Background(), "before you came"); err != nil {
		t.Fatal(err)
	}
	in, out, _, done := connectRun(t, "--url", base, "--key", brandKey, "--negotiation", negID, "--json")
	out.waitFor(t, `"content":"before you came"`) // the replay
	writeLine(t, in, "hi")
	writeLine(t, in, "[WALK] now")
	writeLine(t, in, "[REJECT]")
	in.Close()
	if err := waitDone(t, done); err != nil {
		t.Fatalf("connect: %v", err)
	}
	var types []string
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not one JSON object a line: %q", line)
		}
		types = append(types, m["type"].(string))
		if m["type"] == "message_ack" && m["seq"].(float64) != 2 {
			t.Fatalf("ack: %s", line)
		}
		if m["type"] == "error" && m["code"] != "invalid_state" {
			t.Fatalf("error: %s", line)
		}
	}
	if got := strings.Join(types, " "); got != "negotiation_started negotiation_message message_ack error" {
		t.Fatalf("printed %s:\n%s", got, out.String())
	}
	if ev := nextFrom(t, bouncer); ev.Seq != 2 || ev.Content != "hi" {
		t.Fatalf("bouncer got %s", ev.Raw)
	}
}

func TestConnectErrors(t *testing.T) {
	t.Parallel()
	base := startCmdVenue(t)
	negID, _, _ := connectParties(t, base)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--url", base, "--negotiation", negID}, "--key is required"},
		{[]string{"--url", base, "--key", "bsk_nope", "--negotiation", negID}, "unauthorized"},
		{[]string{"--url", "ftp://x", "--key", "k", "--negotiation", negID}, "want http(s)://"},
		{[]string{"--url", base, "--key", "k", "--negotiation", negID, "--since", "-2"}, "--since -2"},
	} {
		err := runCobra(t, connectCmd(), strings.NewReader(""), io.Discard, io.Discard, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
	// A key that is not a party's: refused before anything is read.
	c, _ := client.New(base)
	a, err := c.Register(context.Background(), "Stranger", "brand", nil)
	if err != nil {
		t.Fatal(err)
	}
	err = runCobra(t, connectCmd(), strings.NewReader("hi\n"), io.Discard, io.Discard, "--url", base, "--key", a.APIKey, "--negotiation", negID)
	if err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Fatalf("a stranger: %v", err)
	}
}
