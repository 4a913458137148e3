package arena

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/wire"
)

// Summary is one negotiation as the arena listing and the live feed show it
// (PROTOCOL.md "Arena listing"): public facts only — never a scope_block,
// an escalation's content or a grant limit.
type Summary struct {
	NegotiationID  string            `json:"negotiation_id"`
	Arena          bool              `json:"arena"`
	Status         string            `json:"status"`
	Title          string            `json:"title"` // the offer's title
	Brand          negotiation.Party `json:"brand"`
	Bouncer        negotiation.Party `json:"bouncer"`
	CreatedAt      string            `json:"created_at"`
	StartedAt      *string           `json:"started_at"`
	LastActivityAt string            `json:"last_activity_at"`
	EndedAt        *string           `json:"ended_at,omitempty"`
	DeadlineAt     *string           `json:"deadline_at"`
	Turn           *string           `json:"turn"`
	LastSeq        int64             `json:"last_seq"`
	// StandingAmountUSD is the standing proposal's amount_usd (null: the
	// table is empty); on a deal, DealAmountUSD is the amount agreed. Both
	// are decimal strings with two decimals ("3200.00").
	StandingAmountUSD *string `json:"standing_amount_usd"`
	StandingBy        *string `json:"standing_by,omitempty"`
	DealAmountUSD     *string `json:"deal_amount_usd,omitempty"`
}

func ptr(s string) *string { return &s }

func usdString(cents int64) string {
	sign := ""
	if cents < 0 {
		sign, cents = "-", -cents
	}
	return fmt.Sprintf("%s%d.%02d", sign, cents/100, cents%100)
}

// Summarize builds the Summary of a negotiation's state.
func Summarize(st negotiation.State) Summary {
	s := Summary{
		NegotiationID: st.ID, Arena: st.Arena, Status: st.Status, Brand: st.Brand, Bouncer: st.Bouncer,
		CreatedAt: wire.Time(st.CreatedAt), LastSeq: st.LastSeq,
	}
	var offer struct {
		Title string `json:"title"`
	}
	_ = json.Unmarshal(st.Offer, &offer)
	s.Title = offer.Title
	last := st.CreatedAt
	for _, t := range []time.Time{st.StartedAt, st.LastAt, st.EndedAt} {
		if t.After(last) {
			last = t
		}
	}
	s.LastActivityAt = wire.Time(last)
	if !st.StartedAt.IsZero() {
		s.StartedAt, s.DeadlineAt = ptr(wire.Time(st.StartedAt)), ptr(wire.Time(st.DeadlineAt))
	}
	if !st.EndedAt.IsZero() {
		s.EndedAt = ptr(wire.Time(st.EndedAt))
	}
	if st.Status == negotiation.StatusLive && st.Turn != "" {
		s.Turn = ptr(st.Turn)
	}
	if p := st.Standing; p != nil {
		s.StandingAmountUSD, s.StandingBy = ptr(usdString(p.AmountCents)), ptr(p.By)
	}
	if st.Status == negotiation.StatusDeal {
		s.DealAmountUSD = ptr(usdString(st.DealAmountCents))
	}
	return s
}

// Feed event types pushed on GET /v1/arena/ws.
const (
	EventStarted = "arena_negotiation_started"
	EventUpdated = "arena_negotiation_updated"
	EventEnded   = "arena_negotiation_ended"
)

// EventOf returns the feed event of a committed step of an arena
// negotiation, "" when the step is nothing the feed shows (a pending
// request, a decline, a refused frame).
func EventOf(st negotiation.State, out negotiation.Outcome) string {
	switch {
	case !st.Arena || !out.Changed():
		return ""
	case out.Started:
		return EventStarted
	case out.Ended:
		return EventEnded
	case len(out.Entries) > 0 && st.Status == negotiation.StatusLive:
		return EventUpdated
	}
	return ""
}

// eventFrame is the feed frame {"negotiation": Summary, "type"} (the
// members in the order a map would sort them). A struct, not a map: it runs
// for every committed arena step.
func eventFrame(typ string, s Summary) []byte {
	b, _ := json.Marshal(struct {
		Negotiation Summary `json:"negotiation"`
		Type        string  `json:"type"`
	}{s, typ})
	return b
}
