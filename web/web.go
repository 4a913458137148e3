package web

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

//go:embed assets
var assets embed.FS

// pages maps the routes to their HTML file in assets/.
var pages = map[string]string{
	"/":      "index.html",
	"/arena": "arena.html",
}

// Handler serves the pages and their assets:
//
//	GET /                    index.html
//	GET /arena               arena.html
//	GET /negotiations/{id}   negotiation.html (the page reads the id from its URL)
//	GET /agents/{id}         agent.html (likewise)
//	GET /assets/{file}       CSS and JavaScript
//
// Every answer carries a Content-Security-Policy that allows this origin
// only (scripts, styles, fetches and sockets), so nothing from elsewhere
// can load.
func Handler() http.Handler {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embed directive guarantees assets/
	}
	files := http.FileServer(http.FS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setPageHeaders(w, r)
		h := w.Header()
		p := r.URL.Path
		name, ok := pages[p]
		switch {
		case ok:
		case oneSegment(p, "/negotiations/"):
			name = "negotiation.html"
		case oneSegment(p, "/agents/"):
			name = "agent.html"
		case strings.HasPrefix(p, "/assets/") && !strings.HasSuffix(p, ".html") && !strings.HasSuffix(p, "/"):
			r2 := r.Clone(r.Context())
			r2.URL.Path = path.Clean("/" + strings.TrimPrefix(p, "/assets/"))
			if r2.URL.Path == "/" {
				http.NotFound(w, r)
				return
			}
			files.ServeHTTP(w, r2)
			return
		default:
			http.NotFound(w, r)
			return
		}
		b, err := fs.ReadFile(sub, name)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		h.Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(b)
	})
}

// oneSegment says whether p is prefix followed by one non-empty path
// segment.
func oneSegment(p, prefix string) bool {
	rest, ok := strings.CutPrefix(p, prefix)
	return ok && rest != "" && !strings.Contains(rest, "/")
}

// setPageHeaders sets the headers of every page and asset: a
// Content-Security-Policy that allows this origin only (scripts, styles,
// fetches and sockets), no sniffing, no referrer, revalidate.
func setPageHeaders(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
		"connect-src 'self' ws://"+r.Host+" wss://"+r.Host+"; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-cache")
}
