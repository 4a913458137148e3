package wire

import (
	"strings"
	"testing"
)

// TestQueryOnly: the parameters a route takes pass, each once, in any order
// and empty; an unknown one, a repeated one and a query string that does not
// parse are invalid_argument naming what is wrong.
func TestQueryOnly(t *testing.T) {
	t.Parallel()
	allowed := []string{"status", "limit", "offset", "agent_id"}
	for _, ok := range []string{"", "limit=5", "offset=0&limit=5&status=live&agent_id=agt_1", "limit=", "agent_id=a%20b"} {
		if err := QueryOnly(ok, allowed...); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, tc := range []struct{ raw, want string }{
		{"foo=1", `unknown query parameter "foo": this route takes only status, limit, offset, agent_id`},
		{"limit=5&limt=6", `"limt"`},
		{"zed=1&foo=1", `"foo"`}, // the first in sorted order
		{"Limit=5", `"Limit"`},   // names are matched exactly
		{"limit", ""},            // a name without a value is given, empty
		{"limit=5&limit=500", `query parameter "limit" is given 2 times`},
		{"offset=1&offset=1", `"offset"`},
		{"limit=5;offset=1", "does not parse"},
		{"limit=%zz", "does not parse"},
	} {
		err := QueryOnly(tc.raw, allowed...)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%q: %v", tc.raw, err)
			}
			continue
		}
		if err == nil || err.Code != CodeInvalidArgument || !strings.Contains(err.Message, tc.want) {
			t.Errorf("%q: %v, want invalid_argument with %q", tc.raw, err, tc.want)
		}
	}
	if err := QueryOnly(""); err != nil {
		t.Errorf("no parameters to a route that takes none: %v", err)
	}
	if err := QueryOnly("x=1"); err == nil || !strings.Contains(err.Message, `"x": this route takes none`) {
		t.Errorf("a parameter to a route that takes none: %v", err)
	}
}
