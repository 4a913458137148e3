package venue_test

// A check of the receipt log written the way a third party would, from
// PROTOCOL.md "The receipt log" alone: the functions below use only the
// standard library, github.com/transparency-dev/merkle and
// golang.org/x/mod/sumdb/note, no code of this module.

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"
	"golang.org/x/mod/sumdb/note"
)

type tpCheckpoint struct {
	size uint64
	root []byte
}

func tpGet(base, path string, out any) ([]byte, error) {
	resp, err := http.Get(base + path)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	if out != nil {
		return b, json.Unmarshal(b, out)
	}
	return b, nil
}

// tpOpen fetches the checkpoint and opens it with the pinned key.
func tpOpen(base, pinned string) (tpCheckpoint, error) {
	msg, err := tpGet(base, "/v1/log/checkpoint", nil)
	if err != nil {
		return tpCheckpoint{}, err
	}
	v, err := note.NewVerifier(pinned)
	if err != nil {
		return tpCheckpoint{}, err
	}
	n, err := note.Open(msg, note.VerifierList(v))
	if err != nil {
		return tpCheckpoint{}, err
	}
	lines := strings.Split(n.Text, "\n")
	if len(lines) < 4 || lines[0] != strings.Split(pinned, "+")[0] {
		return tpCheckpoint{}, errors.New("checkpoint text is not origin, size, root")
	}
	size, err := strconv.ParseUint(lines[1], 10, 64)
	if err != nil {
		return tpCheckpoint{}, err
	}
	root, err := base64.StdEncoding.DecodeString(lines[2])
	return tpCheckpoint{size: size, root: root}, err
}

// tpIncluded checks the receipt of negID is in the checkpoint's tree.
func tpIncluded(base, negID string, cp tpCheckpoint) error {
	var rec struct {
		Receipt string `json:"receipt"`
	}
	if _, err := tpGet(base, "/v1/negotiations/"+negID+"/receipt", &rec); err != nil {
		return err
	}
	var p struct {
		LeafIndex uint64   `json:"leaf_index"`
		TreeSize  uint64   `json:"tree_size"`
		Hashes    [][]byte `json:"hashes"`
	}
	if _, err := tpGet(base, fmt.Sprintf("/v1/log/proof/inclusion?negotiation_id=%s&tree_size=%d", negID, cp.size), &p); err != nil {
		return err
	}
	h := rfc6962.DefaultHasher
	return proof.VerifyInclusion(h, p.LeafIndex, cp.size, h.HashLeaf([]byte(rec.Receipt)), p.Hashes, cp.root)
}

// tpConsistent checks the newer checkpoint extends the kept one.
func tpConsistent(base string, kept, newer tpCheckpoint) error {
	var p struct {
		Hashes [][]byte `json:"hashes"`
	}
	if _, err := tpGet(base, fmt.Sprintf("/v1/log/proof/consistency?first=%d&second=%d", kept.size, newer.size), &p); err != nil {
		return err
	}
	return proof.VerifyConsistency(rfc6962.DefaultHasher, kept.size, newer.size, p.Hashes, kept.root, newer.root)
}

// TestThirdPartyLogCheck: deal, checkpoint, note signature, inclusion
// proof, a second deal, consistency proof, by the functions above.
func TestThirdPartyLogCheck(t *testing.T) {
	t.Parallel()
	v := newE2E(t)
	var info struct {
		Key string `json:"log_verifier_key"`
	}
	if _, err := tpGet(v.url, "/v1/info", &info); err != nil {
		t.Fatal(err)
	}
	deal := func() string {
		_, _, negID, b, k := v.live(false)
		b.send(`{"type":"propose_terms","terms":{"amount_usd":900,"sends":1}}`)
		b.expect("message_ack")
		k.expect("negotiation_message")
		k.send(`{"type":"accept"}`)
		k.expect("message_ack")
		k.expect("negotiation_ended")
		logIndexOf(t, v.url, negID) // within a few seconds of the ending
		return negID
	}
	first := deal()
	kept, err := tpOpen(v.url, info.Key)
	if err != nil {
		t.Fatal(err)
	}
	if err := tpIncluded(v.url, first, kept); err != nil {
		t.Fatal(err)
	}
	second := deal()
	checkpointAtLeast(t, v.url, info.Key, 2)
	newer, err := tpOpen(v.url, info.Key)
	if err != nil {
		t.Fatal(err)
	}
	if err := tpIncluded(v.url, second, newer); err != nil {
		t.Fatal(err)
	}
	if err := tpConsistent(v.url, kept, newer); err != nil {
		t.Fatal(err)
	}
	if kept.size != 1 || newer.size != 2 {
		t.Fatalf("sizes %d then %d", kept.size, newer.size)
	}
	// The pinned key is what makes it a check: another key refuses.
	if _, err := tpOpen(v.url, "venue.example/log+479fc194+AQOhB7/zzhC+HXDdGOdLwJln5NYwm6UNXx3chmQSVTG4"); err == nil {
		t.Fatal("the checkpoint opened with another key")
	}
}
