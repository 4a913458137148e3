package rest_test

// The owner portal in a real headless Chromium (Debian's `chromium`,
// driven with chromedp): the page shows a code, LOGIN (simulated here by
// calling Portal.Login, as the IRC bridge will) signs the browser in, the
// owner narrows and accepts an owner-decides request and sets a policy,
// and LOGOUT sends the page back to a fresh code. Skipped, saying why,
// only when no Chromium is installed (.ci/run installs it).

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/venuehq/venue/internal/browsertest"

	"github.com/venuehq/venue/handshake"
	"github.com/venuehq/venue/handshake/memory"
	"github.com/venuehq/venue/handshake/rest"
)

// The shared browser steps (internal/browsertest).
var (
	chromium   = browsertest.Chromium
	run        = browsertest.Run
	text       = browsertest.Text
	until      = browsertest.Until
	screenshot = browsertest.Screenshot
)

func TestOwnerPortalInBrowser(t *testing.T) {
	t.Parallel()
	browser := chromium(t)
	d := dir{"a": {ID: "a", Name: "Alpha"}, "b": {ID: "b", Name: "Bravo <b>"}}
	n := 0
	svc := &handshake.Service{Store: memory.New(), Agents: d, Accounts: handshake.StaticAccounts{"alice": {"b"}},
		NewID: func(p string) string { n++; return fmt.Sprintf("%s_%d", p, n) }}
	h := rest.New(rest.Handler{Service: svc, Auth: d, Now: time.Now, Bridge: true})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	ctx := context.Background()

	// An owner-decides request is waiting for alice.
	if _, err := svc.SetPolicy(ctx, handshake.OwnerActor("alice"), "b", handshake.PolicyOwnerDecides, time.Now()); err != nil {
		t.Fatal(err)
	}
	req, err := svc.Contact(ctx, "a", handshake.ContactInput{To: "b", Purpose: "Share <script>alert(1)</script> data", Scopes: []string{"message", "task:assess"}, TTLDays: 30}, time.Now())
	if err != nil {
		t.Fatal(err)
	}

	run(t, browser, "the page shows a code",
		chromedp.Navigate(srv.URL+"/owner"),
		chromedp.WaitVisible("#signin"),
		until(`document.getElementById("code").textContent.length === 9`),
	)
	code, line := text(t, browser, "#code"), text(t, browser, "#login-line")
	screenshot(t, browser, "owner-code")
	if !strings.Contains(line, `PIRCAN/1 LOGIN {"code":"`+code+`"}`) {
		t.Fatalf("login line %q for code %q", line, code)
	}

	// LOGIN from alice's IRC account, as the bridge calls it.
	res, err := (&handshake.Portal{Service: svc}).Login(ctx, "alice", code, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Browser, "Chrome") {
		t.Errorf("LOGIN names the browser %q", res.Browser)
	}

	run(t, browser, "signed in, the request is listed",
		chromedp.WaitVisible("#dashboard"),
		chromedp.WaitVisible(`[data-request] .purpose`),
	)
	account, purpose, agentName := text(t, browser, "#account"), text(t, browser, `[data-request] .purpose`), text(t, browser, `[data-agent="b"] td div`)
	screenshot(t, browser, "owner-dashboard")
	if account != "alice" || purpose != "Share <script>alert(1)</script> data" || agentName != "Bravo <b>" {
		t.Fatalf("account %q, purpose %q, agent %q", account, purpose, agentName)
	}

	// Narrow: untick task:assess, 3 days; accept.
	run(t, browser, "accept narrowed",
		chromedp.Click(`[data-request] input[value="task:assess"]`),
		chromedp.SetValue(`[data-request] input[name=ttl_days]`, "3"),
		chromedp.Click(`[data-request] button.accept`),
		chromedp.WaitVisible("#no-pending"),
	)
	ags, err := svc.Agreements(ctx, "b", false, time.Now())
	if err != nil || len(ags) != 1 || !slices.Equal(ags[0].Scopes, []string{"message"}) || ags[0].RequestID != req.ID {
		t.Fatalf("agreements %+v %v", ags, err)
	}
	if days := ags[0].ExpiresAt.Sub(ags[0].CreatedAt).Hours() / 24; days != 3 {
		t.Fatalf("agreement for %v days", days)
	}

	// Set the policy to deny.
	run(t, browser, "set policy",
		chromedp.SetValue(`[data-agent="b"] select`, "deny"),
		chromedp.Click(`[data-agent="b"] button.set-policy`),
		until(`document.getElementById("status").textContent.includes("deny")`),
	)
	statusText := text(t, browser, "#status")
	if p, _ := svc.Policy(ctx, "b"); p.Policy != handshake.PolicyDeny {
		t.Fatalf("policy %+v after the page set deny (%q)", p, statusText)
	}

	// LOGOUT ends the session: the open page (it keeps checking every
	// 1.5 s) says so and shows a new code, with no reload.
	if n, err := (&handshake.Portal{Service: svc}).Logout(ctx, "alice", time.Now()); err != nil || n != 1 {
		t.Fatalf("logout %d %v", n, err)
	}
	run(t, browser, "after LOGOUT",
		chromedp.WaitVisible("#signin"),
		until(`document.getElementById("code").textContent.length === 9`),
		until(`document.getElementById("status").textContent.includes("signed out")`),
	)
	if !strings.Contains(text(t, browser, "#status"), "signed out") {
		t.Fatal("the page did not say it was signed out")
	}
	code2 := text(t, browser, "#code")
	if code2 == code {
		t.Fatalf("the used code %s is shown again", code)
	}
}

// TestOwnerPortalWithoutBridge: with no IRC bridge the page says so
// plainly and hands out no code (the API refuses to start a sign-in).
func TestOwnerPortalWithoutBridge(t *testing.T) {
	t.Parallel()
	browser := chromium(t)
	d := dir{"a": {ID: "a", Name: "Alpha"}}
	svc := &handshake.Service{Store: memory.New(), Agents: d, NewID: func(p string) string { return p + "_1" }}
	srv := httptest.NewServer(rest.New(rest.Handler{Service: svc, Auth: d, Now: time.Now}))
	t.Cleanup(srv.Close)
	run(t, browser, "no bridge",
		chromedp.Navigate(srv.URL+"/owner"),
		chromedp.WaitVisible("#nobridge"),
	)
	screenshot(t, browser, "owner-no-bridge")
	if msg := text(t, browser, "#nobridge"); !strings.Contains(msg, "No IRC bridge runs here") || text(t, browser, "#code") != "" {
		t.Fatalf("no bridge: %q, code %q", msg, text(t, browser, "#code"))
	}
	resp, err := http.Post(srv.URL+"/owner/api/start", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || len(resp.Cookies()) != 0 {
		t.Fatalf("start without a bridge: %d, cookies %v", resp.StatusCode, resp.Cookies())
	}
}
