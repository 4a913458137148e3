package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestVerifyReceiptOfARealDeal: the receipt of a deal made on a real venue
// (the demo's) verifies with `venue verify-receipt` against the venue's JWKS
// and transcript; the same transcript with one byte changed does not.
func TestVerifyReceiptOfARealDeal(t *testing.T) {
	t.Parallel()
	base := startCmdVenue(t)
	var demoOut, demoErr bytes.Buffer
	if err := runCobra(t, demoCmd(), strings.NewReader(""), &demoOut, &demoErr, "--url", base, "--state", ""); err != nil {
		t.Fatalf("demo: %v\n%s", err, demoErr.String())
	}
	m := regexp.MustCompile(`negotiation (neg_\S+) requested`).FindStringSubmatch(demoOut.String())
	if m == nil {
		t.Fatalf("no negotiation id in the demo's output:\n%s", demoOut.String())
	}
	negID := m[1]
	get := func(path string) []byte {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
		}
		return b
	}
	var rec struct {
		Receipt string `json:"receipt"`
	}
	if err := json.Unmarshal(get("/v1/negotiations/"+negID+"/receipt"), &rec); err != nil || rec.Receipt == "" {
		t.Fatalf("receipt: %v", err)
	}
	var out, errOut bytes.Buffer
	if err := runCobra(t, verifyReceiptCmd(), strings.NewReader(""), &out, &errOut, rec.Receipt, "--url", base); err != nil {
		t.Fatalf("verify-receipt of a real deal: %v\n%s%s", err, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "receipt OK") || !strings.Contains(out.String(), "transcript OK") {
		t.Fatalf("verify-receipt said:\n%s", out.String())
	}
	// One byte of the transcript changed: the deal's amount.
	tr := get("/v1/negotiations/" + negID + "/transcript")
	tampered := bytes.Replace(tr, []byte(`"amount_usd":2875`), []byte(`"amount_usd":2876`), 1)
	if bytes.Equal(tampered, tr) {
		t.Fatalf("the transcript has no amount to change:\n%s", tr)
	}
	path := filepath.Join(t.TempDir(), "transcript.json")
	if err := os.WriteFile(path, tampered, 0o600); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errOut.Reset()
	if err := runCobra(t, verifyReceiptCmd(), strings.NewReader(""), &out, &errOut, rec.Receipt, "--url", base, "--transcript", path); err == nil {
		t.Fatalf("a changed transcript verified:\n%s", out.String())
	}
}
