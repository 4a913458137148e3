// Package store declares the venue's persistence: one directory of agents
// (shared by the venue and, later, the PIRCAN bridge), offers, negotiations
// with their transcripts, and the grants of DELEGATION.md. Implementations live in
// store/memory (the embedded default) and store/postgres; both pass the
// contract tests of store/storetest.
package store

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/venuehq/venue/grants"
	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/settlement"
)

// Sentinel errors callers branch on. Implementations wrap them with %w.
var (
	// ErrNotFound: no row with that id (or api key hash).
	ErrNotFound = errors.New("store: not found")
	// ErrConflict: a unique value is taken (an offer already has its
	// negotiation, a transcript seq already exists: a lost race, never a fork).
	ErrConflict = errors.New("store: conflict")
)

// Agent is one registered agent. KeyHash is the hex SHA-256 of its api_key;
// the key itself is never stored.
type Agent struct {
	ID                  string          `json:"agent_id"`
	Name                string          `json:"name"`
	Role                string          `json:"role"` // negotiation.RoleBrand or RoleBouncer
	KeyHash             string          `json:"-"`
	PrincipalKey        json.RawMessage `json:"principal_key,omitempty"` // public JWK
	PrincipalThumbprint string          `json:"principal_thumbprint,omitempty"`
	Profile             Profile         `json:"profile"`
	Reputation          int             `json:"reputation"`
	CreatedAt           time.Time       `json:"created_at"`
	// House marks the venue's own sparring partners (PROTOCOL.md
	// "Practising against the house").
	House bool `json:"house,omitempty"`
	// LastSeenAt is when a lobby socket of the agent last opened, closed or
	// was confirmed open (zero: never); Online whether one is open on any
	// node as of AgentQuery.Now (Agents fills it; Agent leaves it false).
	LastSeenAt time.Time `json:"last_seen_at,omitzero"`
	Online     bool      `json:"online,omitempty"`
	// IRC is set on an agent that registered over IRC with PIRCAN/1 HELLO
	// (PIRCAN.md); nil for an agent registered over REST.
	IRC *IRCBinding `json:"irc,omitempty"`
}

// IRCBinding binds an agent to a NickServ account (PIRCAN.md, "HELLO").
type IRCBinding struct {
	// Account is the NickServ account, case-folded by the bridge with the
	// IRC server's casemapping; unique across agents.
	Account string `json:"account"`
	// Nick is the nick last seen using the account ("" before any).
	Nick string `json:"nick"`
	// Capabilities are self-asserted, matched case-insensitively by
	// AgentQuery.Capability.
	Capabilities []string `json:"capabilities"`
	// CardURL is an https URL, stored as given, never fetched.
	CardURL string `json:"card_url,omitempty"`
}

// Party is the agent as a negotiation shows it.
func (a Agent) Party() negotiation.Party {
	return negotiation.Party{AgentID: a.ID, Name: a.Name, Reputation: a.Reputation}
}

// Profile is self-asserted and public (PROTOCOL.md "Lobby socket").
type Profile struct {
	Description string          `json:"description"`
	Categories  []string        `json:"categories"`
	Audience    json.RawMessage `json:"audience,omitempty"`
}

// AgentQuery selects agents for browse_bouncers and PIRCAN/1 FIND: by role,
// by category (exact), by capability and by a case-insensitive substring q
// of name or description. Limit 1-50.
type AgentQuery struct {
	Role     string
	Category string
	// Capability matches, case-insensitively and exactly, one of an IRC
	// agent's capabilities, or the role of an agent without an IRC binding
	// (a venue agent shows its role as a capability, PIRCAN.md "FIND").
	Capability string
	Q          string
	Limit      int
	Offset     int
	// Now judges presence: Online is set for agents with a presence entry
	// lasting past Now. OnlineOnly keeps only those. ActiveSince, when not
	// zero, leaves out agents last seen (or, never seen, created) before it.
	Now         time.Time
	OnlineOnly  bool
	ActiveSince time.Time
}

