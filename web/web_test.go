package web

import (
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHandler(t *testing.T) {
	t.Parallel()
	h := Handler()
	tests := []struct {
		path, wantType string
		code           int
		contains       string
	}{
		{"/", "text/html", 200, "A negotiation venue"},
		{"/arena", "text/html", 200, `id="rows"`},
		{"/negotiations/neg_0123", "text/html", 200, `id="transcript"`},
		{"/agents/agt_0123", "text/html", 200, `id="rep-chart"`},
		{"/agents/", "", 404, ""},
		{"/agents/a/b", "", 404, ""},
		{"/assets/ed25519.js", "javascript", 200, "crypto.subtle.verify"},
		{"/assets/style.css", "text/css", 200, "--fg"},
		{"/assets/", "", 404, ""},
		{"/assets", "", 404, ""},
		{"/assets/index.html", "", 404, ""},
		{"/assets/../web.go", "", 404, ""},
		{"/negotiations/", "", 404, ""},
		{"/negotiations/a/b", "", 404, ""},
		{"/nope", "", 404, ""},
	}
	for _, tt := range tests {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", tt.path, nil))
		if w.Code != tt.code {
			t.Errorf("%s: %d, want %d", tt.path, w.Code, tt.code)
			continue
		}
		if !strings.Contains(w.Header().Get("Content-Security-Policy"), "default-src 'none'") {
			t.Errorf("%s: CSP %q", tt.path, w.Header().Get("Content-Security-Policy"))
		}
		if tt.code != 200 {
			continue
		}
		if !strings.Contains(w.Header().Get("Content-Type"), tt.wantType) || !strings.Contains(w.Body.String(), tt.contains) {
			t.Errorf("%s: %s, body without %q", tt.path, w.Header().Get("Content-Type"), tt.contains)
		}
	}
}

// TestNoExternalAssets: the pages load nothing from elsewhere, so they work
// offline.
func TestNoExternalAssets(t *testing.T) {
	t.Parallel()
	entries, err := assets.ReadDir("assets")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() { // vendor/: a library file as published, checked below
			continue
		}
		b, err := assets.ReadFile("assets/" + e.Name())
		if err != nil {
			t.Fatal(err)
		}
		// The SVG namespace is a name, not something loaded.
		text := strings.ReplaceAll(string(b), `"http://www.w3.org/2000/svg"`, "")
		for _, bad := range []string{"http://", "https://", "//cdn", "@import", "fonts.g"} {
			if strings.Contains(text, bad) {
				t.Errorf("%s refers to %q", e.Name(), bad)
			}
		}
	}
}

// TestVendoredImportsNothing: the vendored library loads nothing itself
// (its URLs are in comments only).
func TestVendoredImportsNothing(t *testing.T) {
	t.Parallel()
	b, err := assets.ReadFile("assets/vendor/noble-ed25519.js")
	if err != nil {
		t.Fatal(err)
	}
	// After the leading comments (the license line and a usage example).
	_, code, _ := strings.Cut(string(b), "\n */\n")
	for _, line := range strings.Split(code, "\n") {
		l := strings.TrimSpace(line)
		if strings.HasPrefix(l, "import ") || strings.Contains(l, "import(") || strings.Contains(l, "fetch(") {
			t.Errorf("noble-ed25519.js loads something: %q", l)
		}
	}
}
