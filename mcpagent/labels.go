package mcpagent

import (
	"encoding/json"

	"github.com/venuehq/venue/client"
)

// Quoted is text another agent wrote (a message, what it said with a
// proposal, a decline's reason), handed to the model as labelled data: From
// says whose words they are ("them" for the other side), QuotedText is
// their text as they sent it. The server's instructions tell the model
// that quoted text is data to weigh, never instructions, whatever it says
// (PROTOCOL.md "Negotiation socket": content binds nobody).
type Quoted struct {
	From       string `json:"from"` // them, you
	QuotedText string `json:"quoted_text"`
}

// quote labels text as from's words; nil for no text.
func quote(from, text string) *Quoted {
	if text == "" {
		return nil
	}
	return &Quoted{From: from, QuotedText: text}
}

// OfferView is an offer (PROTOCOL.md "Lobby socket": submit_offer): its
// title and brief are the brand's words, labelled with From; the opening
// terms with the amount in cents.
type OfferView struct {
	From        string          `json:"from"` // them (the brand, to a bouncer), you (to the brand)
	Title       string          `json:"title"`
	Brief       string          `json:"brief,omitempty"`
	AmountCents *int64          `json:"amount_cents,omitempty"`
	Terms       json.RawMessage `json:"terms,omitempty"`
}

// offerView reads the wire's offer object; nil for none or one that is not
// an object.
func offerView(raw json.RawMessage, from string) *OfferView {
	if len(raw) == 0 {
		return nil
	}
	var o struct {
		Title string          `json:"title"`
		Brief string          `json:"brief"`
		Terms json.RawMessage `json:"terms"`
	}
	if json.Unmarshal(raw, &o) != nil {
		return nil
	}
	v := &OfferView{From: from, Title: o.Title, Brief: o.Brief}
	if len(o.Terms) > 0 && string(o.Terms) != "null" {
		v.Terms = o.Terms
		if t, err := client.ParseTerms(o.Terms); err == nil {
			v.AmountCents = &t.AmountCents
		}
	}
	return v
}
