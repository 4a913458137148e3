// Package witness checks what a venue signed from the outside, as anyone
// holding a receipt can (DELEGATION.md "Receipts", PROTOCOL.md "The receipt
// log", "Evidence"): a receipt against the venue's JWKS and its transcript
// against the receipt, the receipt's entry in the public log under a
// checkpoint signed by a pinned log key, the whole log entry by entry, and
// a deal's evidence. It reads the venue through a Fetch and reports each
// check passed, one line each, on Out; `venue verify-receipt`, `venue log
// verify` and `venue verify-evidence` are its shell.
package witness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/venuehq/venue/deliveries"
	"github.com/venuehq/venue/receipt"
	"github.com/venuehq/venue/wire"
)

// Fetch GETs path (with its query) of the venue and returns the body of a
// 2xx answer, or an error.
type Fetch func(ctx context.Context, path string) ([]byte, error)

// Witness checks one venue. Out receives the report: a line per check
// passed; the first failure is returned as the error.
type Witness struct {
	Fetch Fetch
	Out   io.Writer
}

// Inputs are documents the caller already holds (read from files or stdin);
// a nil field is fetched from the venue.
type Inputs struct {
	// JWKS is the venue's key set (default GET /.well-known/jwks.json).
	JWKS []byte
	// Transcript is the body of GET /v1/negotiations/<id>/transcript (the
	// default).
	Transcript []byte
}

// transcriptDoc is the body of GET /v1/negotiations/<id>/transcript.
type transcriptDoc struct {
	NegotiationID string          `json:"negotiation_id"`
	Entries       []receipt.Entry `json:"entries"`
	LastSeq       int64           `json:"last_seq"`
	HeadHash      string          `json:"head_hash"`
}

// jwks is in.JWKS, or the venue's fetched.
func (w *Witness) jwks(ctx context.Context, in Inputs) ([]byte, error) {
	if in.JWKS != nil {
		return in.JWKS, nil
	}
	return w.Fetch(ctx, "/.well-known/jwks.json")
}

// Receipt checks a receipt (DELEGATION.md "Receipts"): its signature by a
// key of the venue's JWKS (its claims are then printed), its transcript
// re-hashed entry by entry (seqs 1..N without gaps, hash = SHA-256(prev_hash
// || JCS(frame)), the last seq and head hash the receipt's), and, when pin
// names a log key, its entry in the log (Inclusion). Every document read
// must be strict JSON (a repeated key fails).
func (w *Witness) Receipt(ctx context.Context, token string, in Inputs, pin Pin) error {
	jwks, err := w.jwks(ctx, in)
	if err != nil {
		return fmt.Errorf("fetch the venue's keys: %w", err)
	}
	claims, err := receipt.Verify(token, jwks)
	if err != nil {
		return fmt.Errorf("receipt does not verify: %w", err)
	}
	fmt.Fprintln(w.Out, "receipt OK: signed by a key in the venue's JWKS")
	PrintClaims(w.Out, claims)

	raw := in.Transcript
	if raw == nil {
		raw, err = w.Fetch(ctx, "/v1/negotiations/"+url.PathEscape(claims.NegotiationID)+"/transcript")
		if err != nil {
			return fmt.Errorf("fetch the transcript: %w", err)
		}
	}
	var doc transcriptDoc
	if err := wire.Unmarshal(raw, &doc); err != nil {
		return fmt.Errorf("transcript is not {\"negotiation_id\",\"entries\":[{\"seq\",\"frame\",\"hash\"}],...}: %w", err)
	}
	if doc.NegotiationID != "" && doc.NegotiationID != claims.NegotiationID {
		return fmt.Errorf("transcript is of negotiation %q, the receipt of %q", doc.NegotiationID, claims.NegotiationID)
	}
	if err := receipt.VerifyTranscript(claims, doc.Entries); err != nil {
		return fmt.Errorf("transcript does not match the receipt: %w", err)
	}
	head := claims.HeadHash
	if head == "" {
		head = "(empty)"
	}
	fmt.Fprintf(w.Out, "transcript OK (%d entries, head %s)\n", len(doc.Entries), head)
	return w.Inclusion(ctx, pin, token, claims)
}

// ParseToken returns the receipt in b, read from stdin: a bare token or the
// {"receipt":"..."} body of GET /v1/negotiations/<id>/receipt.
func ParseToken(b []byte) (string, error) {
	b = bytes.TrimSpace(b)
	if bytes.HasPrefix(b, []byte("{")) {
		var body struct {
			Receipt string `json:"receipt"`
		}
		if err := wire.Unmarshal(b, &body); err != nil || body.Receipt == "" {
			return "", errors.New(`stdin is JSON but not {"receipt":"<JWT>"}`)
		}
		return body.Receipt, nil
	}
	if len(b) == 0 {
		return "", errors.New("no receipt on stdin")
	}
	return string(b), nil
}

// PrintClaims writes the claims of a verified receipt, one per line.
func PrintClaims(w io.Writer, c *receipt.Claims) {
	terms, offerHash, head := "(none)", "(none)", "(empty transcript)"
	if len(c.Terms) > 0 {
		var buf bytes.Buffer
		if json.Compact(&buf, c.Terms) == nil {
			terms = buf.String()
		} else {
			terms = string(c.Terms)
		}
	}
	if c.OfferHash != "" {
		offerHash = c.OfferHash
	}
	if c.HeadHash != "" {
		head = c.HeadHash
	}
	rows := [][2]string{
		{"negotiation", c.NegotiationID},
		{"brand", c.Brand},
		{"bouncer", c.Bouncer},
		{"status", c.Status},
		{"terms", terms},
		{"offer_hash", offerHash},
		{"arena", fmt.Sprint(c.Arena)},
		{"started_at", c.StartedAt},
		{"ended_at", c.EndedAt},
		{"last_seq", fmt.Sprint(c.LastSeq)},
		{"head_hash", head},
		{"issuer", c.Issuer},
	}
	if !c.IssuedAt.IsZero() {
		rows = append(rows, [2]string{"issued_at", c.IssuedAt.UTC().Format(wire.TimeLayout)})
	}
	for _, r := range rows {
		fmt.Fprintf(w, "  %-12s %s\n", r[0], r[1])
	}
}

// Evidence checks a deal's evidence (PROTOCOL.md "Evidence") against the
// venue's JWKS (in.JWKS, or fetched): its signature, the receipt inside
// it, the transcript against the receipt's head hash, and that every
// binding, the deliveries and the settlement belong to the negotiation
// (deliveries.VerifyEvidence), then prints a summary.
func (w *Witness) Evidence(ctx context.Context, token string, in Inputs) error {
	jwks, err := w.jwks(ctx, in)
	if err != nil {
		return fmt.Errorf("the venue's keys: %w", err)
	}
	ev, rc, err := deliveries.VerifyEvidence(strings.TrimSpace(token), jwks)
	if err != nil {
		return err
	}
	fmt.Fprintf(w.Out, "evidence OK: negotiation %s, %s, %d transcript entries, %d binding frames, %d deliveries\n",
		ev.NegotiationID, rc.Status, len(ev.Transcript), len(ev.Grants), len(ev.Deliveries))
	fmt.Fprintf(w.Out, "settlement: %s\n", ev.Settlement)
	return nil
}
