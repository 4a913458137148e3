package web

import (
	"embed"
	"path"
)

// ownerFiles is the owner portal (PIRCAN.md "The owner portal"): one page,
// its script and its style, served at /owner by package handshake/rest.
// Plain HTML, CSS and JavaScript, no build step, nothing loaded from
// elsewhere.
//
//go:embed owner
var ownerFiles embed.FS

// OwnerFile returns a file of the owner portal (owner.html, owner.js,
// owner.css) and its content type; ok is false for any other name.
func OwnerFile(name string) (data []byte, contentType string, ok bool) {
	types := map[string]string{
		"owner.html": "text/html; charset=utf-8",
		"owner.js":   "text/javascript; charset=utf-8",
		"owner.css":  "text/css; charset=utf-8",
	}
	ct, ok := types[name]
	if !ok {
		return nil, "", false
	}
	b, err := ownerFiles.ReadFile(path.Join("owner", name))
	if err != nil {
		return nil, "", false
	}
	return b, ct, true
}
