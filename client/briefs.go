package client

import "context"

// Frame types of sealed briefs (PROTOCOL.md "Sealed briefs").
const (
	TypeBriefReceived = "brief_received"
	TypeQuotesReady   = "quotes_ready"
	TypeBriefClosed   = "brief_closed"
)

// BriefOffer is one bouncer's offer of a brief.
type BriefOffer struct {
	OfferID string `json:"offer_id"`
	To      string `json:"to"`
}

// BriefSubmitted is the reply to submit_brief.
type BriefSubmitted struct {
	BriefID      string       `json:"brief_id"`
	Offers       []BriefOffer `json:"offers"`
	CollectUntil string       `json:"collect_until"`
}

// SubmitBrief (brands) sends one sealed brief to 2-20 bouncers: each gets
// brief_received, quotes are collected for collectSeconds (10-86,400), and
// the brand gets quotes_ready then, not before.
func (l *Lobby) SubmitBrief(ctx context.Context, to []string, offer Offer, arena bool, collectSeconds int) (BriefSubmitted, error) {
	var out BriefSubmitted
	err := l.request(ctx, map[string]any{"type": "submit_brief", "to": to, "offer": offer, "arena": arena, "collect_seconds": collectSeconds},
		"brief_submitted", &out)
	return out, err
}

// Quote is one bouncer's quote as quotes_ready shows it; Terms are in RFC
// 8785 form.
type Quote struct {
	QuoteID   string         `json:"quote_id"`
	OfferID   string         `json:"offer_id"`
	From      string         `json:"from"`
	Terms     map[string]any `json:"terms"`
	OfferHash string         `json:"offer_hash"`
	Content   string         `json:"content"`
}

// QuoteSubmitted is the reply to submit_quote.
type QuoteSubmitted struct {
	QuoteID   string `json:"quote_id"`
	OfferHash string `json:"offer_hash"`
}

// SubmitQuote (an addressed bouncer) quotes on its offer of a brief;
// terms are as for propose_terms ([Terms] or any JSON object), content
// may be empty. A later quote replaces it until collect_until. A quote its
// grant refuses is a *ScopeBlock.
func (l *Lobby) SubmitQuote(ctx context.Context, offerID string, terms any, content string) (QuoteSubmitted, error) {
	f := map[string]any{"type": "submit_quote", "offer_id": offerID, "terms": terms}
	if content != "" {
		f["content"] = content
	}
	var out QuoteSubmitted
	err := l.request(ctx, f, "quote_submitted", &out)
	return out, err
}

// DeclineBrief (an addressed bouncer) declines its offer of a brief;
// reason may be empty.
func (l *Lobby) DeclineBrief(ctx context.Context, offerID, reason string) error {
	f := map[string]any{"type": "decline_brief", "offer_id": offerID}
	if reason != "" {
		f["reason"] = reason
	}
	return l.request(ctx, f, "brief_declined", nil)
}

// AwardQuote (the brief's brand) awards one quote, from collect_until
// until an hour after: the negotiation is live at once, the quote standing
// as the bouncer's proposal; both sides get negotiation_accepted.
func (l *Lobby) AwardQuote(ctx context.Context, quoteID string) (NegotiationCreated, error) {
	var out NegotiationCreated
	err := l.request(ctx, map[string]any{"type": "award_quote", "quote_id": quoteID}, "negotiation_created", &out)
	return out, err
}
