// Package docs embeds the repository's wire documents, so that a program
// can serve them as they are in this checkout: PROTOCOL.md (the venue's
// wire) and DELEGATION.md (grants, scope_block, escalation, receipts).
// `venue mcp` serves both as MCP resources.
package docs

import _ "embed"

// Protocol is PROTOCOL.md.
//
//go:embed PROTOCOL.md
var Protocol string

// Delegation is DELEGATION.md.
//
//go:embed DELEGATION.md
var Delegation string

// Pircan is PIRCAN.md (the IRC bridge and the brokered handshake).
//
//go:embed PIRCAN.md
var Pircan string
