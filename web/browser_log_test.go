package web_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/venuehq/venue/client"
	"github.com/venuehq/venue/grants"
)

// onNewDocument runs js in every page before the page's own scripts.
func onNewDocument(t *testing.T, ctx context.Context, js string) {
	t.Helper()
	err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		return tg.Call(ctx, "Page.addScriptToEvaluateOnNewDocument", map[string]any{"source": js}, nil)
	}))
	if err != nil {
		t.Fatal(err)
	}
}

// noWebCryptoEd25519 makes WebCrypto refuse Ed25519, as a browser without
// it does.
const noWebCryptoEd25519 = `(() => {
  const s = crypto.subtle, imp = s.importKey.bind(s);
  s.importKey = function (fmt, key, alg, ...rest) {
    const name = typeof alg === "string" ? alg : alg && alg.name;
    if (name === "Ed25519") return Promise.reject(new DOMException("Ed25519 is not supported", "NotSupportedError"));
    return imp(fmt, key, alg, ...rest);
  };
})();`

// dealFor makes a deal on v and returns its id.
func dealFor(t *testing.T, v *testVenue) string {
	t.Helper()
	brand := v.agent(t, "Log Brand", "brand", grants.Scope{})
	bouncer := v.agent(t, "Log Newsletter", "bouncer", grants.Scope{})
	id, b, k := match(t, brand, bouncer, false)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if _, err := b.Propose(ctx, map[string]any{"amount_usd": 2400, "sends": 1}, 0, "Two thousand four hundred."); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Accept(ctx, client.AcceptOpts{}); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestBrowserReceiptLog: the spectator page of an ended negotiation shows
// the receipt's place in the public log, checked in the browser (the
// checkpoint's signature with the key pinned on the first visit, and the
// inclusion proof); with WebCrypto's Ed25519 taken away the vendored
// fallback checks the same; a changed log key is shown loudly.
func TestBrowserReceiptLog(t *testing.T) {
	v := startVenue(t, false)
	id := dealFor(t, v)
	page := v.url + "/negotiations/" + id
	okLog := `((document.getElementById("log-result") || {}).textContent || "")`

	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(page)); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the log check", okLog+`.startsWith("✔ In the public receipt log: entry 0 of 1")`)
	if got := text(t, ctx, `document.getElementById("logcheck").innerText`); !strings.Contains(got, "pinned in this browser on this first visit") {
		t.Fatalf("first visit does not say the key was pinned:\n%s", got)
	}
	if text(t, ctx, `String(venue.ed25519Fallback)`) != "false" {
		t.Fatal("the fallback ran in a browser with WebCrypto Ed25519")
	}
	screenshots(t, ctx, "spectator-log")
	// A second visit: the pinned key, no first-visit line.
	if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the log check again", okLog+`.startsWith("✔ In the public receipt log")`)
	if got := text(t, ctx, `document.getElementById("logcheck").innerText`); strings.Contains(got, "first visit") {
		t.Fatalf("second visit:\n%s", got)
	}
	// The pinned key is not the venue's any more: loud, not verified.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`localStorage.setItem("venue.logKey:" + location.host, "127.0.0.1/log+479fc194+AQOhB7/zzhC+HXDdGOdLwJln5NYwm6UNXx3chmQSVTG4"), true`)); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the key-change warning", okLog+`.startsWith("⚠ Log key changed")`)
	if got := text(t, ctx, `document.getElementById("logcheck").innerText`); !strings.Contains(got, "THE VENUE'S LOG KEY CHANGED") {
		t.Fatalf("key change:\n%s", got)
	}
	screenshots(t, ctx, "spectator-log-key-changed")

	// A browser whose WebCrypto has no Ed25519: the vendored verifier runs.
	fb := browser(t)
	onNewDocument(t, fb, noWebCryptoEd25519)
	if err := chromedp.Do(fb, chromedp.Navigate(page)); err != nil {
		t.Fatal(err)
	}
	until(t, fb, "the receipt check with the fallback", `(document.getElementById("verify-result") || {}).textContent === "✔ Receipt verified in your browser"`)
	until(t, fb, "the log check with the fallback", okLog+`.startsWith("✔ In the public receipt log: entry 0 of 1")`)
	if text(t, fb, `String(venue.ed25519Fallback)`) != "true" {
		t.Fatal("the vendored Ed25519 did not run")
	}
	// And it refuses a bad signature.
	text(t, fb, `window.__bad = null; venue.ed25519Verify(new Uint8Array(32).fill(1), new Uint8Array(64), new TextEncoder().encode("x")).then((v) => { window.__bad = String(v); }, (e) => { window.__bad = "refused: " + e.message; }), ""`)
	until(t, fb, "the fallback's answer to a zero signature", `window.__bad !== null`)
	bad := text(t, fb, `window.__bad`)
	if bad == "true" {
		t.Fatal("the fallback accepted a zero signature")
	}
}
