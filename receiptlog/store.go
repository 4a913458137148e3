package receiptlog

import (
	"context"
	"errors"
	"time"

	"github.com/venuehq/venue/negotiation"
)

// ErrNotFound: no entry for that negotiation (not logged yet, or never
// signed a receipt).
var ErrNotFound = errors.New("receiptlog: not found")

// Entry is one leaf of the log: its index (0 first) and the receipt, a
// compact JWS whose ASCII bytes are the leaf data.
type Entry struct {
	Index         int64  `json:"index"`
	NegotiationID string `json:"-"`
	Receipt       string `json:"receipt"`
}

// Head is the log's current size and its latest signed checkpoint (nil
// before the first), with the id of the log key that signed it.
type Head struct {
	Size       int64
	Checkpoint []byte
	KeyID      int64
}

// Key is one log signing key the venue has had, as stored (Sealed: a
// receipt.Sealer's PEM block, or PKCS#8 PEM in the clear).
type Key struct {
	ID        int64 // 1 for the first key, one more per rotation
	Sealed    []byte
	CreatedAt time.Time
	// RetiredAt is zero for the current key; RetiredSize is the largest
	// tree size a retired key signed a checkpoint for.
	RetiredAt   time.Time
	RetiredSize int64
}

// Queued is a negotiation waiting for its receipt to be logged, with its
// state (nil when the negotiation is gone: it is dropped from the queue).
type Queued struct {
	NegotiationID string
	State         *negotiation.State
}

// Store keeps the log: its entries, its head, its keys and the queue of
// ended negotiations whose receipts wait to be appended. Every node of a
// venue shares one. NewMemory is the embedded default; store/pglog keeps
// it in Postgres. Both pass logtest.Run.
type Store interface {
	// Sequence runs fn holding the log's one lock, shared by every node, so
	// appends never interleave and the log has no gaps. fn's Tx is valid
	// only during the call; Sequence commits what fn appended when fn
	// returns nil and discards it otherwise.
	Sequence(ctx context.Context, fn func(tx Tx) error) error
	// Entries returns the entries with start <= index < end (fewer when the
	// log is shorter), in index order.
	Entries(ctx context.Context, start, end int64) ([]Entry, error)
	// Index is the log index of a negotiation's receipt; ErrNotFound.
	Index(ctx context.Context, negotiationID string) (int64, error)
	// Head is the log's size and latest checkpoint.
	Head(ctx context.Context) (Head, error)
	// Keys returns the log keys, the current one first, then the retired
	// ones newest first; when there is none it stores create()'s as the
	// first (once, whichever node comes first).
	Keys(ctx context.Context, create func() ([]byte, error)) ([]Key, error)
	// RotateKey makes sealed the current key and retires the one before it
	// at the head's size, holding the sequencing lock so no checkpoint is
	// signed by the old key after that.
	RotateKey(ctx context.Context, sealed []byte, now time.Time) (Key, error)
	// Enqueue queues ended negotiations for the log (the memory store; on
	// Postgres a trigger on the negotiations table queues them in the
	// ending's own transaction and Enqueue does nothing).
	Enqueue(ctx context.Context, negotiationIDs ...string) error
}

// Tx is what Sequence's fn may do while it holds the lock.
type Tx interface {
	// Head is the log's head as of taking the lock.
	Head() Head
	// Queued returns up to limit queued negotiations, oldest first.
	Queued(limit int) ([]Queued, error)
	// Logged reports which of the ids already have an entry.
	Logged(ids []string) (map[string]bool, error)
	// Commit appends entries (their indexes must follow the head's size
	// without a gap), removes the ids done from the queue and sets the head
	// to head. Called at most once.
	Commit(entries []Entry, done []string, head Head) error
}
