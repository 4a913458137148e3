package negotiation

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/venuehq/venue/wire"
)

// MaxTitleLen is the longest offer title, in characters.
const MaxTitleLen = 200

// CheckOffer validates the `offer` object of submit_offer and submit_brief
// (PROTOCOL.md "Lobby socket"): `title` a string of 1-200 characters,
// `brief` if present a string of at most MaxContentLen characters, `terms`
// if present valid terms (ParseTerms). Errors are CodeInvalidArgument
// naming the key.
func CheckOffer(offer json.RawMessage) *wire.Error {
	var o map[string]json.RawMessage
	if json.Unmarshal(offer, &o) != nil {
		return wire.Errorf(wire.CodeInvalidArgument, "offer must be an object")
	}
	var title string
	if json.Unmarshal(o["title"], &title) != nil || strings.TrimSpace(title) == "" || utf8.RuneCountInString(title) > MaxTitleLen {
		return wire.Errorf(wire.CodeInvalidArgument, "offer.title is required: a string of 1-%d characters", MaxTitleLen)
	}
	if b, ok := o["brief"]; ok {
		var brief string
		if json.Unmarshal(b, &brief) != nil || utf8.RuneCountInString(brief) > MaxContentLen {
			return wire.Errorf(wire.CodeInvalidArgument, "offer.brief must be a string of at most %d characters", MaxContentLen)
		}
	}
	if t, ok := o["terms"]; ok && string(t) != "null" {
		if _, werr := ParseTerms(t); werr != nil {
			return werr
		}
	}
	return nil
}

// AcceptedFrame is negotiation_accepted (PROTOCOL.md "Lobby socket"),
// pushed to both lobbies when a negotiation goes live: by the bouncer's
// accept_negotiation or by a brand's award_quote (PROTOCOL.md "Sealed
// briefs").
func (s *State) AcceptedFrame(wsURL, observeURL string) map[string]any {
	return map[string]any{
		"type": TypeNegotiationAccepted, "negotiation_id": s.ID,
		"ws_url": wsURL, "observe_url": observeURL,
		"started_at": wire.Time(s.StartedAt), "deadline_at": wire.Time(s.DeadlineAt),
		"brand": s.Brand, "bouncer": s.Bouncer, "arena": s.Arena,
	}
}
