package pircan_test

// The owner portal in headless Chromium, signed in by LOGIN over IRC (the
// helpers are those of handshake/rest's browser test). Skipped, saying
// why, only when no Chromium is installed (.ci/run installs it).

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/venuehq/venue/internal/browsertest"

	"github.com/venuehq/venue/handshake"
	"github.com/venuehq/venue/internal/irctest"
)

// The shared browser steps (internal/browsertest).
var (
	chromium = browsertest.Chromium
	run      = browsertest.Run
	text     = browsertest.Text
	until    = browsertest.Until
)

// owner-decides over IRC and in the browser: the agent sets the policy and
// cannot accept; its owner opens /owner, sends LOGIN with the code shown
// over IRC, accepts the request with narrowed scopes and days in the page;
// the requester hears of it (NOTIFY) and sees the agreement; LOGOUT ends
// the session.
func TestOwnerDecidesInPortal(t *testing.T) {
	t.Parallel()
	browser := chromium(t)
	n := irctest.Shared(t)
	v := startVenueBridge(t, n)
	id := irctest.RandHex(3)
	cs := agents(t, n, []string{"fay" + id, "gus" + id}, []bool{false, true})
	fay, gus := cs[0], cs[1]
	fay.Ask(v.nick, `PIRCAN/1 HELLO {"name":"Fay"}`, "HELLO")
	gusID := gus.Ask(v.nick, `PIRCAN/1 HELLO {"name":"Gus"}`, "HELLO")["agent_id"].(string)
	joinLobby(t, fay, v.nick, v.lobby)
	if p := gus.Ask(v.nick, `PIRCAN/1 POLICY {"policy":"owner-decides"}`, "POLICY"); p["policy"] != "owner-decides" {
		t.Fatalf("POLICY %v", p)
	}
	c := fay.Ask(v.nick, `PIRCAN/1 CONTACT {"to":"`+gusID+`","purpose":"Joint <b>assessment</b>","scopes":["message","task:assess"],"ttl_days":30}`, "CONTACT")
	rid := c["request_id"].(string)
	askErr(t, gus, v.nick, `PIRCAN/1 ACCEPT {"request_id":"`+rid+`"}`, handshake.CodeNotAuthorized)
	askErr(t, gus, v.nick, `PIRCAN/1 DECLINE {"request_id":"`+rid+`"}`, handshake.CodeNotAuthorized)

	run(t, browser, "the page shows a code",
		chromedp.Navigate(v.base+"/owner"),
		chromedp.WaitVisible("#signin"),
		until(`document.getElementById("code").textContent.length === 9`),
	)
	code := text(t, browser, "#code")
	l, _ := ask(t, gus, v.nick, `PIRCAN/1 LOGIN {"code":"`+code+`","id":"in"}`, "LOGIN")
	if l["signed_in"] != true || l["account"] != strings.ToLower(gus.Nick) || l["re"] != "in" || l["browser"] != nil {
		t.Fatalf("LOGIN %v", l)
	}
	run(t, browser, "signed in, the request is listed",
		chromedp.WaitVisible("#dashboard"),
		chromedp.WaitVisible(`[data-request] .purpose`),
	)
	if purpose, agent := text(t, browser, `[data-request] .purpose`), text(t, browser, fmt.Sprintf(`[data-agent=%q] td div`, gusID)); purpose != "Joint <b>assessment</b>" || agent != "Gus" {
		t.Fatalf("the page shows purpose %q, agent %q", purpose, agent)
	}
	run(t, browser, "accept narrowed",
		chromedp.Click(`[data-request] input[value="task:assess"]`),
		chromedp.SetValue(`[data-request] input[name=ttl_days]`, "3"),
		chromedp.Click(`[data-request] button.accept`),
		chromedp.WaitVisible("#no-pending"),
	)
	expectNotify(t, fay, v.nick, `{"type":"contact_update"}`)
	items, _ := listOf(t, fay, v.nick, `PIRCAN/1 AGREEMENTS`, "AGREEMENT", "AGREEMENTS-END")
	if len(items) != 1 || fmt.Sprint(items[0]["scopes"]) != "[message]" {
		t.Fatalf("AGREEMENTS %v", items)
	}
	exp, err := time.Parse(time.RFC3339, items[0]["expires_at"].(string))
	if err != nil || time.Until(exp) > 3*24*time.Hour || time.Until(exp) < 3*24*time.Hour-time.Hour {
		t.Fatalf("the agreement ends at %v (%v), want in 3 days", items[0]["expires_at"], err)
	}
	if o, _ := ask(t, gus, v.nick, `PIRCAN/1 LOGOUT`, "LOGOUT"); o["sessions_ended"] != 1.0 {
		t.Fatalf("LOGOUT %v", o)
	}
	run(t, browser, "after LOGOUT",
		chromedp.Reload(),
		chromedp.WaitVisible("#signin"),
		until(`document.getElementById("code").textContent.length === 9`),
	)
	if code2 := text(t, browser, "#code"); code2 == code {
		t.Fatalf("the used code %s is shown again", code)
	}
}
