// Package browsertest starts Debian's Chromium headless for the browser
// tests of the pages (driven with chromedp) and gives them the few steps
// they share. A test is skipped, saying why, only when no Chromium is
// installed (.ci/run installs it).
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Wait bounds every wait for the page: a safety net, never what is
// asserted.
const Wait = 20 * time.Second

// Chromium starts a headless Chromium for t (closed when t ends) with a
// fresh profile and a 1024x800 window, and returns its context.
func Chromium(t *testing.T) context.Context {
	t.Helper()
	var path string
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		t.Skip("no Chromium installed (apt-get install chromium; .ci/run installs it): browser test skipped")
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1024, 800),
	)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancelCtx(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx
}

// Run runs steps within Wait; what names them in a failure.
func Run(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, Wait)
	defer cancel()
	if err := chromedp.Do(tctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// Text returns the text of the first element matching sel.
func Text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, Wait)
	defer cancel()
	s, err := chromedp.Run(tctx, chromedp.Text(sel))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

// Until waits (within Wait) for a JavaScript predicate to hold.
func Until(js string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](js, chromedp.WithPollingTimeout(Wait), chromedp.WithPollingInterval(50*time.Millisecond))
}

// Screenshot checks that the page is not wider than its window and saves
// it as name.png in $VENUE_SCREENSHOT_DIR when that is set.
func Screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, Wait)
	defer cancel()
	wide, err := chromedp.Run(tctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth + 1`))
	if err != nil {
		t.Fatal(err)
	}
	if wide {
		t.Errorf("%s: the page is wider than the window", name)
	}
	dir := os.Getenv("VENUE_SCREENSHOT_DIR")
	if dir == "" {
		return
	}
	png, err := chromedp.Run(tctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}
