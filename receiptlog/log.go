package receiptlog

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/venuehq/venue/clock"
	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/receipt"
	"github.com/venuehq/venue/wire"
)

// Defaults of Config.
const (
	DefaultBatch = 500
	// DefaultPoll is how often a node looks for queued receipts when
	// nothing woke it (endings on other nodes, a node that failed before
	// appending): a receipt is in the log within a few seconds.
	DefaultPoll = time.Second
	// MaxEntries is the most entries one GET /v1/log/entries returns.
	MaxEntries = 1000
)

// DefaultOrigin is the log's origin when --log-origin is not given: the
// public URL's host and path without the scheme, then "/log"
// ("https://venue.example/" gives "venue.example/log").
func DefaultOrigin(publicURL string) string {
	u, err := url.Parse(publicURL)
	if err != nil || u.Host == "" {
		return strings.TrimRight(publicURL, "/") + "/log"
	}
	return u.Host + strings.TrimRight(u.Path, "/") + "/log"
}

// Config configures a Log.
type Config struct {
	Store Store
	// Origin names the log (the checkpoint's first line and the log key's
	// name), see DefaultOrigin.
	Origin string
	// Sealer seals the log key where it is stored, as the receipt key
	// (nil: in the clear).
	Sealer *receipt.Sealer
	// Receipt signs the receipt of an ended negotiation (the node's
	// receipt.Cache).
	Receipt func(st *negotiation.State) (string, error)
	Clock   clock.Clock
	Logger  *slog.Logger
	Batch   int           // entries per append (DefaultBatch)
	Poll    time.Duration // DefaultPoll
	// AdoptOrigin says Origin is only a default (nobody chose it): when the
	// log's latest checkpoint names the log otherwise, New takes that name
	// instead of refusing with an *OriginError.
	AdoptOrigin bool
}

// OriginError is New's and Sequence's refusal when the log's latest
// checkpoint names the log (Log) otherwise than this node would (Node):
// every node of a venue signs its checkpoints under one origin
// (PROTOCOL.md "The receipt log"), or verifiers that pinned the log key
// by its name see the log change keys whenever another node signs.
type OriginError struct {
	Log, Node string
}

func (e *OriginError) Error() string {
	return fmt.Sprintf("receiptlog: the log's checkpoints name it %q, this node would name it %q", e.Log, e.Node)
}

// CheckpointOrigin returns the origin a signed checkpoint names (its first
// line), "" when it has none.
func CheckpointOrigin(signed []byte) string {
	line, _, ok := bytes.Cut(signed, []byte("\n"))
	if !ok {
		return ""
	}
	return string(line)
}

// signingKey is a log key opened for use.
type signingKey struct {
	Key
	priv ed25519.PrivateKey
	vkey string
}

// Log is one node's view of the shared receipt log: it appends queued
// receipts (Run), keeps the Merkle tree of the entries in memory for
// proofs, and serves checkpoints, proofs and entries. Safe for concurrent
// use.
type Log struct {
	cfg  Config
	wake chan struct{}

	seqMu sync.Mutex // one sequencing at a time on this node
	mu    sync.Mutex // guards tree and keys
	tree  Tree
	keys  []signingKey // current first
}

// New opens the log's keys (creating the first when the store has none)
// and returns the node's Log; Run appends.
func New(ctx context.Context, cfg Config) (*Log, error) {
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultBatch
	}
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Origin == "" || strings.ContainsAny(cfg.Origin, "+ \t\n") {
		return nil, fmt.Errorf("receiptlog: origin %q: want a non-empty name without spaces or '+'", cfg.Origin)
	}
	head, err := cfg.Store.Head(ctx)
	if err != nil {
		return nil, fmt.Errorf("receiptlog: head: %w", err)
	}
	if stored := CheckpointOrigin(head.Checkpoint); stored != "" && stored != cfg.Origin {
		if !cfg.AdoptOrigin {
			return nil, &OriginError{Log: stored, Node: cfg.Origin}
		}
		cfg.Logger.Info("receipt log: keeping the origin its checkpoints carry", "origin", stored, "default", cfg.Origin)
		cfg.Origin = stored
	}
	l := &Log{cfg: cfg, wake: make(chan struct{}, 1)}
	if err := l.loadKeys(ctx); err != nil {
		return nil, err
	}
	return l, nil
}

// Origin is the log's origin.
func (l *Log) Origin() string { return l.cfg.Origin }

// loadKeys reads the log keys from the store.
func (l *Log) loadKeys(ctx context.Context) error {
	stored, err := l.cfg.Store.Keys(ctx, func() ([]byte, error) {
		k, err := receipt.NewKey()
		if err != nil {
			return nil, err
		}
		return l.cfg.Sealer.Seal(k)
	})
	if err != nil {
		return fmt.Errorf("receiptlog: log keys: %w", err)
	}
	keys := make([]signingKey, 0, len(stored))
	for _, sk := range stored {
		k, err := receipt.Open(sk.Sealed, l.cfg.Sealer)
		if err != nil {
			return fmt.Errorf("receiptlog: log key %d: %w", sk.ID, err)
		}
		vkey, err := VerifierKey(l.cfg.Origin, k.Public())
		if err != nil {
			return err
		}
		keys = append(keys, signingKey{Key: sk, priv: k.Private, vkey: vkey})
	}
	l.mu.Lock()
	l.keys = keys
	l.mu.Unlock()
	return nil
}

