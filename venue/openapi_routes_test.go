package venue

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/venuehq/venue/handshake/rest"
)

// TestOpenAPIRoutes: the paths and methods of openapi.json are exactly the
// routes the server serves (PROTOCOL.md "REST"), so a route added without
// its documentation, or documented and gone, fails. The routes are echo's,
// except under the prefixes the handshake's handler is mounted on
// (rest.Prefixes, every method): there they are the patterns that handler
// registers, read from its source (an http.ServeMux cannot list them).
// /debug/pprof/* (only with --pprof) is the one route left out on purpose.
func TestOpenAPIRoutes(t *testing.T) {
	t.Parallel()
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(OpenAPI(), &doc); err != nil {
		t.Fatal(err)
	}
	var documented []string
	for p, item := range doc.Paths {
		for method := range item {
			if method != "parameters" && method != "summary" && method != "description" {
				documented = append(documented, strings.ToUpper(method)+" "+p)
			}
		}
	}
	mounted := func(path string) bool {
		for _, p := range rest.Prefixes {
			if path == p || path == p+"/*" || strings.HasPrefix(path, p+"/") {
				return true
			}
		}
		return false
	}
	param := regexp.MustCompile(`:([A-Za-z_]+)`)
	var served []string
	srv, err := New(Config{Pprof: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range srv.echo.Routes() {
		if r.Path == "/debug/pprof/*" || mounted(r.Path) {
			continue
		}
		path := param.ReplaceAllString(r.Path, "{$1}")
		if p, ok := strings.CutSuffix(path, "/*"); ok { // echo's wildcard: any depth below
			path = p + "/{path}"
		}
		served = append(served, r.Method+" "+path)
	}
	served = append(served, handshakeRoutes(t)...)
	slices.Sort(documented)
	slices.Sort(served)
	served = slices.Compact(served)
	for _, r := range served {
		if !slices.Contains(documented, r) {
			t.Errorf("%s is served but not in openapi.json", r)
		}
	}
	for _, r := range documented {
		if !slices.Contains(served, r) {
			t.Errorf("%s is in openapi.json but not served", r)
		}
	}
	if len(served) < 40 {
		t.Errorf("only %d routes served: %v", len(served), served)
	}
}

// handshakeRoutes reads the "METHOD /path" patterns the handshake's
// handler registers from the source of package handshake/rest.
func handshakeRoutes(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "handshake", "rest", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	pattern := regexp.MustCompile(`HandleFunc\("([A-Z]+) (/[^"]*)"`)
	var out []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range pattern.FindAllStringSubmatch(string(b), -1) {
			out = append(out, m[1]+" "+m[2])
		}
	}
	if len(out) == 0 {
		t.Fatal("no routes found in handshake/rest")
	}
	return out
}
