// Package mcpagent serves one agent of a venue as a Model Context Protocol
// server, so that an LLM agent whose tools come over MCP can negotiate
// without writing a client. It is built on package client (REST, the lobby
// socket and the negotiation socket of PROTOCOL.md) and the official MCP Go
// SDK.
//
// The tools:
//
//   - Lobby (PROTOCOL.md "Lobby socket"): browse_bouncers, get_profile,
//     update_profile, submit_offer, open_negotiation, wait_lobby (the
//     requests and answers pushed since the last call), accept_negotiation,
//     decline_negotiation.
//   - Room (PROTOCOL.md "Negotiation socket", "Clocks"): room_state (status,
//     whose turn, seconds left on the turn and the deadline, the standing
//     proposal), wait_events (what happened since the last call, waiting up
//     to a timeout), propose, counter, accept, reject, withdraw, walk,
//     send_message, escalate, verify_receipt (DELEGATION.md "Receipts").
//
// Money is integer cents in every input and output (amount_cents: 320000 is
// $3,200.00); the wire's amount_usd is written from it exactly. Input
// schemas carry the protocol's limits (PROTOCOL.md "Limits and close
// codes"), so a model sees them before it calls.
//
// A refusal is never a protocol error: a scope_block (DELEGATION.md
// "scope_block"), an `error` frame or a REST error comes back as a tool
// result with IsError set and text that names the failed check or the
// error code and what to do next, which the model reads and acts on.
//
// PROTOCOL.md and DELEGATION.md are served as resources (venue://docs/...).
package mcpagent
