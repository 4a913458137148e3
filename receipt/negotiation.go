package receipt

import (
	"sync"

	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/wire"
)

// ClaimsOf is what the receipt of an ended negotiation attests
// (DELEGATION.md "Receipts"): parties, ending, arena, times, the transcript's
// last seq and head hash, and the deal's terms and offer hash. It is
// deterministic (iat is ended_at, jti the negotiation id), so every node
// and every replay signs the same token.
func ClaimsOf(st *negotiation.State) Claims {
	c := Claims{
		NegotiationID: st.ID, Brand: st.Brand.AgentID, Bouncer: st.Bouncer.AgentID, Status: st.Status,
		Arena: st.Arena, StartedAt: wire.Time(st.StartedAt), EndedAt: wire.Time(st.EndedAt),
		LastSeq: st.LastSeq, HeadHash: st.HeadHash, IssuedAt: st.EndedAt, JTI: st.ID,
	}
	if st.Status == negotiation.StatusDeal {
		c.Terms, c.OfferHash = st.DealTerms, st.DealOfferHash
	}
	return c
}

// Signs reports whether a negotiation in st has a receipt: it ended in
// the room (deal, walked, turn_missed, expired), not in the lobby.
func Signs(st *negotiation.State) bool {
	return st.Ended() && st.Status != negotiation.StatusDeclined
}

// Cache signs receipts and keeps the most recent ones (a receipt is signed
// once per negotiation and sent to every socket of its room): at most Size
// tokens, the oldest dropped first. Safe for concurrent use.
type Cache struct {
	key  Key
	size int

	mu    sync.Mutex
	toks  map[string]string
	order []string // negotiation ids, oldest first
}

// DefaultCacheSize is how many receipts a Cache keeps.
const DefaultCacheSize = 4096

// NewCache returns a cache signing with k that keeps size receipts
// (DefaultCacheSize when size <= 0).
func NewCache(k Key, size int) *Cache {
	if size <= 0 {
		size = DefaultCacheSize
	}
	return &Cache{key: k, size: size, toks: map[string]string{}}
}

// Key is the signing key.
func (c *Cache) Key() Key { return c.key }

// Receipt returns the receipt of st, signing it if it is not cached.
// Errors: those of Sign (claims out of shape).
func (c *Cache) Receipt(st *negotiation.State) (string, error) {
	if tok, ok := c.Cached(st.ID); ok {
		return tok, nil
	}
	tok, err := Sign(c.key, ClaimsOf(st))
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.toks[st.ID]; !ok {
		c.toks[st.ID] = tok
		c.order = append(c.order, st.ID)
		if len(c.order) > c.size {
			delete(c.toks, c.order[0])
			c.order = append(c.order[:0:0], c.order[1:]...)
		}
	}
	return tok, nil
}

// Cached returns the cached receipt of a negotiation, if any.
func (c *Cache) Cached(negotiationID string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	tok, ok := c.toks[negotiationID]
	return tok, ok
}

// Len is how many receipts are cached.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.toks)
}