// VerifierKey is one log key as GET /v1/info lists it.
type VerifierKeyInfo struct {
	// Key is the note verifier key (see VerifierKey).
	Key string `json:"key"`
	// TreeSize is, for a retired key, the largest tree size it signed.
	TreeSize int64 `json:"tree_size,omitempty"`
	// RetiredAt is when the key was retired, as the wire writes times
	// (wire.Time: RFC 3339, UTC, milliseconds).
	RetiredAt string `json:"retired_at,omitempty"`
}

// VerifierKeys returns the current log key's verifier key and the retired
// ones (newest first) with the tree size each signed up to.
func (l *Log) VerifierKeys() (current string, retired []VerifierKeyInfo) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, k := range l.keys {
		if i == 0 {
			current = k.vkey
			continue
		}
		retired = append(retired, VerifierKeyInfo{Key: k.vkey, TreeSize: k.RetiredSize, RetiredAt: wire.Time(k.RetiredAt)})
	}
	return current, retired
}

// Wake asks Run to append now (an ending was committed on this node).
func (l *Log) Wake() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Run appends queued receipts until ctx is done: when woken, and every
// Poll. Failures are logged and retried on the next round.
func (l *Log) Run(ctx context.Context) error {
	for {
		for {
			n, err := l.Sequence(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				l.cfg.Logger.Warn("receipt log: append", "err", err)
				break
			}
			if n < l.cfg.Batch {
				break
			}
		}
		t := l.cfg.Clock.NewTimer(l.cfg.Poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-l.wake:
		case <-t.C():
		}
		t.Stop()
	}
}

