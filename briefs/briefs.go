// Package briefs owns sealed briefs (PROTOCOL.md "Sealed briefs"): a
// brand's one offer to 2-20 bouncers, the quotes they submit during the
// collection window, sealed from the brand until collect_until, the
// quotes_ready push at collect_until (a durable clock: the timers wake it,
// the store says whether it was sent, so it fires once across nodes and
// survives a restart), and the award that opens a live negotiation with
// the awarded quote standing as the bouncer's propose_terms. The lobby
// only dispatches its four requests here (Service.Handle). Its store is
// in memory (NewMemory) or on Postgres (briefs/briefspg); both pass the
// contract suite of briefs/briefstest.
package briefs

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/store"
)

// Lobby frame types of sealed briefs (PROTOCOL.md "Sealed briefs").
const (
	TypeSubmitBrief    = "submit_brief"
	TypeSubmitQuote    = "submit_quote"
	TypeDeclineBrief   = "decline_brief"
	TypeAwardQuote     = "award_quote"
	TypeBriefSubmitted = "brief_submitted"
	TypeBriefReceived  = "brief_received"
	TypeQuoteSubmitted = "quote_submitted"
	TypeBriefDeclined  = "brief_declined"
	TypeQuotesReady    = "quotes_ready"
	TypeBriefClosed    = "brief_closed"
)

// Bounds and limits (PROTOCOL.md "Sealed briefs", "Limits and close codes").
const (
	MinBouncers       = 2
	MaxBouncers       = 20
	MinCollectSeconds = 10
	MaxCollectSeconds = 86400
	// AwardWindow is how long after collect_until the brand may award.
	AwardWindow = time.Hour
	// QuoteTTLSeconds is the ttl of the awarded quote standing as the
	// bouncer's propose_terms.
	QuoteTTLSeconds = 300
	// DefaultBriefsPerHour is how many briefs one brand may submit in any
	// hour; DefaultOpenBriefs how many of its briefs may be collecting at
	// once.
	DefaultBriefsPerHour = 20
	DefaultOpenBriefs    = 5
	// MaxReasonLen bounds decline_brief's reason, in characters.
	MaxReasonLen = 500
)

// WakePrefix starts the timer key of a brief's collect_until ("brief:" and
// the brief id); the hub hands such wakes to Service.Fire.
const WakePrefix = "brief:"

// Errors of the Store. ErrNotFound and ErrConflict are the store's own.
var (
	ErrNotFound = store.ErrNotFound
	ErrConflict = store.ErrConflict
	// ErrClosed: the brief's collection window is over (collect_until
	// passed or quotes_ready was sent), or the offer was declined.
	ErrClosed = errors.New("briefs: collection closed")
)

// Brief is one sealed brief as stored.
type Brief struct {
	ID           string            `json:"brief_id"`
	Brand        negotiation.Party `json:"brand"`
	Offer        json.RawMessage   `json:"offer"`
	Arena        bool              `json:"arena"`
	CreatedAt    time.Time         `json:"created_at"`
	CollectUntil time.Time         `json:"collect_until"`
	// ReadyAt is when quotes_ready was sent (zero: not yet).
	ReadyAt time.Time   `json:"ready_at,omitzero"`
	Offers  []Addressed `json:"offers"`
	// AwardedQuote, NegotiationID and AwardedAt are set by the award.
	AwardedQuote  string    `json:"awarded_quote,omitempty"`
	NegotiationID string    `json:"negotiation_id,omitempty"`
	AwardedAt     time.Time `json:"awarded_at,omitzero"`
}

// Addressed is the brief's offer to one bouncer.
type Addressed struct {
	OfferID    string    `json:"offer_id"`
	To         string    `json:"to"`
	DeclinedAt time.Time `json:"declined_at,omitzero"`
	Reason     string    `json:"reason,omitempty"`
}

// Quote is a bouncer's sealed answer to one offer of a brief: terms in RFC
// 8785 form and their offer hash (PROTOCOL.md "Transcript, offer hash and
// chain hash").
type Quote struct {
	ID        string          `json:"quote_id"`
	BriefID   string          `json:"-"`
	OfferID   string          `json:"offer_id"`
	From      string          `json:"from"`
	Terms     json.RawMessage `json:"terms"`
	OfferHash string          `json:"offer_hash"`
	Content   string          `json:"content"`
	At        time.Time       `json:"-"`
}

// Due is a brief whose quotes_ready has not been sent, and when it is due.
type Due struct {
	ID string
	At time.Time
}

// Store keeps briefs and their quotes. Every method returns ErrNotFound
// (wrapped) for an unknown id.
type Store interface {
	// CreateBrief stores a new brief with its offers.
	CreateBrief(ctx context.Context, b Brief) error
	// Brief returns one brief with its offers.
	Brief(ctx context.Context, id string) (Brief, error)
	// BriefOfOffer returns the brief one of whose offers is offerID.
	BriefOfOffer(ctx context.Context, offerID string) (Brief, error)
	// OpenFor returns the briefs still collecting at now (collect_until
	// after now, quotes_ready not sent) with an offer to bouncerID that it
	// has not declined, oldest first.
	OpenFor(ctx context.Context, bouncerID string, now time.Time) ([]Brief, error)
	// Counts returns how many briefs brandID submitted at or after since,
	// and how many of its briefs are still collecting at now.
	Counts(ctx context.Context, brandID string, since, now time.Time) (recent, open int, err error)
	// PutQuote stores q, replacing the earlier quote on the same offer.
	// ErrClosed when the brief's collect_until is not after now, its
	// quotes_ready was sent, or the offer was declined.
	PutQuote(ctx context.Context, q Quote, now time.Time) error
	// Decline records the bouncer's decline of offerID (and drops its
	// quote, if any). ErrClosed as for PutQuote.
	Decline(ctx context.Context, offerID, reason string, now time.Time) error
	// Quote returns one quote.
	Quote(ctx context.Context, id string) (Quote, error)
	// Quotes returns a brief's standing quotes, in the order of its offers.
	Quotes(ctx context.Context, briefID string) ([]Quote, error)
	// MarkReady records that quotes_ready is sent at `at`, once: it
	// returns the brief's quotes and true for the one call that set it,
	// nil and false for any later call (another node's, a second wake).
	MarkReady(ctx context.Context, briefID string, at time.Time) ([]Quote, bool, error)
	// Award records quoteID as the brief's award opening negotiation
	// negID, once: false when the brief has an award already.
	Award(ctx context.Context, briefID, quoteID, negID string, at time.Time) (bool, error)
	// Unaward takes back an award of quoteID whose negotiation could not
	// be opened.
	Unaward(ctx context.Context, briefID, quoteID string) error
	// Unready returns up to limit briefs (<= 0: all) whose quotes_ready is
	// not sent and whose collect_until is before `before` (zero: any),
	// earliest first.
	Unready(ctx context.Context, before time.Time, limit int) ([]Due, error)
}

// Collecting reports whether b takes quotes and declines at now.
func (b *Brief) Collecting(now time.Time) bool {
	return b.ReadyAt.IsZero() && now.Before(b.CollectUntil)
}

// offer returns b's offer with that id, nil if none.
func (b *Brief) offer(id string) *Addressed {
	for i := range b.Offers {
		if b.Offers[i].OfferID == id {
			return &b.Offers[i]
		}
	}
	return nil
}
