package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/venuehq/venue/grants"
	"github.com/venuehq/venue/grants/grantflag"
)

// keygenCmd is `venue keygen`: a principal draws its Ed25519 key pair.
func keygenCmd() *cobra.Command {
	var (
		out   string
		force bool
	)
	cmd := &cobra.Command{
		Use:   "keygen --out FILE",
		Short: "Create a principal key pair for signing grants and decisions",
		Long: `Create an Ed25519 key pair for a principal (the human or company an agent acts
for, DELEGATION.md).

The private key is written to --out as PKCS#8 PEM (the form
"openssl genpkey -algorithm ed25519" writes), readable by you alone (mode
0600). Keep it secret: whoever holds it can sign grants for your agents. The
venue never sees it. An existing file is never overwritten unless --force is
given.

The public key is printed on stdout as a JWK:
  {"kty":"OKP","crv":"Ed25519","x":"..."}
Give it to your agent, which uploads it as the body of
PUT /v1/agents/me/principal-key (or sends it as "principal_key" when it
registers). From then on the venue accepts only grants signed with this key.

Its RFC 7638 thumbprint is printed on stderr: it is the "iss" of every grant
and decision you sign, and what the venue answers the upload with.

Then sign grants with "venue grant --key FILE ..." and decide escalations with
"venue decide --key FILE ...".`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return errors.New("--out is required: the file to write the private key to")
			}
			pub, priv, err := grants.GenerateKey()
			if err != nil {
				return err
			}
			pemBytes := grants.MarshalPrivateKeyPEM(priv)
			if pemBytes == nil {
				return errors.New("keygen: cannot encode the new key")
			}
			if err := grantflag.WriteKeyFile(out, pemBytes, force); err != nil {
				return err
			}
			jwk := grants.PublicJWK(pub)
			b, err := json.Marshal(jwk)
			if err != nil {
				return fmt.Errorf("keygen: encode public key: %w", err)
			}
			fmt.Fprintln(cmd.OutOrStdout(), string(b))
			fmt.Fprintf(cmd.ErrOrStderr(), "private key written to %s (mode 0600): keep it secret\nthumbprint: %s\n",
				out, grants.Thumbprint(jwk))
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "the file to write the private key to (required)")
	cmd.Flags().BoolVar(&force, "force", false, "overwrite --out if it exists")
	_ = cmd.MarkFlagRequired("out")
	return cmd
}
