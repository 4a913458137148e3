package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/venuehq/venue/client"
	"github.com/venuehq/venue/receipt"
	"github.com/venuehq/venue/wire"
)

// verifyOptions are the flags of `venue verify-receipt`.
type verifyOptions struct {
	url        string
	transcript string
	jwks       string
	log        logPin
}

// verifyReceiptCmd is `venue verify-receipt`: anyone checks that a receipt
// was signed by the venue and that a transcript is the one it commits to.
func verifyReceiptCmd() *cobra.Command {
	var o verifyOptions
	cmd := &cobra.Command{
		Use:   "verify-receipt TOKEN|-",
		Short: "Verify a negotiation receipt and its transcript",
		Long: `Verify a receipt (DELEGATION.md, "Receipts"): the JWT the venue signs when a negotiation
ends, returned by GET /v1/negotiations/<id>/receipt and in negotiation_ended.
TOKEN is the receipt; "-" reads it from stdin (the {"receipt":"..."} body of
the receipt endpoint is accepted as well).

1. The venue's public keys are fetched from {url}/.well-known/jwks.json (or
   read from --jwks FILE) and the receipt's signature is checked against the
   key its kid names. Its claims are printed: negotiation, parties, status,
   terms, offer_hash, arena, start and end, last seq and transcript head hash.
2. The transcript is read from --transcript FILE ("-" for stdin) or fetched
   from {url}/v1/negotiations/<negotiation_id>/transcript, and every entry is
   re-hashed: seqs 1..N without gaps, hash = SHA-256(prev_hash || JCS(frame)),
   and the last seq and head hash must be the receipt's. A transcript that
   passes is exactly the one the venue signed for; any edited, dropped or
   added frame fails.

3. With the log key pinned (--log-key KEY, or --checkpoint FILE: the key the
   venue served on first use, kept in FILE, never silently the one it serves
   now), the log's checkpoint is fetched and its signature checked, it must be
   consistent with the last checkpoint kept in FILE, and the receipt must be
   in the log under it (an RFC 6962 inclusion proof, PROTOCOL.md "The receipt
   log"). FILE is then updated: run it from cron to be a witness.

It prints "receipt OK" and "transcript OK (N entries, head ...)" (and "log OK:
entry I of N" when the key is pinned) and exits 0;
on any failure it prints "FAILED: <reason>" on stdout and exits non-zero.
Every JSON document read (the JWKS, the receipt's header and claims, the
transcript) must be strict: an object that repeats a key anywhere (a fake
"frame" before the genuine one) fails, since readers disagree on which
one counts. Keep the receipt and
the transcript together as the record of the deal.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			err := runVerifyReceipt(cmd, o, args[0])
			if err != nil {
				fmt.Fprintf(cmd.OutOrStdout(), "FAILED: %v\n", err)
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.url, "url", envOr("VENUE_URL", "http://127.0.0.1:8080"), "the venue's base URL (env VENUE_URL)")
	f.StringVar(&o.transcript, "transcript", "", `read the transcript from FILE ("-" for stdin) instead of fetching it`)
	f.StringVar(&o.jwks, "jwks", "", "read the venue's JWKS from FILE instead of fetching it")
	o.log.flags(cmd)
	return cmd
}

// transcriptDoc is the body of GET /v1/negotiations/<id>/transcript.
type transcriptDoc struct {
	NegotiationID string          `json:"negotiation_id"`
	Entries       []receipt.Entry `json:"entries"`
	LastSeq       int64           `json:"last_seq"`
	HeadHash      string          `json:"head_hash"`
}

func runVerifyReceipt(cmd *cobra.Command, o verifyOptions, tokenArg string) error {
	if tokenArg == "-" && o.transcript == "-" {
		return errors.New("the receipt and --transcript cannot both be read from stdin")
	}
	token, err := readReceiptToken(cmd, tokenArg)
	if err != nil {
		return err
	}
	var jwks []byte
	if o.jwks != "" {
		if jwks, err = os.ReadFile(o.jwks); err != nil {
			return fmt.Errorf("read --jwks: %w", err)
		}
	} else if jwks, err = fetch(cmd, o.url, "/.well-known/jwks.json"); err != nil {
		return fmt.Errorf("fetch the venue's keys: %w", err)
	}
	claims, err := receipt.Verify(token, jwks)
	if err != nil {
		return fmt.Errorf("receipt does not verify: %w", err)
	}
	out := cmd.OutOrStdout()
	fmt.Fprintln(out, "receipt OK: signed by a key in the venue's JWKS")
	printClaims(out, claims)

	var raw []byte
	switch o.transcript {
	case "":
		raw, err = fetch(cmd, o.url, "/v1/negotiations/"+url.PathEscape(claims.NegotiationID)+"/transcript")
		if err != nil {
			return fmt.Errorf("fetch the transcript: %w", err)
		}
	case "-":
		if raw, err = readAllLimited(cmd.InOrStdin()); err != nil {
			return fmt.Errorf("read the transcript from stdin: %w", err)
		}
	default:
		if raw, err = os.ReadFile(o.transcript); err != nil {
			return fmt.Errorf("read --transcript: %w", err)
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
	fmt.Fprintf(out, "transcript OK (%d entries, head %s)\n", len(doc.Entries), head)
	return verifyLogInclusion(cmd, o.url, o.log, token, claims)
}

// readReceiptToken returns the receipt given as an argument, or read from
// stdin for "-" (a bare token or the {"receipt":"..."} body).
func readReceiptToken(cmd *cobra.Command, arg string) (string, error) {
	if arg != "-" {
		return strings.TrimSpace(arg), nil
	}
	b, err := readAllLimited(cmd.InOrStdin())
	if err != nil {
		return "", fmt.Errorf("read the receipt from stdin: %w", err)
	}
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

// printClaims writes the claims of a verified receipt, one per line.
func printClaims(w io.Writer, c *receipt.Claims) {
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
		rows = append(rows, [2]string{"issued_at", stamp(c.IssuedAt)})
	}
	for _, r := range rows {
		fmt.Fprintf(w, "  %-12s %s\n", r[0], r[1])
	}
}

// maxBody bounds what is read from the venue or stdin.
const maxBody = 64 << 20

// readAllLimited reads r to its end, refusing more than maxBody bytes.
func readAllLimited(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxBody+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxBody {
		return nil, fmt.Errorf("more than %d bytes", maxBody)
	}
	return b, nil
}

// joinURL appends path to the venue's base URL.
func joinURL(base, path string) (string, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("--url %q: want http(s)://HOST[:PORT]", base)
	}
	return strings.TrimSuffix(u.String(), "/") + path, nil
}

// venueClient is the client of the venue at base (--url), with apiKey if set.
func venueClient(base, apiKey string) (*client.Client, error) {
	if _, err := joinURL(base, ""); err != nil {
		return nil, err
	}
	return client.New(base, client.WithAPIKey(apiKey))
}

// fetch GETs path from the venue at base and returns the body of a 2xx.
func fetch(cmd *cobra.Command, base, path string) ([]byte, error) {
	c, err := venueClient(base, "")
	if err != nil {
		return nil, err
	}
	return c.Raw(cmdContext(cmd), http.MethodGet, path, nil, false)
}

// post POSTs {"token": token} to path of the venue at base (with apiKey as
// a Bearer token if set), prints the answer's body on stdout and says on
// stderr that it was taken.
func post(cmd *cobra.Command, base, apiKey, path, token string) error {
	c, err := venueClient(base, apiKey)
	if err != nil {
		return err
	}
	resp, err := c.Raw(cmdContext(cmd), http.MethodPost, path, map[string]string{"token": token}, apiKey != "")
	if err != nil {
		return fmt.Errorf("POST %s: %w", path, err)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "POST %s%s: taken\n", c.BaseURL(), path)
	if out := bytes.TrimSpace(resp); len(out) > 0 {
		fmt.Fprintln(cmd.OutOrStdout(), string(out))
	}
	return nil
}

// cmdContext is cmd's context, or the background one.
func cmdContext(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}
