// Package store declares the venue's persistence: one directory of agents
// (shared by the venue and the PIRCAN bridge), offers, negotiations
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
	"github.com/venuehq/venue/wire"
)

// Sentinel errors callers branch on. Implementations wrap them with %w.
var (
	// ErrNotFound: no row with that id (or api key hash).
	ErrNotFound = errors.New("store: not found")
	// ErrConflict: a unique value is taken (an offer already has its
	// negotiation, a transcript seq already exists: a lost race, never a fork).
	ErrConflict = errors.New("store: conflict")
	// ErrLimit: the agent already holds as many of the thing as its cap
	// allows (SaveGrantCapped); nothing was stored.
	ErrLimit = errors.New("store: limit reached")
	// ErrUnavailable: the store could not do it in time (no connection
	// free, a row locked elsewhere past the lock timeout, a statement past
	// its timeout, the database unreachable) and nothing was changed; the
	// caller may retry. It is a *wire.Error with code `unavailable`
	// (PROTOCOL.md "Errors"), so errors.As hands it to the client as is.
	ErrUnavailable error = wire.Errorf(wire.CodeUnavailable, "the venue's store is busy or unreachable; nothing was changed, retry")
	// ErrOutcomeUnknown: a step's commit was sent, its answer was lost, and
	// the store could not be reached within its bound to learn whether it
	// landed. The step may be stored. It is a *wire.Error with code
	// `outcome_unknown` (PROTOCOL.md "Errors"): the client resends the same
	// frame with the same id, which answers with the truth (the original
	// message_ack if it landed).
	ErrOutcomeUnknown error = wire.Errorf(wire.CodeOutcomeUnknown, "the venue sent that frame's commit but could not learn whether it landed; resend it with the same id to learn the outcome")
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
	// KeyIssuedAt is when the current api_key was set: CreatedAt at
	// registration (a zero value is taken as CreatedAt), later the time of
	// the last rotation or principal revocation (see ReplaceKey).
	KeyIssuedAt time.Time `json:"-"`
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
	// GrantSpent locks the budget of grant (iss, jti) until the transaction
	// ends and returns the cents spent in live deals under it (0 for an
	// unknown grant). A jti is unique per issuer, not venue-wide.
	GrantSpent(iss, jti string) (int64, error)
	// AddGrantSpent adds cents to grant (iss, jti)'s spent total (a live deal).
	AddGrantSpent(iss, jti string, cents int64) error
}

// GrantRecord is an uploaded grant token and what the venue read of it
// (grants.Record: the grants package owns the rules that read it).
type GrantRecord = grants.Record

// VenueKey is one receipt signing key the venue has had.
type VenueKey struct {
	ID        int64     // 1 for the first key, one more for each rotation
	Key       []byte    // as given to VenueKey or RotateVenueKey
	CreatedAt time.Time // when it became current
	RetiredAt time.Time // zero for the current key
}

