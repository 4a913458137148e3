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
// tokens, the oldest dropped first. Only a committed state's receipt
// belongs in it (Receipt); a state not yet committed is signed with Sign.
// Safe for concurrent use.
type Cache struct {
	key  Key
	size int

	mu    sync.Mutex
	toks  map[string]cached
	order []string // negotiation ids, oldest first
}

// cached is a kept receipt and the transcript head it was signed over.
type cached struct {
	tok      string
	lastSeq  int64
	headHash string
}

// DefaultCacheSize is how many receipts a Cache keeps.
const DefaultCacheSize = 4096

// NewCache returns a cache signing with k that keeps size receipts
// (DefaultCacheSize when size <= 0).
func NewCache(k Key, size int) *Cache {
	if size <= 0 {
		size = DefaultCacheSize
	}
	return &Cache{key: k, size: size, toks: map[string]cached{}}
}

// Key is the signing key.
func (c *Cache) Key() Key { return c.key }

// Receipt returns the receipt of st, a committed state, signing and
// keeping it if the cache holds none over st's transcript head (last seq
// and head hash): a kept receipt over another head is replaced. Errors:
// those of Sign (claims out of shape).
func (c *Cache) Receipt(st *negotiation.State) (string, error) {
	c.mu.Lock()
	k, ok := c.toks[st.ID]
	c.mu.Unlock()
	if ok && k.lastSeq == st.LastSeq && k.headHash == st.HeadHash {
		return k.tok, nil
	}
	tok, err := c.Sign(st)
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.toks[st.ID]; !ok {
		c.order = append(c.order, st.ID)
		if len(c.order) > c.size {
			delete(c.toks, c.order[0])
			c.order = append(c.order[:0:0], c.order[1:]...)
		}
	}
	c.toks[st.ID] = cached{tok: tok, lastSeq: st.LastSeq, headHash: st.HeadHash}
	return tok, nil
}

// Sign returns the receipt of st without keeping it: for a state whose
// step has not committed yet (a store's transaction), which may never
// land; a receipt kept from it would be served for whatever step did.
// Errors: those of the package's Sign (claims out of shape).
func (c *Cache) Sign(st *negotiation.State) (string, error) {
	return Sign(c.key, ClaimsOf(st))
}

// Cached returns the kept receipt of a negotiation, if any.
func (c *Cache) Cached(negotiationID string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k, ok := c.toks[negotiationID]
	return k.tok, ok
}

// Len is how many receipts are cached.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.toks)
}
