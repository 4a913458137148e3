package wire

import (
	"net/url"
	"slices"
	"strings"
)

// QueryOnly checks the query string of a REST request (raw, as
// url.URL.RawQuery holds it, without the "?") for a route that takes only
// the parameters allowed, each at most once. It is Fields.Only for query
// strings (PROTOCOL.md "REST"): a parameter the route does not take (a
// typo such as ?limt=5) must not pass for an absent one, and a parameter
// given twice (?limit=5&limit=500) must not pass for its first value. It
// returns nil or a CodeInvalidArgument error naming the parameter: a query
// string that does not parse (a bad %-escape, a ';'), then the first
// unknown parameter in sorted order, then the first repeated one. An empty
// value (?limit=) counts as given.
func QueryOnly(raw string, allowed ...string) *Error {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return Errorf(CodeInvalidArgument, "the query string does not parse: %s", trimErr(err))
	}
	names := make([]string, 0, len(q))
	for k := range q {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		if slices.Contains(allowed, k) {
			continue
		}
		if len(allowed) == 0 {
			return Errorf(CodeInvalidArgument, "unknown query parameter %q: this route takes none", k)
		}
		return Errorf(CodeInvalidArgument, "unknown query parameter %q: this route takes only %s", k, strings.Join(allowed, ", "))
	}
	for _, k := range names {
		if len(q[k]) > 1 {
			return Errorf(CodeInvalidArgument, "query parameter %q is given %d times: give it once", k, len(q[k]))
		}
	}
	return nil
}
