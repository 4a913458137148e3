package receiptlog

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/transparency-dev/merkle/proof"
)

// ErrProof is wrapped by every failed verification of a proof or of the
// entries against a checkpoint.
var ErrProof = errors.New("receiptlog: proof does not verify")

// InclusionProof is the body of GET /v1/log/proof/inclusion. Hashes
// marshal as standard base64 with padding.
type InclusionProof struct {
	LeafIndex int64    `json:"leaf_index"`
	TreeSize  int64    `json:"tree_size"`
	Hashes    [][]byte `json:"hashes"`
}

// ConsistencyProof is the body of GET /v1/log/proof/consistency.
type ConsistencyProof struct {
	First  int64    `json:"first"`
	Second int64    `json:"second"`
	Hashes [][]byte `json:"hashes"`
}

// VerifyInclusion checks that receipt is leaf p.LeafIndex of the tree cp
// commits to (p.TreeSize must be cp.Size), with merkle's verifier.
func VerifyInclusion(receipt string, p InclusionProof, cp Checkpoint) error {
	if p.TreeSize != cp.Size {
		return fmt.Errorf("%w: proof for a tree of %d entries, checkpoint of %d", ErrProof, p.TreeSize, cp.Size)
	}
	if p.LeafIndex < 0 || p.LeafIndex >= p.TreeSize {
		return fmt.Errorf("%w: leaf %d outside a tree of %d", ErrProof, p.LeafIndex, p.TreeSize)
	}
	if err := proof.VerifyInclusion(Hasher, uint64(p.LeafIndex), uint64(p.TreeSize), LeafHash(receipt), p.Hashes, cp.Root); err != nil {
		return fmt.Errorf("%w: inclusion of leaf %d in %d: %w", ErrProof, p.LeafIndex, p.TreeSize, err)
	}
	return nil
}

// VerifyConsistency checks that the tree of newer extends the tree of
// older (same origin, newer not smaller) with merkle's verifier.
func VerifyConsistency(older, newer Checkpoint, hashes [][]byte) error {
	if older.Origin != newer.Origin {
		return fmt.Errorf("%w: origin %q, was %q", ErrProof, newer.Origin, older.Origin)
	}
	if newer.Size < older.Size {
		return fmt.Errorf("%w: the log shrank from %d to %d entries", ErrProof, older.Size, newer.Size)
	}
	if newer.Size == older.Size {
		if !bytes.Equal(older.Root, newer.Root) {
			return fmt.Errorf("%w: two roots for a tree of %d entries (a fork)", ErrProof, newer.Size)
		}
		return nil
	}
	if err := proof.VerifyConsistency(Hasher, uint64(older.Size), uint64(newer.Size), hashes, older.Root, newer.Root); err != nil {
		return fmt.Errorf("%w: consistency of %d with %d (a fork): %w", ErrProof, older.Size, newer.Size, err)
	}
	return nil
}

// RootOf recomputes the root hash of the receipts in order.
func RootOf(receipts []string) []byte {
	var t Tree
	for _, r := range receipts {
		t.Append(r)
	}
	root, _ := t.Root(t.Size()) // size in range: cannot fail
	return root
}

// VerifyRoot checks that the root of receipts (the whole log, index 0
// first) is cp's.
func VerifyRoot(receipts []string, cp Checkpoint) error {
	if int64(len(receipts)) != cp.Size {
		return fmt.Errorf("%w: %d entries, the checkpoint has %d", ErrProof, len(receipts), cp.Size)
	}
	if root := RootOf(receipts); !bytes.Equal(root, cp.Root) {
		return fmt.Errorf("%w: the entries' root is not the checkpoint's: an entry was changed, dropped or reordered", ErrProof)
	}
	return nil
}
