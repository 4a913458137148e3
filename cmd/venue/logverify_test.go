package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/venuehq/venue/receipt"
	"github.com/venuehq/venue/receiptlog"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/store/memory"
	"github.com/venuehq/venue/venue"
	"github.com/venuehq/venue/wire"
)

// logVenue starts a venue whose receipt log the test can reach (to forge
// with its key) and returns its URL and the log's store.
func logVenue(t *testing.T) (string, *receiptlog.Memory) {
	t.Helper()
	st := memory.New()
	lg := receiptlog.NewMemory(st.Negotiation, store.ErrNotFound)
	return startCmdVenue(t, func(c *venue.Config) { c.Store, c.ReceiptLog = st, lg }), lg
}

// demoDeal runs the demo against base and returns the deal's receipt once
// it is in the log.
func demoDeal(t *testing.T, base string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	if err := runCobra(t, demoCmd(), strings.NewReader(""), &out, &errOut, "--url", base, "--state", ""); err != nil {
		t.Fatalf("demo: %v\n%s", err, errOut.String())
	}
	m := regexp.MustCompile(`negotiation (neg_\S+) requested`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no negotiation id in the demo's output:\n%s", out.String())
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(base + "/v1/negotiations/" + m[1] + "/receipt")
		if err != nil {
			t.Fatal(err)
		}
		var rec struct {
			Receipt  string `json:"receipt"`
			LogIndex *int64 `json:"log_index"`
		}
		err = json.NewDecoder(resp.Body).Decode(&rec)
		resp.Body.Close()
		if err == nil && rec.LogIndex != nil {
			return rec.Receipt
		}
		if time.Now().After(deadline) {
			t.Fatalf("the receipt of %s is not in the log", m[1])
		}
		time.Sleep(5 * time.Millisecond) // polls a condition the venue makes true
	}
}

func verifyOut(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := runCobra(t, verifyReceiptCmd(), strings.NewReader(""), &out, &errOut, args...)
	return out.String() + errOut.String(), err
}

func logVerifyOut(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := runCobra(t, logCmd(), strings.NewReader(""), &out, &errOut, append([]string{"verify"}, args...)...)
	return out.String() + errOut.String(), err
}

