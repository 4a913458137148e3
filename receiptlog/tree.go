// Package receiptlog is the venue's public append-only log of receipts
// (PROTOCOL.md "The receipt log"): every receipt the venue signs is a leaf
// (its compact JWS, ASCII bytes) of one RFC 6962 / RFC 9162 Merkle tree,
// shared by every node; signed checkpoints (C2SP tlog-checkpoint as a signed
// note, golang.org/x/mod/sumdb/note) and inclusion and consistency proofs
// (github.com/transparency-dev/merkle) let anyone check that the venue shows
// everyone the same receipts and never drops or rewrites one.
//
// The tree, checkpoints and verification here are pure; Store keeps the
// entries (NewMemory, or pglog on Postgres) and Log sequences them.
package receiptlog

import (
	"errors"
	"fmt"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
)

// Hasher is the log's hashing: RFC 6962 with SHA-256 (leaf
// SHA-256(0x00 || data), node SHA-256(0x01 || left || right)).
var Hasher = rfc6962.DefaultHasher

// LeafHash is the leaf hash of a receipt (its compact JWS).
func LeafHash(receipt string) []byte { return Hasher.HashLeaf([]byte(receipt)) }

// ErrSize is wrapped by Tree's errors about sizes and indexes out of range.
var ErrSize = errors.New("receiptlog: size out of range")

// Tree holds every node hash of the perfect subtrees of a log's leaves, so
// the root of any size and any proof is read in O(log n) hashes. Its memory
// is about 64 bytes per leaf. Not safe for concurrent use.
type Tree struct {
	levels [][][]byte // levels[0] leaf hashes; levels[k][i] = node (k, i)
}

// Size is the number of leaves.
func (t *Tree) Size() int64 {
	if len(t.levels) == 0 {
		return 0
	}
	return int64(len(t.levels[0]))
}

// AppendHash adds a leaf by its hash.
func (t *Tree) AppendHash(h []byte) {
	if len(t.levels) == 0 {
		t.levels = [][][]byte{nil}
	}
	t.levels[0] = append(t.levels[0], h)
	for k := 0; len(t.levels[k])%2 == 0; k++ {
		n := len(t.levels[k])
		parent := Hasher.HashChildren(t.levels[k][n-2], t.levels[k][n-1])
		if k+1 == len(t.levels) {
			t.levels = append(t.levels, nil)
		}
		t.levels[k+1] = append(t.levels[k+1], parent)
	}
}

// Append adds a receipt as a leaf.
func (t *Tree) Append(receipt string) { t.AppendHash(LeafHash(receipt)) }

// Truncate drops the leaves from size on (a sequencing transaction that
// did not commit).
func (t *Tree) Truncate(size int64) {
	if size >= t.Size() {
		return
	}
	for k := range t.levels {
		n := int(size >> k)
		if n < len(t.levels[k]) {
			t.levels[k] = t.levels[k][:n]
		}
	}
}

// node is the hash of the perfect subtree node id, which must be complete
// in the tree.
func (t *Tree) node(id compact.NodeID) ([]byte, error) {
	if int(id.Level) >= len(t.levels) || id.Index >= uint64(len(t.levels[id.Level])) {
		return nil, fmt.Errorf("%w: node %d/%d not in a tree of %d leaves", ErrSize, id.Level, id.Index, t.Size())
	}
	return t.levels[id.Level][id.Index], nil
}

// Root is the root hash of the first size leaves (the empty root for 0).
func (t *Tree) Root(size int64) ([]byte, error) {
	if size < 0 || size > t.Size() {
		return nil, fmt.Errorf("%w: root of %d in a tree of %d", ErrSize, size, t.Size())
	}
	if size == 0 {
		return Hasher.EmptyRoot(), nil
	}
	// The perfect subtrees covering [0, size), largest first, folded from
	// the right as RFC 6962's MTH does.
	ids := compact.RangeNodes(0, uint64(size), nil)
	root, err := t.node(ids[len(ids)-1])
	if err != nil {
		return nil, err
	}
	for i := len(ids) - 2; i >= 0; i-- {
		h, err := t.node(ids[i])
		if err != nil {
			return nil, err
		}
		root = Hasher.HashChildren(h, root)
	}
	return root, nil
}

// InclusionProof proves leaf index in the tree of size leaves (RFC 9162
// section 2.1.3), as proof.VerifyInclusion takes it.
func (t *Tree) InclusionProof(index, size int64) ([][]byte, error) {
	if index < 0 || size > t.Size() || index >= size {
		return nil, fmt.Errorf("%w: leaf %d in a tree of %d (of %d leaves)", ErrSize, index, size, t.Size())
	}
	nodes, err := proof.Inclusion(uint64(index), uint64(size))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSize, err)
	}
	return t.rehash(nodes)
}

// ConsistencyProof proves the tree of first leaves is a prefix of the tree
// of second leaves (RFC 9162 section 2.1.4), as proof.VerifyConsistency
// takes it.
func (t *Tree) ConsistencyProof(first, second int64) ([][]byte, error) {
	if first < 0 || first > second || second > t.Size() {
		return nil, fmt.Errorf("%w: consistency %d to %d in a tree of %d", ErrSize, first, second, t.Size())
	}
	nodes, err := proof.Consistency(uint64(first), uint64(second))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSize, err)
	}
	return t.rehash(nodes)
}

func (t *Tree) rehash(nodes proof.Nodes) ([][]byte, error) {
	hashes := make([][]byte, len(nodes.IDs))
	for i, id := range nodes.IDs {
		h, err := t.node(id)
		if err != nil {
			return nil, err
		}
		hashes[i] = h
	}
	return nodes.Rehash(hashes, Hasher.HashChildren)
}
