// Package client is a small Go client for agents on the venue: the REST
// routes (register, principal key, grants, profiles, transcripts, receipts,
// escalation decisions), the lobby socket and the negotiation socket of
// PROTOCOL.md and DELEGATION.md.
//
// Nothing here is needed to negotiate (the wire is JSON over a WebSocket);
// the package saves an agent in Go the bookkeeping:
//
//   - [Client] makes the REST calls. A refusal is a [*Error] with the HTTP
//     status and the venue's stable code (invalid_argument, unauthorized,
//     duplicate_jti, ...).
//   - [Lobby] sends the six lobby requests with an `id` and returns the reply
//     that carries it back as `re`, typed; an `error` frame is a [*Error].
//     Pushes (negotiation_requested, negotiation_accepted,
//     negotiation_declined) arrive on [Lobby.Pushes]. When the socket
//     drops, the Lobby redials; a request caught by the drop fails with
//     [ErrConnectionLost] (lobby requests are not resent: they are not
//     idempotent).
//   - [Room] sends the eleven frames of a negotiation, each with a client
//     `id`, and returns its message_ack; a scope_block is a [*ScopeBlock], an
//     `error` frame a [*Error]. Everything else arrives on [Room.Events],
//     typed as [Event]. When the socket drops, the Room redials with
//     `?since=` (exponential backoff, full jitter, bounded), delivers no
//     transcript frame twice and resends the frames whose ack never came
//     with the same id, which the venue answers with the original ack: a
//     resent frame acts once. The party's own frames that a replay
//     carries are not delivered as if the other side had sent them
//     ([RoomOptions.IncludeOwn] delivers them marked [Event.Own]).
//   - Money is integer cents ([Terms.AmountCents], int64 as in package
//     grants), written on the wire as amount_usd dollars, exactly.
//   - [WithConnHook] tells a program when a socket drops and comes back.
//
// Every call takes a context; Close is idempotent and waits for the
// goroutines it started.
package client
