package receiptlog_test

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
	"golang.org/x/mod/sumdb/note"

	"github.com/venuehq/venue/receiptlog"
)

// The tree's roots are merkle's compact range roots, and its proofs verify
// with merkle's verifier, for every size and index up to 70.
func TestTreeMatchesMerkle(t *testing.T) {
	t.Parallel()
	var tree receiptlog.Tree
	rf := &compact.RangeFactory{Hash: receiptlog.Hasher.HashChildren}
	r := rf.NewEmptyRange(0)
	roots := [][]byte{receiptlog.Hasher.EmptyRoot()}
	var leaves [][]byte
	for i := range 70 {
		leaf := fmt.Sprintf("receipt-%d", i)
		tree.Append(leaf)
		leaves = append(leaves, receiptlog.LeafHash(leaf))
		if err := r.Append(receiptlog.LeafHash(leaf), nil); err != nil {
			t.Fatal(err)
		}
		want, err := r.GetRootHash(nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tree.Root(tree.Size())
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("root of %d: %x, want %x (%v)", tree.Size(), got, want, err)
		}
		roots = append(roots, want)
	}
	for size := int64(1); size <= 70; size++ {
		for i := int64(0); i < size; i++ {
			p, err := tree.InclusionProof(i, size)
			if err != nil {
				t.Fatal(err)
			}
			if err := proof.VerifyInclusion(receiptlog.Hasher, uint64(i), uint64(size), leaves[i], p, roots[size]); err != nil {
				t.Fatalf("inclusion %d in %d: %v", i, size, err)
			}
		}
		for first := int64(1); first <= size; first++ {
			p, err := tree.ConsistencyProof(first, size)
			if err != nil {
				t.Fatal(err)
			}
			if err := proof.VerifyConsistency(receiptlog.Hasher, uint64(first), uint64(size), p, roots[first], roots[size]); err != nil {
				t.Fatalf("consistency %d to %d: %v", first, size, err)
			}
		}
	}
	tree.Truncate(33)
	if got, _ := tree.Root(33); tree.Size() != 33 || !bytes.Equal(got, roots[33]) {
		t.Fatalf("after truncate: size %d root %x", tree.Size(), got)
	}
	tree.Append("receipt-33")
	if got, _ := tree.Root(34); !bytes.Equal(got, roots[34]) {
		t.Fatal("append after truncate: wrong root")
	}
	if _, err := tree.InclusionProof(34, 34); !errors.Is(err, receiptlog.ErrSize) {
		t.Fatalf("index past size: %v", err)
	}
}

func TestCheckpointSignOpen(t *testing.T) {
	t.Parallel()
	pub, priv, _ := ed25519.GenerateKey(nil)
	cp := receiptlog.Checkpoint{Origin: "venue.example/log", Size: 12, Root: bytes.Repeat([]byte{7}, 32)}
	msg, err := receiptlog.SignCheckpoint(cp, priv)
	if err != nil {
		t.Fatal(err)
	}
	vkey, err := receiptlog.VerifierKey(cp.Origin, pub)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := note.NewVerifier(vkey)
	n, err := note.Open(msg, note.VerifierList(v))
	if err != nil {
		t.Fatal(err)
	}
	if n.Text != "venue.example/log\n12\nBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=\n" {
		t.Fatalf("text %q", n.Text)
	}
	got, err := receiptlog.OpenCheckpoint(msg, vkey)
	if err != nil || got.Size != 12 || !bytes.Equal(got.Root, cp.Root) {
		t.Fatalf("%+v %v", got, err)
	}
	_, other, _ := ed25519.GenerateKey(nil)
	otherKey, _ := receiptlog.VerifierKey(cp.Origin, other.Public().(ed25519.PublicKey))
	if _, err := receiptlog.OpenCheckpoint(msg, otherKey); !errors.Is(err, receiptlog.ErrCheckpoint) {
		t.Fatalf("other key: %v", err)
	}
	bad := bytes.Replace(msg, []byte("\n12\n"), []byte("\n13\n"), 1)
	if _, err := receiptlog.OpenCheckpoint(bad, vkey); !errors.Is(err, receiptlog.ErrCheckpoint) {
		t.Fatalf("changed size: %v", err)
	}
	// Signed by a key named otherwise than the origin.
	wrongName, _ := receiptlog.SignCheckpoint(receiptlog.Checkpoint{Origin: "elsewhere/log", Size: 1, Root: cp.Root}, priv)
	elseKey, _ := receiptlog.VerifierKey("elsewhere/log", pub)
	if _, err := receiptlog.OpenCheckpoint(wrongName, elseKey); err != nil {
		t.Fatalf("own origin: %v", err)
	}
}

func TestParseCheckpoint(t *testing.T) {
	t.Parallel()
	root := "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc="
	for _, tc := range []struct {
		text string
		ok   bool
	}{
		{"o/log\n0\n" + root + "\n", true},
		{"o/log\n5\n" + root + "\next\n", true},
		{"o/log\n5\n" + root, false},
		{"\n5\n" + root + "\n", false},
		{"o/log\n-1\n" + root + "\n", false},
		{"o/log\n05\n" + root + "\n", false},
		{"o/log\n+5\n" + root + "\n", false},
		{"o/log\n5\n" + strings.TrimSuffix(root, "=") + "\n", false},
		{"o/log\n5\nAAAA\n", false},
		{"o/log\n5\n", false},
	} {
		_, err := receiptlog.ParseCheckpoint(tc.text)
		if (err == nil) != tc.ok {
			t.Errorf("%q: %v", tc.text, err)
		}
		if err != nil && !errors.Is(err, receiptlog.ErrCheckpoint) {
			t.Errorf("%q: %v does not wrap ErrCheckpoint", tc.text, err)
		}
	}
}

func FuzzParseCheckpoint(f *testing.F) {
	f.Add("o/log\n5\nBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=\n")
	f.Add("o/log\n0\n\n")
	f.Fuzz(func(t *testing.T, text string) {
		cp, err := receiptlog.ParseCheckpoint(text)
		if err != nil {
			return
		}
		again, err := receiptlog.ParseCheckpoint(cp.Text())
		if err != nil || again.Size != cp.Size || again.Origin != cp.Origin || !bytes.Equal(again.Root, cp.Root) {
			t.Fatalf("%q does not round-trip: %v", text, err)
		}
	})
}

func TestDefaultOrigin(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"https://venue.example/":      "venue.example/log",
		"http://127.0.0.1:8080":       "127.0.0.1:8080/log",
		"https://x.example/sub/path/": "x.example/sub/path/log",
	} {
		if got := receiptlog.DefaultOrigin(in); got != want {
			t.Errorf("%s: %q, want %q", in, got, want)
		}
	}
}