// CapabilityKeys are the lower-cased values AgentQuery.Capability matches
// for a: its IRC capabilities, or its role when it has no IRC binding.
func CapabilityKeys(a Agent) []string {
	if a.IRC == nil {
		return []string{strings.ToLower(a.Role)}
	}
	keys := make([]string, 0, len(a.IRC.Capabilities))
	for _, c := range a.IRC.Capabilities {
		keys = append(keys, strings.ToLower(c))
	}
	return keys
}

// Offer is a brand's offer to one bouncer (submit_offer).
type Offer struct {
	ID            string          `json:"offer_id"`
	Brand         string          `json:"brand"`
	Bouncer       string          `json:"to"`
	Body          json.RawMessage `json:"offer"`
	Arena         bool            `json:"arena"`
	CreatedAt     time.Time       `json:"created_at"`
	NegotiationID string          `json:"negotiation_id,omitempty"`
}

// Wake is when a negotiation's next clock runs out; timers are re-armed from
// these on start.
type Wake struct {
	NegotiationID string
	At            time.Time
}

// Step is one pure step of a room (negotiation.State.Apply, Tick, Start,
// ...), run inside the store's transaction on the locked state. It mutates
// st; when the returned Outcome has Changed(), the store saves st, appends
// the Outcome's entries as transcript rows and applies its reputation
// changes (with their events) and its settlement instruction, all in the same atomic operation — also when the step returns an
// error (the entries then are clocks that ran out before the refused frame).
type Step func(tx Tx, st *negotiation.State) (negotiation.Outcome, error)

// Tx is what a Step may use of the store inside Update's transaction: the
// grant budget accounting of DELEGATION.md "The checks", which must be serialised across
// negotiations (two concurrent negotiations cannot together exceed a budget).
type Tx interface {
	// GrantSpent locks the budget of grant jti until the transaction ends and
	// returns the cents spent in live deals under it (0 for an unknown jti).
	GrantSpent(jti string) (int64, error)
	// AddGrantSpent adds cents to grant jti's spent total (a live deal).
	AddGrantSpent(jti string, cents int64) error
}

// GrantRecord is an uploaded grant token and what the venue read of it
// (grants.Record: the grants package owns the rules that read it).
type GrantRecord = grants.Record

// PartyQuery lists one agent's own offers or negotiations, newest first:
// those it made or that are addressed to it, optionally of one Status
// (negotiations only), Limit (1-100) from Offset.
type PartyQuery struct {
	AgentID string
	Status  string
	Limit   int
	Offset  int
}

// NegotiationQuery lists negotiations (the arena listing), newest first:
// Arena nil for both kinds; Statuses empty for any status; Limit <= 0 for
// all; Offset skips that many.
type NegotiationQuery struct {
	Arena    *bool
	Statuses []string
	Limit    int
	Offset   int
}

// ReputationEvent is one change of an agent's reputation (PROTOCOL.md
// "Endings, reputation, arena"): Delta and the Reason (the ending's status,
// turn_missed or deal), with the negotiation that caused it.
type ReputationEvent struct {
	AgentID       string    `json:"agent_id"`
	NegotiationID string    `json:"negotiation_id"`
	Delta         int       `json:"delta"`
	Reason        string    `json:"reason"`
	At            time.Time `json:"at"`
}

