package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/venuehq/venue/receiptlog/witness"
)

// verifyEvidenceCmd is `venue verify-evidence`: a deal's evidence checked
// offline against the venue's JWKS (package deliveries does the checking).
func verifyEvidenceCmd() *cobra.Command {
	var url, jwksFile string
	cmd := &cobra.Command{
		Use:   "verify-evidence TOKEN|-",
		Short: "Verify a deal's evidence (GET /v1/negotiations/<id>/evidence) against the venue's JWKS",
		Long: `Verify a deal's evidence (PROTOCOL.md "Evidence"): the JWS, typ venue-evidence+jwt,
signed by the venue's receipt key over the receipt, the transcript, the grants
that bound each binding frame, the deliveries and the settlement. TOKEN is the
body of GET /v1/negotiations/<id>/evidence; "-" reads it from stdin.

The JWKS is read from --jwks FILE (offline) or fetched from
{url}/.well-known/jwks.json. It checks the signature, the receipt inside it,
the transcript against the receipt's head hash, and that every binding, the
deliveries and the settlement belong to the negotiation. It prints
"evidence OK" and a summary, or "FAILED: <reason>" and exits non-zero.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return failed(cmd, runVerifyEvidence(cmd, url, jwksFile, args[0]))
		},
	}
	cmd.Flags().StringVar(&url, "url", envOr("VENUE_URL", "http://127.0.0.1:8080"), "the venue's base URL, for its JWKS (env VENUE_URL)")
	cmd.Flags().StringVar(&jwksFile, "jwks", "", "read the venue's JWKS from FILE (offline) instead of fetching it")
	return cmd
}

func runVerifyEvidence(cmd *cobra.Command, url, jwksFile, arg string) error {
	token := arg
	if arg == "-" {
		b, err := readAllLimited(cmd.InOrStdin())
		if err != nil {
			return fmt.Errorf("read the evidence from stdin: %w", err)
		}
		token = string(b)
	}
	var in witness.Inputs
	if jwksFile != "" {
		var err error
		if in.JWKS, err = os.ReadFile(jwksFile); err != nil {
			return fmt.Errorf("the venue's keys: %w", err)
		}
	}
	return newWitness(cmd, url).Evidence(cmdContext(cmd), token, in)
}