// DisabledKeyHash is the key hash ReplaceKey stores for "no usable key":
// never the hex SHA-256 of any api_key, and unique per agent and time.
func DisabledKeyHash(agentID string, at time.Time) string {
	return "disabled:" + agentID + ":" + at.UTC().Format(time.RFC3339Nano)
}

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
	AgentID  string // "": any; else negotiations with this agent as brand or bouncer
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
	// LiveNegotiations returns the live negotiations agentID is a party of
	// (a principal's revocation withdraws its standing proposals there).
	LiveNegotiations(ctx context.Context, agentID string) ([]negotiation.State, error)
	// PendingCounts counts the pending requests addressed to bouncerID: those
	// from brandID, and all of them (the lobby's quotas). A request that has
	// lapsed but was not settled yet still counts.
	PendingCounts(ctx context.Context, bouncerID, brandID string) (fromBrand, total int, err error)
	// PurgeRequests deletes the requests (negotiations that never went live:
	// pending or declined) created before `before`, with their offers, and
	// the offers never used for a request, and returns how many requests it
	// deleted. Callers pass a time further back than
	// negotiation.RequestLapse, so no request that can still start is lost.
	PurgeRequests(ctx context.Context, before time.Time) (int, error)
	// PurgeArena deletes the arena negotiations created before `before`
	// that are over (neither pending nor live), with their transcripts and
	// offers, and returns how many it deleted (PROTOCOL.md "Practising
	// against the house": arena negotiations are kept for a retention
	// period). Live negotiations are never touched.
	PurgeArena(ctx context.Context, before time.Time) (int, error)
	// SetBlocked records (blocked true) or lifts that bouncerID refuses
	// requests from brandID. Setting it twice is harmless.
	SetBlocked(ctx context.Context, bouncerID, brandID string, blocked bool, at time.Time) error
	// Blocked reports whether bouncerID blocks brandID.
	Blocked(ctx context.Context, bouncerID, brandID string) (bool, error)
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
	// Overdue returns up to limit (1 or more) of those wakes that are
	// before `before`, earliest first: clocks a lost timer never fired
	// (timers.Sweeper re-arms them).
	Overdue(ctx context.Context, before time.Time, limit int) ([]Wake, error)
	// SaveGrant stores an uploaded grant. ErrConflict if its issuer used the
	// jti before (jti is unique per issuer: another principal's jti neither
	// conflicts nor shows). A grant its issuer revoked before the upload (see
	// RevokeIssuerGrant) is stored revoked, RevokedAt the revocation's time.
	SaveGrant(ctx context.Context, g GrantRecord) error
	// SaveGrantCapped is SaveGrant for an agent's own upload: when the agent
	// already holds maxActive (> 0) grants of g.Issuer that are neither
	// revoked nor expired at g.CreatedAt (active or not yet valid), it stores
	// nothing and returns ErrLimit; the count and the insert are atomic
	// across every node. maxActive <= 0: no cap.
	SaveGrantCapped(ctx context.Context, g GrantRecord, maxActive int) error
	// Grants returns an agent's grants, revoked ones included, in upload
	// order, each with its Cursor set.
	Grants(ctx context.Context, agentID string) ([]GrantRecord, error)
	// GrantsPage returns up to limit (1 or more) of an agent's grants
	// uploaded after the one whose Cursor is `after` (0: from the first), in
	// upload order, each with its Cursor set (GET /v1/grants).
	GrantsPage(ctx context.Context, agentID string, after int64, limit int) ([]GrantRecord, error)
	// RevokeGrant marks the agent's grants with that jti (of any issuer)
	// revoked at `at` (the agent's own DELETE). ErrNotFound if the agent has
	// no such grant. Revoking twice keeps the first time.
	RevokeGrant(ctx context.Context, agentID, jti string, at time.Time) error
	// RevokeIssuerGrant records that principal iss revoked its grant jti for
	// agentID at `at` (DELEGATION.md "Revoking without the agent"): the
	// grant is revoked whether it was uploaded already or is uploaded later.
	// Revoking twice keeps the first time. It reports whether an uploaded
	// grant of agentID was marked.
	RevokeIssuerGrant(ctx context.Context, agentID, iss, jti string, at time.Time) (bool, error)
	// ReplaceKey sets agent id's api_key hash to newHash and KeyIssuedAt to
	// at, if its current key was issued before `before` (zero: always). An
	// empty newHash leaves the agent with no usable key. It reports whether
	// the key was replaced; ErrNotFound if there is no such agent,
	// ErrConflict if newHash is another agent's.
	ReplaceKey(ctx context.Context, id, newHash string, before, at time.Time) (bool, error)

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

	// VenueKey returns the venue's current signing key (opaque bytes: a
	// PKCS#8 PEM or its sealed form, see package receipt), creating it with
	// create() when none is stored yet; every node gets the same key.
	VenueKey(ctx context.Context, create func() ([]byte, error)) ([]byte, error)
	// VenueKeys returns every signing key the venue has had, current first,
	// then the retired ones newest first (the JWKS keeps them so receipts
	// signed before a rotation still verify).
	VenueKeys(ctx context.Context) ([]VenueKey, error)
	// RotateVenueKey makes key the current signing key at `at` and retires
	// the one it replaces.
	RotateVenueKey(ctx context.Context, key []byte, at time.Time) error

	// Ping checks the store is reachable.
	Ping(ctx context.Context) error
	// Close releases the store's resources.
	Close()
}
