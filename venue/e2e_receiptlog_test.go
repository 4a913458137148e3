package venue_test

import (
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/venuehq/venue/receiptlog"
)

// logGet fetches a receipt log route and returns its status and body.
func logGet(t *testing.T, base, path string) (int, []byte) {
	t.Helper()
	resp, err := apiClient(t).Get(base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// logIndexOf waits until the receipt of negID carries its log_index (the
// sequencer is woken by the ending) and returns the receipt and index.
func logIndexOf(t *testing.T, base, negID string) (string, int64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		code, b := logGet(t, base, "/v1/negotiations/"+negID+"/receipt")
		var r struct {
			Receipt  string `json:"receipt"`
			LogIndex *int64 `json:"log_index"`
		}
		if code == 200 {
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatal(err)
			}
			if r.LogIndex != nil {
				return r.Receipt, *r.LogIndex
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("receipt of %s never got a log_index: %d %s", negID, code, b)
		}
		time.Sleep(5 * time.Millisecond) // polls a condition another goroutine makes true
	}
}

// checkpointOf fetches and opens the checkpoint with the pinned key.
func checkpointOf(t *testing.T, base, vkey string) receiptlog.Checkpoint {
	t.Helper()
	code, msg := logGet(t, base, "/v1/log/checkpoint")
	if code != 200 {
		t.Fatalf("checkpoint: %d %s", code, msg)
	}
	cp, err := receiptlog.OpenCheckpoint(msg, vkey)
	if err != nil {
		t.Fatalf("%v\n%s", err, msg)
	}
	return cp
}

func verifierKey(t *testing.T, base string) string {
	t.Helper()
	_, b := logGet(t, base, "/v1/info")
	var info struct {
		Key    string `json:"log_verifier_key"`
		Origin string `json:"log_origin"`
	}
	if err := json.Unmarshal(b, &info); err != nil || info.Key == "" {
		t.Fatalf("info: %s %v", b, err)
	}
	if receiptlog.KeyName(info.Key) != info.Origin {
		t.Fatalf("key %q is not named by the origin %q", info.Key, info.Origin)
	}
	return info.Key
}

func inclusionOf(t *testing.T, base, negID string, size int64) receiptlog.InclusionProof {
	t.Helper()
	path := "/v1/log/proof/inclusion?negotiation_id=" + negID
	if size > 0 {
		path += "&tree_size=" + strconv.FormatInt(size, 10)
	}
	code, b := logGet(t, base, path)
	if code != 200 {
		t.Fatalf("inclusion: %d %s", code, b)
	}
	var p receiptlog.InclusionProof
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// checkpointAtLeast waits for a checkpoint of at least size entries.
func checkpointAtLeast(t *testing.T, base, vkey string, size int64) receiptlog.Checkpoint {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		cp := checkpointOf(t, base, vkey)
		if cp.Size >= size {
			return cp
		}
		if time.Now().After(deadline) {
			t.Fatalf("checkpoint stays at %d, want %d", cp.Size, size)
		}
		time.Sleep(5 * time.Millisecond) // polls a condition another goroutine makes true
	}
}

// A deal's receipt is logged: log_index on the receipt, a checkpoint signed
// by the key of /v1/info, an inclusion proof, then a second deal and a
// consistency proof, all checked with the merkle and note packages.
func TestE2EReceiptLog(t *testing.T) {
	t.Parallel()
	v := newE2E(t)
	if code, b := logGet(t, v.url, "/v1/log/checkpoint"); code != 200 || !strings.HasSuffix(string(b), "\n") {
		t.Fatalf("empty log's checkpoint: %d %q", code, b)
	}
	vkey := verifierKey(t, v.url)
	deal := func() string {
		_, _, negID, b, k := v.live(false)
		b.send(`{"type":"propose_terms","terms":{"amount_usd":2000,"sends":1}}`)
		b.expect("message_ack")
		k.expect("negotiation_message")
		k.send(`{"type":"accept"}`)
		k.expect("message_ack")
		k.expect("negotiation_ended")
		return negID
	}
	first := deal()
	tok1, idx1 := logIndexOf(t, v.url, first)
	cp1 := checkpointAtLeast(t, v.url, vkey, idx1+1)
	if !strings.HasPrefix(cp1.Origin, "127.0.0.1:") || !strings.HasSuffix(cp1.Origin, "/log") {
		t.Fatalf("origin %q", cp1.Origin)
	}
	if err := receiptlog.VerifyInclusion(tok1, inclusionOf(t, v.url, first, cp1.Size), cp1); err != nil {
		t.Fatal(err)
	}
	second := deal()
	tok2, idx2 := logIndexOf(t, v.url, second)
	if idx2 != idx1+1 {
		t.Fatalf("second index %d after %d", idx2, idx1)
	}
	cp2 := checkpointAtLeast(t, v.url, vkey, idx2+1)
	if err := receiptlog.VerifyInclusion(tok2, inclusionOf(t, v.url, second, 0), cp2); err != nil {
		t.Fatal(err)
	}
	code, b := logGet(t, v.url, "/v1/log/proof/consistency?first=1&second=2")
	if code != 200 {
		t.Fatalf("consistency: %d %s", code, b)
	}
	var cons receiptlog.ConsistencyProof
	if err := json.Unmarshal(b, &cons); err != nil {
		t.Fatal(err)
	}
	if err := receiptlog.VerifyConsistency(cp1, cp2, cons.Hashes); err != nil {
		t.Fatal(err)
	}
	code, b = logGet(t, v.url, "/v1/log/entries?start=0&end=2")
	var es struct{ Entries []receiptlog.Entry }
	if code != 200 || json.Unmarshal(b, &es) != nil || len(es.Entries) != 2 {
		t.Fatalf("entries: %d %s", code, b)
	}
	if err := receiptlog.VerifyRoot([]string{es.Entries[0].Receipt, es.Entries[1].Receipt}, cp2); err != nil {
		t.Fatal(err)
	}
	// Bad input gets a named error and changes nothing.
	for path, want := range map[string]int{
		"/v1/log/proof/inclusion":                                          422,
		"/v1/log/proof/inclusion?negotiation_id=neg_nope":                  404,
		"/v1/log/proof/inclusion?negotiation_id=" + first + "&tree_size=9": 422,
		"/v1/log/proof/inclusion?negotiation_id=" + first + "&tree_size=0": 422,
		"/v1/log/proof/inclusion?negotiation_id=" + first + "&tree_size=x": 422,
		"/v1/log/proof/consistency?first=2&second=1":                       422,
		"/v1/log/proof/consistency?first=1":                                422,
		"/v1/log/entries?start=0&end=1001":                                 422,
		"/v1/log/entries?start=-1&end=1":                                   422,
		"/v1/log/entries?start=0":                                          422,
	} {
		code, b := logGet(t, v.url, path)
		if code != want {
			t.Errorf("%s: %d %s, want %d", path, code, b, want)
		}
	}
}
