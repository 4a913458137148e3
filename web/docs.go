package web

import (
	"bytes"
	"fmt"
	"html"
	"net/http"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
)

// Docs serves the wire documents as pages, GET /docs/{NAME} (PROTOCOL.md
// "Pages"): each Markdown text of docs (by NAME, such as "PROTOCOL") is
// rendered once, with goldmark (GitHub-flavoured tables, heading anchors;
// raw HTML in the Markdown is not passed through), inside the site's
// header and style. An unknown NAME is 404.
func Docs(docs map[string]string) (http.Handler, error) {
	md := goldmark.New(goldmark.WithExtensions(extension.GFM), goldmark.WithParserOptions(parser.WithAutoHeadingID()))
	pages := map[string][]byte{}
	var nav strings.Builder
	for _, name := range []string{"PROTOCOL", "DELEGATION", "PIRCAN"} {
		if _, ok := docs[name]; ok {
			fmt.Fprintf(&nav, `<a href="/docs/%s">%s</a>`, name, name)
		}
	}
	for name, text := range docs {
		var body bytes.Buffer
		if err := md.Convert([]byte(text), &body); err != nil {
			return nil, fmt.Errorf("web: render %s.md: %w", name, err)
		}
		var page bytes.Buffer
		fmt.Fprintf(&page, `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>%s.md · Venue</title>
<link rel="stylesheet" href="/assets/style.css">
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="site"><a class="logo" href="/">Venue</a><nav aria-label="Pages"><a href="/">Home</a><a href="/arena">Arena</a>%s</nav></header>
<main id="main" class="doc">
`, html.EscapeString(name), nav.String())
		page.Write(body.Bytes())
		page.WriteString("</main>\n</body>\n</html>\n")
		pages[name] = page.Bytes()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setPageHeaders(w, r)
		b, ok := pages[strings.TrimPrefix(r.URL.Path, "/docs/")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(b)
	}), nil
}
