package arena

import (
	"fmt"
	"time"

	"github.com/venuehq/venue/grants"
	"github.com/venuehq/venue/negotiation"
)

// The house sparring partners' strategy (PROTOCOL.md "Practising against
// the house"). It is a pure function of what a party can see of the room:
// no randomness, no clock of its own, so the same room gives the same move.
//
//   - Anchor: the offer's terms.amount_usd, or DefaultAnchorCents when the
//     offer names no amount.
//   - The house bouncer (seller) opens at 150% of the anchor and never goes
//     below 80% of it; the house brand (buyer) opens at 60% and never goes
//     above 120%.
//   - Each counter moves halfway from its own last amount toward the other
//     side's standing amount (the midpoint), rounded to whole dollars, never
//     past its own limit.
//   - It accepts a standing proposal that is within its limit and within
//     AcceptBandPercent of its own last amount (or at least as good as it).
//   - It walks when the deadline is less than WalkMargin away, or after
//     MaxCounters counters without getting inside the band.
//   - On its turn it always sends a frame (a message when nothing else is
//     due), so it never misses a turn; off its turn it waits.
const (
	DefaultAnchorCents = 100000 // $1,000
	AcceptBandPercent  = 5
	MaxCounters        = 8
	WalkMargin         = 30 * time.Second
	ProposalTTL        = 60 * time.Second
)

// Move kinds.
const (
	MoveWait    = "wait"
	MovePropose = negotiation.TypeProposeTerms
	MoveCounter = negotiation.TypeCounterTerms
	MoveAccept  = negotiation.TypeAccept
	MoveMessage = negotiation.TypeMessage
	MoveWalk    = negotiation.TypeWalk
)

// Position is what a house agent knows when it decides: its role, the
// anchor, its own last amount (0 before its opening), how many counters it
// has sent, and the room as the socket shows it.
type Position struct {
	Role        string // negotiation.RoleBrand or RoleBouncer
	AnchorCents int64  // > 0
	LastCents   int64  // own last proposed amount; 0: none yet
	Counters    int    // counters sent so far
	OnTurn      bool
	// Standing is the proposal on the table: by the other side (Theirs) or
	// by this agent (!Theirs); nil: the table is empty.
	Standing *StandingView
	Now      time.Time
	Deadline time.Time // the negotiation's 8-minute deadline
}

// StandingView is the standing proposal as a party sees it.
type StandingView struct {
	Theirs      bool
	AmountCents int64
	ExpiresAt   time.Time // zero: no ttl
}

// Move is what to send: Kind, and AmountCents on propose and counter;
// Content is the human-readable line that goes with it.
type Move struct {
	Kind        string
	AmountCents int64
	Content     string
}

// Limits returns the opening and the limit (the worst amount it accepts) of
// a role for an anchor.
func Limits(role string, anchorCents int64) (open, limit int64) {
	if anchorCents <= 0 {
		anchorCents = DefaultAnchorCents
	}
	anchorCents = min(anchorCents, grants.MaxAmountCents) // no overflow below
	if role == negotiation.RoleBouncer {
		return roundDollars(anchorCents * 150 / 100), roundDollars(anchorCents * 80 / 100)
	}
	return roundDollars(anchorCents * 60 / 100), roundDollars(anchorCents * 120 / 100)
}

// Decide is the strategy: the move for position p.
func Decide(p Position) Move {
	if !p.OnTurn {
		return Move{Kind: MoveWait}
	}
	if !p.Deadline.IsZero() && p.Deadline.Sub(p.Now) < WalkMargin {
		return Move{Kind: MoveWalk, Content: "Out of time; thank you for the practice."}
	}
	open, limit := Limits(p.Role, p.AnchorCents)
	seller := p.Role == negotiation.RoleBouncer
	better := func(a, b int64) bool { // a at least as good as b for this side
		if seller {
			return a >= b
		}
		return a <= b
	}
	mine := p.LastCents
	if mine == 0 {
		mine = open
	}
	st := p.Standing
	if st != nil && st.Theirs && (st.ExpiresAt.IsZero() || p.Now.Before(st.ExpiresAt)) {
		theirs := st.AmountCents
		if better(theirs, limit) && (better(theirs, mine) || within(theirs, mine, AcceptBandPercent)) {
			return Move{Kind: MoveAccept, Content: fmt.Sprintf("Agreed at %s.", usd(theirs))}
		}
		if p.Counters >= MaxCounters {
			return Move{Kind: MoveWalk, Content: "We are too far apart; walking."}
		}
		next := roundDollars((mine + theirs) / 2)
		if p.LastCents == 0 { // no opening of its own yet: open first
			next = open
		}
		if !better(next, limit) {
			next = limit
		}
		if seller && next < theirs || !seller && next > theirs { // never past what they offer
			next = theirs
		}
		return Move{Kind: MoveCounter, AmountCents: next, Content: fmt.Sprintf("I can do %s.", usd(next))}
	}
	if st != nil && !st.Theirs {
		return Move{Kind: MoveMessage, Content: fmt.Sprintf("My offer of %s stands.", usd(st.AmountCents))}
	}
	// The table is empty: (re)state its position.
	return Move{Kind: MovePropose, AmountCents: mine, Content: fmt.Sprintf("My offer: %s.", usd(mine))}
}

// within reports whether a is within pct percent of b.
func within(a, b int64, pct int64) bool {
	d := a - b
	if d < 0 {
		d = -d
	}
	return d*100 <= b*pct
}

// roundDollars rounds to whole dollars within what a proposal may name
// (0 to grants.MaxAmountCents), so a large anchor never makes the
// house propose an amount the room refuses (and miss its turn).
func roundDollars(cents int64) int64 {
	return min(max((cents+50)/100*100, 0), grants.MaxAmountCents)
}

func usd(cents int64) string { return grants.FormatDollars(cents) }