// Sequence appends one batch of queued receipts (at most Config.Batch)
// under the log's lock and signs a checkpoint of the new size; it also
// signs one when the latest is missing or by a key since retired. It
// returns how many queued negotiations it took off the queue.
func (l *Log) Sequence(ctx context.Context) (int, error) {
	l.seqMu.Lock()
	defer l.seqMu.Unlock()
	if err := l.loadKeys(ctx); err != nil {
		return 0, err
	}
	var took int
	var base int64 = -1
	err := l.cfg.Store.Sequence(ctx, func(tx Tx) error {
		head := tx.Head()
		if stored := CheckpointOrigin(head.Checkpoint); stored != "" && stored != l.cfg.Origin {
			return &OriginError{Log: stored, Node: l.cfg.Origin} // another node named it first
		}
		if err := l.sync(ctx, head.Size); err != nil {
			return err
		}
		q, err := tx.Queued(l.cfg.Batch)
		if err != nil {
			return err
		}
		l.mu.Lock()
		key := l.keys[0]
		l.mu.Unlock()
		if len(q) == 0 && head.Checkpoint != nil && head.KeyID == key.ID {
			return nil
		}
		ids := make([]string, len(q))
		for i, e := range q {
			ids[i] = e.NegotiationID
		}
		logged, err := tx.Logged(ids)
		if err != nil {
			return err
		}
		var entries []Entry
		seen := map[string]bool{}
		for _, e := range q {
			if e.State == nil || logged[e.NegotiationID] || seen[e.NegotiationID] || !receipt.Signs(e.State) {
				continue
			}
			tok, err := l.cfg.Receipt(e.State)
			if err != nil {
				return fmt.Errorf("receiptlog: receipt of %s: %w", e.NegotiationID, err)
			}
			seen[e.NegotiationID] = true
			entries = append(entries, Entry{Index: head.Size + int64(len(entries)), NegotiationID: e.NegotiationID, Receipt: tok})
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		base = head.Size
		for _, e := range entries {
			l.tree.Append(e.Receipt)
		}
		size := head.Size + int64(len(entries))
		root, err := l.tree.Root(size)
		if err != nil {
			return err
		}
		cp, err := SignCheckpoint(Checkpoint{Origin: l.cfg.Origin, Size: size, Root: root}, key.priv)
		if err != nil {
			return err
		}
		took = len(q)
		return tx.Commit(entries, ids, Head{Size: size, Checkpoint: cp, KeyID: key.ID})
	})
	if err != nil {
		if base >= 0 {
			l.mu.Lock()
			l.tree.Truncate(base)
			l.mu.Unlock()
		}
		return 0, fmt.Errorf("receiptlog: sequence: %w", err)
	}
	return took, nil
}

// sync brings the node's tree up to size leaves from the store's entries.
func (l *Log) sync(ctx context.Context, size int64) error {
	l.mu.Lock()
	have := l.tree.Size()
	l.mu.Unlock()
	for have < size {
		es, err := l.cfg.Store.Entries(ctx, have, min(size, have+10*MaxEntries))
		if err != nil {
			return err
		}
		if len(es) == 0 {
			return fmt.Errorf("receiptlog: the store has no entry %d below its size %d", have, size)
		}
		l.mu.Lock()
		if l.tree.Size() != have {
			l.mu.Unlock()
			have = l.tree.Size()
			continue
		}
		for _, e := range es {
			if e.Index != l.tree.Size() {
				l.mu.Unlock()
				return fmt.Errorf("receiptlog: the store's entry %d is out of order at %d", e.Index, l.tree.Size())
			}
			l.tree.Append(e.Receipt)
		}
		have = l.tree.Size()
		l.mu.Unlock()
	}
	return nil
}

// Checkpoint returns the latest signed checkpoint and its size; nil before
// the first.
func (l *Log) Checkpoint(ctx context.Context) ([]byte, int64, error) {
	h, err := l.cfg.Store.Head(ctx)
	if err != nil {
		return nil, 0, err
	}
	return h.Checkpoint, h.Size, nil
}

// ErrBadRequest is wrapped by the errors of proofs and entries about their
// arguments (a size past the latest checkpoint, first > second, ...).
var ErrBadRequest = errors.New("receiptlog: bad request")

// treeSize checks size against the latest checkpoint (0: take its size)
// and brings the tree up to it.
func (l *Log) treeSize(ctx context.Context, size int64) (int64, error) {
	h, err := l.cfg.Store.Head(ctx)
	if err != nil {
		return 0, err
	}
	if size == 0 {
		size = h.Size
	}
	if size < 0 || size > h.Size {
		return 0, fmt.Errorf("%w: tree_size %d: the latest checkpoint has %d entries", ErrBadRequest, size, h.Size)
	}
	return size, l.sync(ctx, size)
}

// InclusionProof is the leaf index of a negotiation's receipt and its
// inclusion proof in the tree of treeSize leaves (0: the latest
// checkpoint's size). ErrNotFound when the receipt is not logged yet;
// ErrBadRequest when it is not in a tree of that size.
func (l *Log) InclusionProof(ctx context.Context, negotiationID string, treeSize int64) (index, size int64, hashes [][]byte, err error) {
	index, err = l.cfg.Store.Index(ctx, negotiationID)
	if err != nil {
		return 0, 0, nil, err
	}
	size, err = l.treeSize(ctx, treeSize)
	if err != nil {
		return 0, 0, nil, err
	}
	if index >= size {
		if treeSize == 0 {
			return 0, 0, nil, fmt.Errorf("%w: negotiation %s: not under a checkpoint yet", ErrNotFound, negotiationID)
		}
		return 0, 0, nil, fmt.Errorf("%w: entry %d is not in a tree of %d entries", ErrBadRequest, index, size)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	hashes, err = l.tree.InclusionProof(index, size)
	return index, size, hashes, err
}

// ConsistencyProof proves the tree of first entries is a prefix of the
// tree of second (both at most the latest checkpoint's size).
func (l *Log) ConsistencyProof(ctx context.Context, first, second int64) ([][]byte, error) {
	if first < 0 || second < 1 || first > second {
		return nil, fmt.Errorf("%w: want 0 <= first <= second, second >= 1 (first %d, second %d)", ErrBadRequest, first, second)
	}
	if _, err := l.treeSize(ctx, second); err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.tree.ConsistencyProof(first, second)
}

// Entries returns the entries start <= index < end, at most MaxEntries,
// no further than the latest checkpoint.
func (l *Log) Entries(ctx context.Context, start, end int64) ([]Entry, error) {
	if start < 0 || end <= start || end-start > MaxEntries {
		return nil, fmt.Errorf("%w: want 0 <= start < end, at most %d entries (start %d, end %d)", ErrBadRequest, MaxEntries, start, end)
	}
	h, err := l.cfg.Store.Head(ctx)
	if err != nil {
		return nil, err
	}
	end = min(end, h.Size)
	if start >= end {
		return []Entry{}, nil
	}
	es, err := l.cfg.Store.Entries(ctx, start, end)
	if err != nil {
		return nil, err
	}
	if es == nil {
		es = []Entry{}
	}
	return es, nil
}

// Index is the log index of a negotiation's receipt (ErrNotFound: not
// logged yet) and the receipt as logged.
func (l *Log) Index(ctx context.Context, negotiationID string) (int64, string, error) {
	i, err := l.cfg.Store.Index(ctx, negotiationID)
	if err != nil {
		return 0, "", err
	}
	es, err := l.cfg.Store.Entries(ctx, i, i+1)
	if err != nil {
		return 0, "", err
	}
	if len(es) != 1 {
		return 0, "", fmt.Errorf("receiptlog: entry %d of %s is missing", i, negotiationID)
	}
	return i, es[0].Receipt, nil
}

// Rotate makes a fresh log key current and retires the current one at the
// log's size (`venue rotate-log-key`). Every node picks it up at its next
// append; the next checkpoint is signed by the new key.
func Rotate(ctx context.Context, st Store, sealer *receipt.Sealer, now time.Time) (Key, error) {
	k, err := receipt.NewKey()
	if err != nil {
		return Key{}, err
	}
	sealed, err := sealer.Seal(k)
	if err != nil {
		return Key{}, err
	}
	return st.RotateKey(ctx, sealed, now)
}
