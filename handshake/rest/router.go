package rest

import (
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/venuehq/venue/internal/httpapi"
	"github.com/venuehq/venue/wire"
)

// routes is the handler's route table: the route files fill it with
// net/http patterns ("POST /v1/contacts/{id}/accept"), and Mount puts
// every route on the venue's one echo router.
type routes struct{ list []route }

type route struct {
	method string
	segs   []string // the path's segments; "{name}" matches any one
	h      http.HandlerFunc
}

// HandleFunc adds the route of pattern, "METHOD /path/{name}".
func (t *routes) HandleFunc(pattern string, h http.HandlerFunc) {
	method, p, _ := strings.Cut(pattern, " ")
	t.list = append(t.list, route{method: method, segs: strings.Split(p, "/"), h: h})
}

// match reports whether rt's path matches the segments of a request path.
func (rt route) match(segs []string) bool {
	if len(segs) != len(rt.segs) {
		return false
	}
	for i, s := range rt.segs {
		if !strings.HasPrefix(s, "{") && s != segs[i] {
			return false
		}
	}
	return true
}

// Mount puts the handler's routes on e, the venue's router: each route at
// its path, and under each of Prefixes (each and everything under it) the
// answer for a path or method no route takes (unknown).
func (h *Handler) Mount(e *echo.Echo) {
	for _, p := range Prefixes {
		e.Any(p, h.unknown)
		e.Any(p+"/*", h.unknown)
	}
	for _, rt := range h.mux.list {
		httpapi.Handle(e, rt.method, strings.Join(rt.segs, "/"), rt.h)
	}
}

// unknown answers a request under Prefixes that no route takes with the
// venue's JSON error body: method_not_allowed (405, with Allow) when
// another method takes the path, not_found (404) otherwise. An unclean
// path (".", "..", "//") that cleans to a route of its method is
// redirected there (307), as net/http's mux does.
func (h *Handler) unknown(c echo.Context) error {
	r, w := c.Request(), c.Response()
	if clean := cleanPath(r.URL.Path); clean != r.URL.Path {
		if h.find(r.Method, clean) {
			u := &url.URL{Path: clean, RawQuery: r.URL.RawQuery}
			http.Redirect(w, r, u.String(), http.StatusTemporaryRedirect)
			return nil
		}
	} else if allow := h.allowed(r.URL.Path); len(allow) > 0 {
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeJSON(w, http.StatusMethodNotAllowed, map[string]any{"error": wire.Errorf(wire.CodeMethodNotAllowed, "no route %s %s", r.Method, r.URL.Path)})
		return nil
	}
	writeJSON(w, http.StatusNotFound, map[string]any{"error": wire.Errorf(wire.CodeNotFound, "no route %s %s", r.Method, r.URL.Path)})
	return nil
}

// find reports whether a route of method takes p (GET takes HEAD too).
func (h *Handler) find(method, p string) bool {
	segs := strings.Split(p, "/")
	for _, rt := range h.mux.list {
		if (rt.method == method || (method == http.MethodHead && rt.method == http.MethodGet)) && rt.match(segs) {
			return true
		}
	}
	return false
}

// allowed is the methods whose routes take p, sorted, HEAD beside GET.
func (h *Handler) allowed(p string) []string {
	segs := strings.Split(p, "/")
	var ms []string
	for _, rt := range h.mux.list {
		if rt.match(segs) && !slices.Contains(ms, rt.method) {
			ms = append(ms, rt.method)
			if rt.method == http.MethodGet && !slices.Contains(ms, http.MethodHead) {
				ms = append(ms, http.MethodHead)
			}
		}
	}
	slices.Sort(ms)
	return ms
}

// cleanPath is p without ".", ".." and repeated slashes, keeping a final
// slash (net/http's rule).
func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	if p[0] != '/' {
		p = "/" + p
	}
	np := path.Clean(p)
	if p[len(p)-1] == '/' && np != "/" {
		np += "/"
	}
	return np
}

// router is the handler's own echo router, for ServeHTTP (a handler used
// on its own, as in tests): the venue's error writer and HEAD as GET, the
// routes mounted.
func (h *Handler) router() *echo.Echo {
	e := httpapi.New(nil, h.Log)
	h.Mount(e)
	return e
}
