// Package spectate is what spectators see of a live negotiation when the
// venue runs them behind the parties (`venue serve --observe-delay`,
// PROTOCOL.md "Observe delay"): which reads are delayed, the negotiation as
// it stood at the cutoff, rebuilt from its transcript, and a transport that
// holds an observer socket's frames until they are old enough. The rules
// take `now`; the transport's clock is injected.
package spectate

import (
	"encoding/json"
	"time"

	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/wire"
)

// Cutoff says whether a public read of st at now runs delay behind the
// parties, and the moment it shows (now - delay). Delayed are negotiations
// that are not arena, have started, and are live or ended within the last
// delay (so the ending, too, reaches spectators delay late). A zero or
// negative delay delays nothing.
func Cutoff(st *negotiation.State, now time.Time, delay time.Duration) (time.Time, bool) {
	if delay <= 0 || st.Arena || st.StartedAt.IsZero() {
		return time.Time{}, false
	}
	cut := now.Add(-delay)
	switch st.Status {
	case negotiation.StatusLive:
		return cut, true
	case negotiation.StatusPending, negotiation.StatusDeclined:
		return time.Time{}, false
	}
	if !st.EndedAt.IsZero() && st.EndedAt.After(cut) {
		return cut, true
	}
	return time.Time{}, false
}

// Entries is the prefix of a transcript (in seq order) committed at or
// before cutoff.
func Entries(entries []negotiation.Entry, cutoff time.Time) []negotiation.Entry {
	for i, e := range entries {
		if e.At.After(cutoff) {
			return entries[:i]
		}
	}
	return entries
}

// entryFields are the members of a transcript frame AsOf reads.
type entryFields struct {
	Type           string          `json:"type"`
	FrameType      string          `json:"frame_type"`
	From           string          `json:"from"`
	ProposalID     string          `json:"proposal_id"`
	Terms          json.RawMessage `json:"terms"`
	OfferHash      string          `json:"offer_hash"`
	ExpiresAt      string          `json:"expires_at"`
	Turn           *string         `json:"turn"`
	TurnDeadlineAt *string         `json:"turn_deadline_at"`
	TurnPaused     bool            `json:"turn_paused"`
}

// AsOf is st as it stood at cutoff, rebuilt from its transcript (entries
// in seq order, all of them or any prefix reaching past cutoff): the
// entries committed by then, the standing proposal and the turn they leave,
// live if it ended later. The rest (parties, offer, deadline) does not
// change while a negotiation runs. Escalations are left as they are: no
// public view shows them.
func AsOf(st negotiation.State, entries []negotiation.Entry, cutoff time.Time) negotiation.State {
	out := st.Clone()
	kept := Entries(entries, cutoff)
	out.LastSeq, out.HeadHash = 0, ""
	if n := len(kept); n > 0 {
		out.LastSeq, out.HeadHash = kept[n-1].Seq, kept[n-1].Hash
		out.LastAt = kept[n-1].At
	} else {
		out.LastAt = out.StartedAt
	}
	if !st.EndedAt.IsZero() && st.EndedAt.After(cutoff) {
		out.Status = negotiation.StatusLive
		out.EndedAt, out.EndedBy, out.Reason = time.Time{}, "", ""
		out.DealTerms, out.DealOfferHash, out.DealAmountCents = nil, "", 0
	}
	// The opening turn (the brand's), until a message says otherwise.
	out.Turn, out.TurnDeadlineAt, out.TurnPaused = st.Brand.AgentID, st.StartedAt.Add(negotiation.TurnTime), false
	out.Standing = nil
	for _, e := range kept {
		var f entryFields
		if json.Unmarshal(e.Frame, &f) != nil {
			continue
		}
		switch f.Type {
		case negotiation.TypeNegotiationMessage:
			if f.Turn != nil {
				out.Turn, out.TurnPaused, out.TurnDeadlineAt = *f.Turn, f.TurnPaused, time.Time{}
				if f.TurnDeadlineAt != nil {
					out.TurnDeadlineAt, _ = wire.ParseTime(*f.TurnDeadlineAt)
				}
			}
			switch f.FrameType {
			case "propose_terms", "counter_terms":
				p := &negotiation.Proposal{ID: f.ProposalID, By: f.From, Terms: f.Terms, OfferHash: f.OfferHash, Seq: e.Seq}
				if f.ExpiresAt != "" {
					p.ExpiresAt, _ = wire.ParseTime(f.ExpiresAt)
				}
				out.Standing = p
			case "accept", "reject", "withdraw":
				out.Standing = nil
			}
		case negotiation.TypeProposalExpired:
			if out.Standing != nil && out.Standing.ID == f.ProposalID {
				out.Standing = nil
			}
		case negotiation.TypeNegotiationEnded:
			out.Standing = nil
		}
	}
	return out
}
