package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/venuehq/venue/client"
	"github.com/venuehq/venue/receiptlog/witness"
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
			return failed(cmd, runVerifyReceipt(cmd, o, args[0]))
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.url, "url", envOr("VENUE_URL", "http://127.0.0.1:8080"), "the venue's base URL (env VENUE_URL)")
	f.StringVar(&o.transcript, "transcript", "", `read the transcript from FILE ("-" for stdin) instead of fetching it`)
	f.StringVar(&o.jwks, "jwks", "", "read the venue's JWKS from FILE instead of fetching it")
	o.log.flags(cmd)
	return cmd
}

func runVerifyReceipt(cmd *cobra.Command, o verifyOptions, tokenArg string) error {
	if tokenArg == "-" && o.transcript == "-" {
		return errors.New("the receipt and --transcript cannot both be read from stdin")
	}
	token, err := readReceiptToken(cmd, tokenArg)
	if err != nil {
		return err
	}
	var in witness.Inputs
	if o.jwks != "" {
		if in.JWKS, err = os.ReadFile(o.jwks); err != nil {
			return fmt.Errorf("read --jwks: %w", err)
		}
	}
	switch o.transcript {
	case "":
	case "-":
		if in.Transcript, err = readAllLimited(cmd.InOrStdin()); err != nil {
			return fmt.Errorf("read the transcript from stdin: %w", err)
		}
	default:
		if in.Transcript, err = os.ReadFile(o.transcript); err != nil {
			return fmt.Errorf("read --transcript: %w", err)
		}
	}
	return newWitness(cmd, o.url).Receipt(cmdContext(cmd), token, in, o.log.pin())
}

// newWitness is a witness of the venue at base, reporting on stdout.
func newWitness(cmd *cobra.Command, base string) *witness.Witness {
	return &witness.Witness{Out: cmd.OutOrStdout(), Fetch: func(_ context.Context, path string) ([]byte, error) {
		return fetch(cmd, base, path)
	}}
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
	return witness.ParseToken(b)
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
