package connect

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/venuehq/venue/client"
	"github.com/venuehq/venue/negotiation"
)

// twinHint says how to send lobby requests connect has no verb for
// (them: "it" or "them"): their REST twin (PROTOCOL.md "Without a socket").
func twinHint(them string) string {
	return "(POST /v1/agents/me/lobby; connect has no verb for " + them + ")"
}

// onPush prints one lobby push (PROTOCOL.md "Lobby socket", "Sealed
// briefs"), in the lobby and while a negotiation is played alike, and
// queues a negotiation that went live with this agent as a party, to go
// into (goLive). A push connect does not know is printed as it came.
func (s *lobbySession) onPush(p client.Push) {
	if s.json {
		s.out.line(string(compactJSON(p.Raw)))
	}
	var text string
	switch {
	case p.Err != nil:
		text = fmt.Sprintf("error %s: %s", p.Err.Code, p.Err.Message)
	case p.Type == negotiation.TypeNegotiationRequested:
		s.pending = append(s.pending, p)
		text = "request  " + describeRequest(p) + " " + s.answerHint(p.NegotiationID)
	case p.Type == negotiation.TypeNegotiationAccepted:
		text = s.accepted(p)
	case p.Type == negotiation.TypeNegotiationDeclined:
		s.dropPending(p.NegotiationID)
		text = s.declined(p)
	case p.Type == client.TypeBriefReceived:
		s.briefs[p.OfferID] = p
		text = "brief    " + describeBrief(p)
	case p.Type == client.TypeBriefClosed:
		text = s.briefClosed(p)
	case p.Type == client.TypeQuotesReady:
		text = describeQuotes(p)
	default:
		text = "push     " + p.Type + " " + string(compactJSON(p.Raw))
	}
	if !s.json {
		s.out.line(text)
	}
}

// answerHint says how to answer request negID: at once in the lobby, or
// there once the negotiation being played ends.
func (s *lobbySession) answerHint(negID string) string {
	if s.room != "" {
		return fmt.Sprintf(`(in the lobby once %s ends: "accept %s" or "decline %s")`, s.room, negID, negID)
	}
	return fmt.Sprintf(`(type "accept %s" or "decline %s")`, negID, negID)
}

// accepted is the line for negotiation_accepted, which the venue pushes to
// a brand whose request was taken (PROTOCOL.md "Lobby socket") and to both
// parties at the award of a brief's quote ("Sealed briefs"); worded for
// this agent's side, the other party named. The negotiation is gone into
// next (now, or once the one being played ends).
func (s *lobbySession) accepted(p client.Push) string {
	var me, other *client.Party
	otherRole := negotiation.RoleBouncer
	switch {
	case p.Brand != nil && p.Brand.AgentID == s.me.AgentID:
		me, other = p.Brand, p.Bouncer
	case p.Bouncer != nil && p.Bouncer.AgentID == s.me.AgentID:
		me, other, otherRole = p.Bouncer, p.Brand, negotiation.RoleBrand
	}
	var text string
	switch {
	case me == nil: // not pushed to a non-party: said, not entered
		return fmt.Sprintf("accepted %s: brand %s, bouncer %s, live until %s", p.NegotiationID, partyName(p.Brand), partyName(p.Bouncer), p.DeadlineAt)
	case s.mine[p.NegotiationID]:
		text = fmt.Sprintf("accepted %s: %s took your request; the room is live until %s", p.NegotiationID, partyName(other), p.DeadlineAt)
	default: // an award, or a request made elsewhere
		text = fmt.Sprintf("live     %s: your negotiation with the %s %s is live until %s", p.NegotiationID, otherRole, partyName(other), p.DeadlineAt)
	}
	if s.room != "" && !s.entered[p.NegotiationID] {
		text += "; you go in when " + s.room + " ends"
	}
	s.goLive(p.NegotiationID)
	return text
}

// declined is the line for negotiation_declined (PROTOCOL.md "Lobby
// socket"): to a brand, the bouncer's reason or "expired"; to a bouncer,
// only a request's lapse (2 minutes unanswered).
func (s *lobbySession) declined(p client.Push) string {
	if s.me.Role == negotiation.RoleBouncer {
		return fmt.Sprintf("lapsed   %s: the request was not answered in time (%s)", p.NegotiationID, p.Reason)
	}
	return fmt.Sprintf("declined %s: %s", p.NegotiationID, p.Reason)
}

