package negotiation

import (
	"encoding/json"

	"github.com/venuehq/venue/wire"
)

// Lobby pushes built from a negotiation's state (PROTOCOL.md "Lobby socket").
const (
	TypeNegotiationRequested = "negotiation_requested"
	TypeNegotiationDeclined  = "negotiation_declined"
	TypeNegotiationAccepted  = "negotiation_accepted"
)

// View is the public view of a negotiation, what anyone may know of it
// (GET /v1/negotiations/{id}, PROTOCOL.md "REST"): parties, status, clocks,
// the standing proposal, and at the end the outcome. It carries no
// escalation content, no idempotency keys and no grant limits. Times are
// wire strings; turn, turn_deadline_at and standing are null when none.
func (s *State) View() map[string]any {
	v := map[string]any{
		"negotiation_id": s.ID, "offer_id": s.OfferID, "offer": s.Offer, "status": s.Status,
		"brand": s.Brand, "bouncer": s.Bouncer, "arena": s.Arena,
		"created_at": wire.Time(s.CreatedAt), "last_seq": s.LastSeq, "head_hash": s.HeadHash,
		"turn": nil, "turn_deadline_at": nil, "standing": nil,
	}
	if sv := s.standingView(); sv != nil {
		v["standing"] = sv
	}
	if s.Status == StatusLive {
		s.turnFields(v)
	}
	if !s.StartedAt.IsZero() {
		v["started_at"], v["deadline_at"] = wire.Time(s.StartedAt), wire.Time(s.DeadlineAt)
	}
	if s.Status == StatusPending {
		v["request_expires_at"] = wire.Time(s.RequestExpiresAt)
	}
	if !s.EndedAt.IsZero() {
		v["ended_at"] = wire.Time(s.EndedAt)
		if s.EndedBy != "" {
			v["ended_by"] = s.EndedBy
		}
		if s.Reason != "" {
			v["reason"] = s.Reason
		}
	}
	if s.Status == StatusDeal {
		v["terms"], v["offer_hash"] = s.DealTerms, s.DealOfferHash
	}
	return v
}

// RequestedFrame is negotiation_requested, pushed to the bouncer's lobby
// when a brand asks and again when it reconnects while the request is
// pending (PROTOCOL.md "Lobby socket").
func (s *State) RequestedFrame() json.RawMessage {
	b, _ := json.Marshal(map[string]any{
		"type": TypeNegotiationRequested, "negotiation_id": s.ID, "offer": s.Offer,
		"brand": s.Brand, "arena": s.Arena, "expires_at": wire.Time(s.RequestExpiresAt),
	})
	return b
}

// DeclinedFrame is negotiation_declined {negotiation_id, reason}: the reply
// to the bouncer's decline and the push to the brand (and, on a lapse, to
// both) (PROTOCOL.md "Lobby socket").
func (s *State) DeclinedFrame() json.RawMessage {
	b, _ := json.Marshal(s.DeclinedView())
	return b
}

// DeclinedView is DeclinedFrame as a map, for a reply that adds `re`.
func (s *State) DeclinedView() map[string]any {
	return map[string]any{"type": TypeNegotiationDeclined, "negotiation_id": s.ID, "reason": s.Reason}
}
