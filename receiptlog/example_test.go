package receiptlog_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"github.com/venuehq/venue/receiptlog"
)

// The worked example of PROTOCOL.md "The receipt log" is what the code
// computes, and the document still says it.
func TestWorkedExample(t *testing.T) {
	t.Parallel()
	seed := make([]byte, 32)
	for i := range seed {
		seed[i] = byte(i)
	}
	priv := ed25519.NewKeyFromSeed(seed)
	vkey, err := receiptlog.VerifierKey("venue.example/log", priv.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	leaves := []string{"eyJhbGciOiJFZERTQSJ9.eyJuIjoxfQ.c2lnMQ", "eyJhbGciOiJFZERTQSJ9.eyJuIjoyfQ.c2lnMg"}
	var tree receiptlog.Tree
	var want []string
	want = append(want, vkey)
	for _, l := range leaves {
		tree.Append(l)
		want = append(want, "`"+l+"` | `"+hex.EncodeToString(receiptlog.LeafHash(l))+"`")
		root, _ := tree.Root(tree.Size())
		msg, err := receiptlog.SignCheckpoint(receiptlog.Checkpoint{Origin: "venue.example/log", Size: tree.Size(), Root: root}, priv)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(msg)), "\n") {
			if line != "" {
				want = append(want, "    "+line+"\n")
			}
		}
	}
	incl, _ := tree.InclusionProof(0, 2)
	cons, _ := tree.ConsistencyProof(1, 2)
	b64 := base64.StdEncoding.EncodeToString
	want = append(want,
		`{"leaf_index":0,"tree_size":2,"hashes":["`+b64(incl[0])+`"]}`,
		`{"first":1,"second":2,"hashes":["`+b64(cons[0])+`"]}`)
	doc, err := os.ReadFile("../PROTOCOL.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		if !strings.Contains(string(doc), w) {
			t.Errorf("PROTOCOL.md \"The receipt log\" does not say %q", w)
		}
	}
}