// briefClosed is the line for brief_closed, pushed to every addressed
// bouncer at the award (PROTOCOL.md "Sealed briefs"): whether its quote
// won, and if so the negotiation, gone into (also when its
// negotiation_accepted did not come first).
func (s *lobbySession) briefClosed(p client.Push) string {
	what := p.BriefID
	if b, ok := s.briefs[p.OfferID]; ok {
		what += fmt.Sprintf(" (%q from %s)", offerTitle(b.Offer), partyNameShort(b.Brand))
		delete(s.briefs, p.OfferID)
	}
	if !p.Awarded {
		return "brief    " + what + " closed: the brand awarded another bouncer's quote"
	}
	text := "brief    " + what + " closed: your quote won: negotiation " + p.NegotiationID
	if s.room != "" && p.NegotiationID != "" && !s.entered[p.NegotiationID] {
		text += "; you go in when " + s.room + " ends"
	}
	s.goLive(p.NegotiationID)
	return text
}

// describeBrief is brief_received (PROTOCOL.md "Sealed briefs"): the
// brief, who sent what, until when quotes are taken (collect_until), and
// how to quote or decline.
func describeBrief(p client.Push) string {
	s := fmt.Sprintf("%s from %s: %s", p.BriefID, partyName(p.Brand), describeOffer(p.Offer))
	if p.Arena {
		s += " (arena)"
	}
	return s + fmt.Sprintf(", quote until %s (sealed till then); quote or decline with submit_quote or decline_brief, offer_id %s %s",
		p.CollectUntil, p.OfferID, twinHint("them"))
}

// describeQuotes is quotes_ready, to the brand at collect_until
// (PROTOCOL.md "Sealed briefs"): each standing quote on its own line, its
// terms and content, and how to award one (within the hour after).
func describeQuotes(p client.Push) string {
	if len(p.Quotes) == 0 {
		return "quotes   " + p.BriefID + ": no standing quotes; the brief closes unawarded"
	}
	plural := "s"
	if len(p.Quotes) == 1 {
		plural = ""
	}
	lines := []string{fmt.Sprintf("quotes   %s: %d standing quote%s; award one within the hour with award_quote and its quote_id %s",
		p.BriefID, len(p.Quotes), plural, twinHint("it"))}
	for _, q := range p.Quotes {
		terms, _ := json.Marshal(q.Terms)
		l := fmt.Sprintf("  %s from %s: %s", q.QuoteID, q.From, describeTerms(terms))
		if q.Content != "" {
			l += fmt.Sprintf("  %q", q.Content)
		}
		lines = append(lines, l)
	}
	return strings.Join(lines, "\n")
}

// describeRequest is negotiation_requested (PROTOCOL.md "Lobby socket"):
// the request, who asks what, and when it lapses.
func describeRequest(p client.Push) string {
	s := fmt.Sprintf("%s from %s: %s", p.NegotiationID, partyName(p.Brand), describeOffer(p.Offer))
	if p.Arena {
		s += " (arena)"
	}
	return s + ", lapses " + p.ExpiresAt
}

// describeOffer is an offer's title and its terms, if any.
func describeOffer(raw json.RawMessage) string {
	var offer struct {
		Terms json.RawMessage `json:"terms"`
	}
	_ = json.Unmarshal(raw, &offer)
	s := fmt.Sprintf("%q", offerTitle(raw))
	if len(offer.Terms) > 0 {
		s += " " + describeTerms(offer.Terms)
	}
	return s
}

func offerTitle(raw json.RawMessage) string {
	var offer struct {
		Title string `json:"title"`
	}
	_ = json.Unmarshal(raw, &offer)
	return offer.Title
}

func partyName(p *client.Party) string {
	if p == nil {
		return "?"
	}
	return fmt.Sprintf("%s (%s, reputation %d)", p.Name, p.AgentID, p.Reputation)
}

func partyNameShort(p *client.Party) string {
	if p == nil {
		return "?"
	}
	return p.Name
}
