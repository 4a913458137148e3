package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/venuehq/venue/grants"
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
			if err := writeSecretFile(out, pemBytes, force); err != nil {
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

// writeSecretFile writes data to path with mode 0600. Without force it fails
// if path exists (checked atomically by the create); with force it replaces
// path by renaming a complete temporary file over it, so a crash never
// leaves a half-written key and an old file's looser mode is not inherited.
func writeSecretFile(path string, data []byte, force bool) error {
	if !force {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("keygen: %s already exists; not overwriting it (use --force to replace it)", path)
		}
		if err != nil {
			return fmt.Errorf("keygen: %w", err)
		}
		if _, err := f.Write(data); err != nil {
			_ = f.Close()
			_ = os.Remove(path)
			return fmt.Errorf("keygen: write %s: %w", path, err)
		}
		if err := f.Close(); err != nil {
			_ = os.Remove(path)
			return fmt.Errorf("keygen: write %s: %w", path, err)
		}
		return nil
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("keygen: %s is a directory", path)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".venue-key-*") // mode 0600
	if err != nil {
		return fmt.Errorf("keygen: %w", err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }() // a no-op once renamed
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("keygen: write %s: %w", tmp.Name(), err)
	}
	if err := tmp.Chmod(0o600); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("keygen: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("keygen: write %s: %w", tmp.Name(), err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("keygen: %w", err)
	}
	return nil
}