// Store is the venue's persistence. Every method takes a context first and
// returns ErrNotFound / ErrConflict (wrapped) for those conditions.
type Store interface {
	// CreateAgent inserts a new agent. ErrConflict if the id or key hash exists.
	CreateAgent(ctx context.Context, a Agent) error
	// Agent returns one agent by id.
	Agent(ctx context.Context, id string) (Agent, error)
	// AgentByKeyHash finds the agent whose api_key hashes to keyHash.
	AgentByKeyHash(ctx context.Context, keyHash string) (Agent, error)
	// SetProfile replaces an agent's profile.
	SetProfile(ctx context.Context, id string, p Profile) error
	// SetPrincipalKey sets (or rotates) an agent's principal key.
	SetPrincipalKey(ctx context.Context, id string, jwk json.RawMessage, thumbprint string) error
	// Agents lists agents matching q, ordered by reputation then name, and
	// the total count of matches.
	Agents(ctx context.Context, q AgentQuery) ([]Agent, int, error)
	// AgentByIRCAccount finds the agent bound to a (case-folded) NickServ
	// account. CreateAgent with a.IRC set binds one; ErrConflict there
	// when the account is bound already.
	AgentByIRCAccount(ctx context.Context, account string) (Agent, error)
	// SetIRCNick records the nick last seen using an IRC agent's account.
	// ErrNotFound if there is no such agent with an IRC binding.
	SetIRCNick(ctx context.Context, id, nick string) error

	// CreateOffer inserts an offer.
	CreateOffer(ctx context.Context, o Offer) error
	// Offer returns one offer.
	Offer(ctx context.Context, id string) (Offer, error)

	// CreateNegotiation inserts a pending negotiation for st.OfferID and
	// links the offer to it; ErrConflict if the offer already has one.
	CreateNegotiation(ctx context.Context, st negotiation.State) error
	// Negotiation returns the current state of a negotiation.
	Negotiation(ctx context.Context, id string) (negotiation.State, error)
	// PendingFor returns the pending requests addressed to a bouncer.
	PendingFor(ctx context.Context, bouncerID string) ([]negotiation.State, error)
	// Negotiations lists negotiations, newest first.
	Negotiations(ctx context.Context, q NegotiationQuery) ([]negotiation.State, error)
	// NegotiationsOf lists the negotiations an agent is a party of, newest
	// first, and how many match in all.
	NegotiationsOf(ctx context.Context, q PartyQuery) ([]negotiation.State, int, error)
	// OffersOf lists the offers an agent made or received, newest first,
	// and how many there are in all.
	OffersOf(ctx context.Context, q PartyQuery) ([]Offer, int, error)
	// Update runs step on the negotiation's state under a lock that holds
	// across every node, and commits what it produced atomically (see Step).
	// It returns the state after the step, its outcome and the step's error.
	Update(ctx context.Context, id string, step Step) (negotiation.State, negotiation.Outcome, error)
	// Transcript returns the transcript entries with seq > since, ascending.
	Transcript(ctx context.Context, id string, since int64) ([]negotiation.Entry, error)
	// Wakes returns the next wake of every negotiation that has a clock
	// running (pending or live).
	Wakes(ctx context.Context) ([]Wake, error)
	// SaveGrant stores an uploaded grant. ErrConflict if its jti was used.
	SaveGrant(ctx context.Context, g GrantRecord) error
	// Grants returns an agent's grants, revoked ones included, in upload order.
	Grants(ctx context.Context, agentID string) ([]GrantRecord, error)
	// RevokeGrant marks an agent's grant revoked at `at`. ErrNotFound if the
	// agent has no such grant.
	RevokeGrant(ctx context.Context, agentID, jti string, at time.Time) error

	// ReputationEvents returns an agent's reputation changes, newest first,
	// at most limit (<= 0: all).
	ReputationEvents(ctx context.Context, agentID string, limit int) ([]ReputationEvent, error)
	// Settlements returns the settlement instructions an agent is payer or
	// payee of, newest first. Update writes them with the deal
	// (Outcome.Settlement).
	Settlements(ctx context.Context, agentID string) ([]settlement.Instruction, error)
	// SetPresence records that agent's lobby sockets on node are open until
	// `until` (zero: none is open any more) and that it was seen at `at`.
	SetPresence(ctx context.Context, agentID, node string, until, at time.Time) error

	// VenueKey returns the venue's signing key (PKCS#8 PEM), creating it
	// with create() when none is stored yet; every node gets the same key.
	VenueKey(ctx context.Context, create func() ([]byte, error)) ([]byte, error)

	// Ping checks the store is reachable.
	Ping(ctx context.Context) error
	// Close releases the store's resources.
	Close()
}
