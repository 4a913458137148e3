package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/venuehq/venue/backends"
	"github.com/venuehq/venue/keyring"
	"github.com/venuehq/venue/receipt"
	"github.com/venuehq/venue/store/postgres"
)

// envKeyEncryptionKey names the environment variable that holds the key
// that seals the venue's receipt key where it is stored (SECURITY.md).
const envKeyEncryptionKey = "VENUE_KEY_ENCRYPTION_KEY"

// sealerFromEnv returns the Sealer of VENUE_KEY_ENCRYPTION_KEY, nil if it is
// not set.
func sealerFromEnv() (*receipt.Sealer, error) {
	v := os.Getenv(envKeyEncryptionKey)
	if v == "" {
		return nil, nil
	}
	s, err := receipt.ParseSealer(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", envKeyEncryptionKey, err)
	}
	return s, nil
}

// rotateVenueKeyCmd is `venue rotate-venue-key`: a new receipt key signs
// from now on; the old ones stay in the JWKS so earlier receipts verify.
func rotateVenueKeyCmd() *cobra.Command {
	var databaseURL, keyFile string
	cmd := &cobra.Command{
		Use:   "rotate-venue-key",
		Short: "Replace the venue's receipt signing key, keeping the old ones for the JWKS",
		Long: `rotate-venue-key draws a new Ed25519 receipt key and makes it the one the venue
signs with. Every earlier key stays, retired, in /.well-known/jwks.json, so
receipts signed before the rotation still verify.

The key lives where serve keeps it: in the key file (--key-file, env
VENUE_KEY_FILE) or else in the Postgres store (--database-url, env
DATABASE_URL). With VENUE_KEY_ENCRYPTION_KEY set (base64 of 32 bytes, e.g.
openssl rand -base64 32) the new key is stored sealed with it. Running nodes
pick the new key up within 10 minutes; until then they sign with the old one,
which still verifies.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRotateVenueKey(cmd.Context(), cmd, databaseURL, keyFile)
		},
	}
	f := cmd.Flags()
	f.StringVar(&keyFile, "key-file", os.Getenv("VENUE_KEY_FILE"), "the venue's key file (env VENUE_KEY_FILE); takes precedence over the store")
	f.StringVar(&databaseURL, "database-url", os.Getenv("DATABASE_URL"), "the Postgres store holding the key (env DATABASE_URL)")
	return cmd
}

func runRotateVenueKey(ctx context.Context, cmd *cobra.Command, databaseURL, keyFile string) error {
	sealer, err := sealerFromEnv()
	if err != nil {
		return err
	}
	if keyFile == "" && databaseURL == "" {
		return errors.New("rotate-venue-key needs --key-file or --database-url (the memory store forgets its key on restart anyway)")
	}
	out := cmd.OutOrStdout()
	if sealer == nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s is not set: the new key is stored in the clear\n", envKeyEncryptionKey)
	}
	if keyFile != "" {
		k, _, err := keyring.Rotate(ctx, keyFile, nil, sealer, time.Now())
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "new receipt key %s in %s; the venue signs with it within 10 minutes\n", k.KID, keyFile)
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, backends.ConnectTimeout)
	s, err := postgres.New(cctx, databaseURL)
	cancel()
	if err != nil {
		return err
	}
	defer s.Close()
	if _, err := s.Migrate(ctx); err != nil {
		return err
	}
	k, retired, err := keyring.Rotate(ctx, "", s, sealer, time.Now())
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "new receipt key %s in %s (%d retired); the nodes sign with it within 10 minutes\n",
		k.KID, postgres.RedactURL(databaseURL), retired)
	return nil
}
