// Package pircan is the PIRCAN bridge of PIRCAN.md: a service agent that
// connects to an IRC network as a client (github.com/ergochat/irc-go's
// ircevent), identifies its own NickServ account, joins the lobby channel
// and answers `PIRCAN/1 <VERB> [<json>]` PRIVMSGs with NOTICEs.
//
// The agents it registers (HELLO) are rows of the venue's agent directory
// (store.Store through the Directory interface), so IRC agents and venue
// agents are found by the same FIND. Its own state (channels, members,
// invitations, rate-limit windows) is behind State, in memory or in
// Postgres (pircan/pgstate). The line codec is the pure package
// pircan/line.
//
// Files: bridge.go (connection, reconnect, status), handler.go and
// verbs.go (one request in, reply lines out), limits.go (the rate limits),
// pacer.go (the fair, paced output queue), directory.go, state.go.
package pircan