// verify-receipt pins the log key on first use, checks inclusion and, on
// the next run, consistency with the checkpoint it kept; log verify
// recomputes the root from every entry.
func TestVerifyReceiptLog(t *testing.T) {
	t.Parallel()
	base, _ := logVenue(t)
	file := filepath.Join(t.TempDir(), "checkpoint")
	tok := demoDeal(t, base)
	out, err := verifyOut(t, tok, "--url", base)
	if err != nil || !strings.Contains(out, "log: not checked") {
		t.Fatalf("without a pinned key: %v\n%s", err, out)
	}
	out, err = verifyOut(t, tok, "--url", base, "--checkpoint", file)
	if err != nil || !strings.Contains(out, "pinned in") || !strings.Contains(out, "log OK: entry 0 of 1") {
		t.Fatalf("first use: %v\n%s", err, out)
	}
	tok2 := demoDeal(t, base)
	out, err = verifyOut(t, tok2, "--url", base, "--checkpoint", file)
	if err != nil || strings.Contains(out, "pinned in") || !strings.Contains(out, "consistency OK: the log of 2 entries extends the one of 1") || !strings.Contains(out, "log OK: entry 1 of 2") {
		t.Fatalf("second use: %v\n%s", err, out)
	}
	out, err = logVerifyOut(t, "--url", base, "--checkpoint", file)
	if err != nil || !strings.Contains(out, "log OK: 2 entries") {
		t.Fatalf("log verify: %v\n%s", err, out)
	}
	var info struct {
		Key string `json:"log_verifier_key"`
	}
	resp, err := http.Get(base + "/v1/info")
	if err != nil {
		t.Fatal(err)
	}
	_ = json.NewDecoder(resp.Body).Decode(&info)
	resp.Body.Close()
	out, err = verifyOut(t, tok, "--url", base, "--log-key", info.Key)
	if err != nil || !strings.Contains(out, "log OK: entry 0 of 2") {
		t.Fatalf("--log-key: %v\n%s", err, out)
	}
	// Another key pinned: the checkpoint is refused.
	other := strings.Replace(info.Key, "+", "+0", 1)[:len(info.Key)]
	if out, err := logVerifyOut(t, "--url", base, "--log-key", other); err == nil {
		t.Fatalf("a checkpoint verified with another key:\n%s", out)
	}
	if out, err := logVerifyOut(t, "--url", base, "--log-key", "vk+bogus"); err == nil || !strings.Contains(out, `--log-key "vk+bogus" is not a log verifier key`) {
		t.Fatalf("a --log-key that is no key: %v\n%s", err, out)
	}
	if out, err := logVerifyOut(t, "--url", base); err == nil || !strings.Contains(out, "pin the log key") {
		t.Fatalf("log verify without a pinned key: %v\n%s", err, out)
	}
	// A failure is said once, on stdout ("FAILED: ..."), and exits 1
	// with nothing more on stderr.
	var stdout, stderr bytes.Buffer
	err = runCobra(t, logCmd(), strings.NewReader(""), &stdout, &stderr, "verify", "--url", base, "--log-key", other)
	if code := exitCode(err, &stderr); code != 1 || strings.Count(stdout.String(), "FAILED: ") != 1 || stderr.Len() != 0 {
		t.Fatalf("a failed log verify: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	if code := exitCode(errors.New("boom"), &stderr); code != 1 || stderr.String() != "venue: boom\n" {
		t.Fatalf("another error: exit %d, stderr %q", code, stderr.String())
	}
}

// A venue that changes an entry, or forks its log (signs a checkpoint of a
// tree that does not extend the one a witness kept), is caught.
func TestLogTamperAndForkCaught(t *testing.T) {
	t.Parallel()
	base, lg := logVenue(t)
	file := filepath.Join(t.TempDir(), "checkpoint")
	tok := demoDeal(t, base)
	demoDeal(t, base)
	if out, err := verifyOut(t, tok, "--url", base, "--checkpoint", file); err != nil || !strings.Contains(out, "of 2") {
		t.Fatalf("%v\n%s", err, out)
	}
	keys, err := lg.Keys(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	logKey, err := receipt.Open(keys[0].Sealed, nil)
	if err != nil {
		t.Fatal(err)
	}
	target, _ := url.Parse(base)
	// tamper rewrites the real venue's answers.
	liar := func(rewrite func(path string, body []byte) []byte) string {
		proxy := httputil.NewSingleHostReverseProxy(target)
		proxy.ModifyResponse = func(r *http.Response) error {
			b, err := io.ReadAll(r.Body)
			r.Body.Close()
			if err != nil {
				return err
			}
			if nb := rewrite(r.Request.URL.Path, b); !bytes.Equal(nb, b) {
				b, r.StatusCode, r.Status = nb, http.StatusOK, "200 OK"
			}
			r.Body = io.NopCloser(bytes.NewReader(b))
			r.ContentLength = int64(len(b))
			r.Header.Del("Content-Length")
			return nil
		}
		srv := httptest.NewServer(proxy)
		t.Cleanup(srv.Close)
		return srv.URL
	}
	// Entries changed (two genuine receipts swapped; one replaced by
	// another receipt): the root is not the checkpoint's.
	for name, change := range map[string]func([]receiptlog.Entry){
		"swapped":  func(es []receiptlog.Entry) { es[0].Receipt, es[1].Receipt = es[1].Receipt, es[0].Receipt },
		"replaced": func(es []receiptlog.Entry) { es[1].Receipt = es[0].Receipt },
	} {
		changed := liar(func(path string, b []byte) []byte {
			if path == "/v1/log/entries" {
				var page struct {
					Entries []receiptlog.Entry `json:"entries"`
				}
				_ = json.Unmarshal(b, &page)
				change(page.Entries)
				b, _ = json.Marshal(page)
			}
			return b
		})
		if out, err := logVerifyOut(t, "--url", changed, "--checkpoint", file); err == nil || !strings.Contains(out, "root is not the checkpoint's") {
			t.Fatalf("%s entries: %v\n%s", name, err, out)
		}
	}
	// A fork: a checkpoint of a different tree of 3 entries, signed with the
	// venue's own log key.
	origin := receiptlog.DefaultOrigin(base)
	var forkTree receiptlog.Tree
	for _, r := range []string{tok + "x", "forged", "more"} {
		forkTree.Append(r)
	}
	forkRoot, _ := forkTree.Root(3)
	forkProof, _ := forkTree.ConsistencyProof(2, 3)
	forked, err := receiptlog.SignCheckpoint(receiptlog.Checkpoint{Origin: origin, Size: 3, Root: forkRoot}, logKey.Private)
	if err != nil {
		t.Fatal(err)
	}
	fork := liar(func(path string, b []byte) []byte {
		switch path {
		case "/v1/log/checkpoint":
			return forked
		case "/v1/log/proof/consistency":
			b, _ = json.Marshal(receiptlog.ConsistencyProof{First: 2, Second: 3, Hashes: forkProof})
		}
		return b
	})
	out, err := verifyOut(t, tok, "--url", fork, "--checkpoint", file)
	if err == nil || !strings.Contains(out, "not consistent with the checkpoint kept") {
		t.Fatalf("forked checkpoint: %v\n%s", err, out)
	}
	if out, err := logVerifyOut(t, "--url", fork, "--checkpoint", file); err == nil {
		t.Fatalf("log verify of a fork:\n%s", out)
	}
	// The file still holds the genuine checkpoint: the real venue passes.
	if out, err := logVerifyOut(t, "--url", base, "--checkpoint", file); err != nil {
		t.Fatalf("after the fork was refused: %v\n%s", err, out)
	}
	// A same-size fork: a different root for the size the file keeps.
	same, _ := receiptlog.SignCheckpoint(receiptlog.Checkpoint{Origin: origin, Size: 2, Root: receiptlog.RootOf([]string{"forged", "too"})}, logKey.Private)
	sameFork := liar(func(path string, b []byte) []byte {
		if path == "/v1/log/checkpoint" {
			return same
		}
		return b
	})
	if out, err := logVerifyOut(t, "--url", sameFork, "--checkpoint", file); err == nil || !strings.Contains(out, "fork") {
		t.Fatalf("same-size fork: %v\n%s", err, out)
	}
}

// TestRotateLogKeyEmbedded: on the embedded default (the log in the
// server's memory) `venue log rotate-key --admin-url` rotates the log key:
// /v1/info names the new key current and the old one retired with the
// tree size it signed, and the checkpoint verifies with the new key only.
func TestRotateLogKeyEmbedded(t *testing.T) {
	t.Parallel()
	base, admin := adminVenue(t)
	tok := demoDeal(t, base)
	type infoT struct {
		Key     string `json:"log_verifier_key"`
		Retired []struct {
			Key       string `json:"key"`
			TreeSize  int64  `json:"tree_size"`
			RetiredAt string `json:"retired_at"`
		} `json:"log_retired_keys"`
	}
	info := func() infoT {
		t.Helper()
		resp, err := http.Get(base + "/v1/info")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var i infoT
		if err := json.NewDecoder(resp.Body).Decode(&i); err != nil {
			t.Fatal(err)
		}
		return i
	}
	before := info()
	if before.Key == "" || len(before.Retired) != 0 {
		t.Fatalf("before: %+v", before)
	}
	// Without a way to the log: refused, saying how.
	var out, errOut bytes.Buffer
	if err := runCobra(t, logCmd(), strings.NewReader(""), &out, &errOut, "rotate-key", "--database-url", ""); err == nil || !strings.Contains(err.Error(), "--admin-url") {
		t.Fatalf("without --database-url or --admin-url: %v", err)
	}
	out.Reset()
	if err := runCobra(t, logCmd(), strings.NewReader(""), &out, &errOut, "rotate-key", "--admin-url", admin); err != nil {
		t.Fatalf("rotate-key: %v\n%s", err, errOut.String())
	}
	after := info()
	if after.Key == before.Key || len(after.Retired) != 1 || after.Retired[0].Key != before.Key || after.Retired[0].TreeSize != 1 ||
		!strings.Contains(out.String(), after.Key) {
		t.Fatalf("after: %+v\nbefore: %+v\n%s", after, before, out.String())
	}
	// retired_at is a wire time (OpenAPI's Time: RFC 3339, UTC, milliseconds).
	if at, err := time.Parse(wire.TimeLayout, after.Retired[0].RetiredAt); err != nil || wire.Time(at) != after.Retired[0].RetiredAt {
		t.Fatalf("retired_at %q is not a wire time: %v", after.Retired[0].RetiredAt, err)
	}
	// The new key verifies the log and the receipt's inclusion; the old no
	// longer signs the checkpoint.
	if got, err := logVerifyOut(t, "--url", base, "--log-key", after.Key); err != nil || !strings.Contains(got, "log OK: 1 entries") {
		t.Fatalf("log verify with the new key: %v\n%s", err, got)
	}
	if got, err := verifyOut(t, tok, "--url", base, "--log-key", after.Key); err != nil || !strings.Contains(got, "log OK: entry 0 of 1") {
		t.Fatalf("verify-receipt with the new key: %v\n%s", err, got)
	}
	if got, err := logVerifyOut(t, "--url", base, "--log-key", before.Key); err == nil {
		t.Fatalf("the old key still verifies the checkpoint:\n%s", got)
	}
}

// adminVenue starts an embedded default venue with an admin listener and
// returns its public and admin URLs.
func adminVenue(t *testing.T) (string, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	srv, err := venue.New(venue.Config{Addr: ln.Addr().String(), PublicURL: base, AdminAddr: "127.0.0.1:0", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready, done := make(chan string, 1), make(chan error, 1)
	go func() { done <- srv.ServeListener(ctx, ln, ready) }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return base, "http://" + srv.AdminAddr()
}
