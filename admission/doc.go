// Package admission decides what a venue node takes in before any rule
// runs (PROTOCOL.md "Limits and close codes", SECURITY.md): how many
// connections it holds at all ([Listener]), how many sockets one client
// address, one agent or one negotiation may hold at once ([Counter]), the
// frame budget that the sockets of one agent in one negotiation share
// ([Budgets]), and how a client address is keyed ([AddressKey]: IPv6 by its
// /64, since one host gets a whole /64).
//
// It knows nothing of HTTP routes or the negotiation rules; package venue
// asks it before an upgrade and answers 429 (with Retry-After) when it says
// no.
package admission
