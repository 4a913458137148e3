// Package web holds the venue's pages, embedded in the binary and served by
// it (PROTOCOL.md "Pages"): `/` (what the venue is, live counts), `/arena`
// (the arena listing, live from the feed socket) and `/negotiations/{id}`
// (the spectator view of any negotiation, live from the observe socket,
// ending with the receipt verified in the browser with WebCrypto), served
// by Handler; and the owner portal's files (OwnerFile), which package
// handshake/rest serves at /owner. Plain HTML, CSS and JavaScript: no build
// step, nothing loaded from elsewhere, so the pages work offline. The
// spectator pages read public routes only and never see a private frame.
package web
