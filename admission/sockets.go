package admission

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// Caps are the connection caps of one node (PROTOCOL.md "Limits and close
// codes"). Zero fields take the defaults below; a negative field means no
// cap (load tests).
type Caps struct {
	Connections             int // open connections, REST and sockets, at accept (503 over it)
	SocketsPerAddress       int // WebSockets per client address (IPv6: per /64)
	LobbyPerAgent           int // lobby sockets per agent
	PartyPerNegotiation     int // party sockets per agent per negotiation
	ObserversPerNegotiation int // observer sockets per negotiation
}

// Default caps.
const (
	DefaultConnections             = 10000
	DefaultSocketsPerAddress       = 128
	DefaultLobbyPerAgent           = 4
	DefaultPartyPerNegotiation     = 4
	DefaultObserversPerNegotiation = 200
	// CapRetryAfter is the Retry-After of a refused socket: a slot frees
	// when a socket closes, which may be at once.
	CapRetryAfter = 5 * time.Second
)

// WithDefaults is c with the defaults for its zero fields, and 0 (no cap)
// for its negative ones.
func (c Caps) WithDefaults() Caps {
	def := func(v *int, d int) {
		switch {
		case *v == 0:
			*v = d
		case *v < 0:
			*v = 0 // no cap
		}
	}
	def(&c.Connections, DefaultConnections)
	def(&c.SocketsPerAddress, DefaultSocketsPerAddress)
	def(&c.LobbyPerAgent, DefaultLobbyPerAgent)
	def(&c.PartyPerNegotiation, DefaultPartyPerNegotiation)
	def(&c.ObserversPerNegotiation, DefaultObserversPerNegotiation)
	return c
}

// SharedLimiter is a rate limit the nodes of a venue share (package
// admission/redislimit): Allow counts one hit of key and says whether it is
// within the limit, and if not how long until it may be.
type SharedLimiter interface {
	Allow(ctx context.Context, key string) (ok bool, retryAfter time.Duration, err error)
}

// SharedAllow counts one hit of key against lim: true when lim is nil,
// when the hit is within it, or when lim fails (logged; the node's own
// limit still applies).
func SharedAllow(ctx context.Context, lim SharedLimiter, key string, log *slog.Logger) bool {
	if lim == nil {
		return true
	}
	ok, _, err := lim.Allow(ctx, key)
	if err != nil {
		log.Warn("shared frame budget unavailable; this node's applies", "err", err)
		return true
	}
	return ok
}

// The kinds of socket Sockets.Admit counts.
const (
	Lobby    = "lobby"
	Party    = "party"
	Observer = "observer"
)

// Sockets is a node's bookkeeping of held sockets under Caps, and the
// frame budgets the sockets of one agent in one negotiation share.
type Sockets struct {
	Caps    Caps
	Budgets Budgets

	addresses, lobbies, parties, observers Counter
}

// RefusedError says which cap refused a socket (retry after CapRetryAfter).
type RefusedError struct{ Message string }

func (e *RefusedError) Error() string { return e.Message }

// Admit takes the caps of a socket of kind before its upgrade: the client
// address's (addrKey, AddressKey), and kind's (Lobby: per agent; Party:
// per agent and negotiation; Observer: per negotiation). It returns the
// release function (call it when the socket closes), or a *RefusedError
// over a cap.
func (s *Sockets) Admit(addrKey, kind, agentID, negID string) (func(), error) {
	return s.admit(&addrKey, kind, agentID, negID)
}

// AdmitInProcess is Admit for a caller in the same process (the house
// agents, through internal/inproc): kind's caps only, no address's.
func (s *Sockets) AdmitInProcess(kind, agentID, negID string) (func(), error) {
	return s.admit(nil, kind, agentID, negID)
}

// admit is Admit; addrKey nil takes no address's slot.
func (s *Sockets) admit(addrKey *string, kind, agentID, negID string) (func(), error) {
	caps := s.Caps
	var slots []Slot
	if addrKey != nil {
		slots = append(slots, Slot{Counter: &s.addresses, Key: *addrKey, Max: caps.SocketsPerAddress})
	}
	switch kind {
	case Lobby:
		slots = append(slots, Slot{Counter: &s.lobbies, Key: agentID, Max: caps.LobbyPerAgent})
	case Party:
		slots = append(slots, Slot{Counter: &s.parties, Key: agentID + " " + negID, Max: caps.PartyPerNegotiation})
	case Observer:
		slots = append(slots, Slot{Counter: &s.observers, Key: negID, Max: caps.ObserversPerNegotiation})
	}
	release, refused, ok := AcquireAll(slots...)
	if ok {
		return release, nil
	}
	if refused == 0 && addrKey != nil {
		return nil, &RefusedError{fmt.Sprintf("too many sockets from this address (at most %d)", caps.SocketsPerAddress)}
	}
	switch kind {
	case Lobby:
		return nil, &RefusedError{fmt.Sprintf("too many lobby sockets for this agent (at most %d)", caps.LobbyPerAgent)}
	case Party:
		return nil, &RefusedError{fmt.Sprintf("too many sockets for this agent in this negotiation (at most %d)", caps.PartyPerNegotiation)}
	default:
		return nil, &RefusedError{fmt.Sprintf("too many observers of this negotiation (at most %d)", caps.ObserversPerNegotiation)}
	}
}
