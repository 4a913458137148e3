package venue

import (
	"encoding/json"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// TestOpenAPIRoutes: the paths and methods of openapi.json are exactly the
// routes the server registers (PROTOCOL.md "REST"), so a route added to
// Server.routes without its documentation, or documented and gone, fails.
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
	param := regexp.MustCompile(`:([A-Za-z_]+)`)
	var served []string
	for _, r := range New(Config{Pprof: true}).echo.Routes() {
		if r.Path == "/debug/pprof/*" {
			continue
		}
		served = append(served, r.Method+" "+param.ReplaceAllString(r.Path, "{$1}"))
	}
	sort.Strings(documented)
	sort.Strings(served)
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
	if len(served) < 20 {
		t.Errorf("only %d routes served: %v", len(served), served)
	}
}
