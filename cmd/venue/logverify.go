package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/venuehq/venue/receiptlog"
	"github.com/venuehq/venue/receiptlog/pglog"
	"github.com/venuehq/venue/receiptlog/witness"
	"github.com/venuehq/venue/store/postgres"
)

// logPin is how a log check knows the log key (PROTOCOL.md "The receipt
// log"): --log-key, or the key kept in --checkpoint FILE since its first
// use (trust on first use), never the one the venue serves now.
type logPin struct {
	key        string // --log-key
	checkpoint string // --checkpoint FILE
}

func (p *logPin) flags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&p.key, "log-key", os.Getenv("VENUE_LOG_KEY"), "the receipt log's verifier key (name+hash+base64, as /v1/info's log_verifier_key) to check checkpoints with (env VENUE_LOG_KEY)")
	f.StringVar(&p.checkpoint, "checkpoint", "", "FILE keeping the log key (pinned on first use) and the last checkpoint seen; a new checkpoint must be consistent with it")
}

// pin is the witness's Pin of the flags.
func (p *logPin) pin() witness.Pin { return witness.Pin{Key: p.key, CheckpointFile: p.checkpoint} }

// logCmd is `venue log`: the receipt log's tools.
func logCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "log",
		Short: "Check the venue's public receipt log",
	}
	cmd.AddCommand(logVerifyCmd(), rotateLogKeyCmd())
	return cmd
}

// logVerifyCmd is `venue log verify`: the whole log, entry by entry,
// against a checkpoint signed by the pinned key.
func logVerifyCmd() *cobra.Command {
	var p logPin
	var base string
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Check the whole receipt log against a fresh checkpoint",
		Long: `verify fetches the receipt log's checkpoint (PROTOCOL.md "The receipt log"),
checks its signature with the pinned log key (--log-key, or the key kept in
--checkpoint FILE, pinned on first use), checks it is consistent with the
checkpoint kept in FILE, then fetches every entry (GET /v1/log/entries, 1,000
at a time), checks each is a receipt signed by a key of the venue's JWKS, and
recomputes the RFC 6962 root, which must be the checkpoint's. An entry
changed, dropped, added or reordered, or a checkpoint that forks from the one
kept, fails. Run it from cron with --checkpoint to be a witness of the log.

It prints "log OK" and exits 0; on a failure "FAILED: <reason>", non-zero.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return failed(cmd, newWitness(cmd, base).Log(cmdContext(cmd), p.pin()))
		},
	}
	cmd.Flags().StringVar(&base, "url", envOr("VENUE_URL", "http://127.0.0.1:8080"), "the venue's base URL (env VENUE_URL)")
	p.flags(cmd)
	return cmd
}

// rotateLogKeyCmd is `venue log rotate-key`: a fresh log key signs the
// next checkpoints; /v1/info lists the old one with the size it signed up
// to. On Postgres it writes the store; with --admin-url it asks a running
// node (the embedded default's log lives in the server's memory).
func rotateLogKeyCmd() *cobra.Command {
	var databaseURL, adminURL string
	cmd := &cobra.Command{
		Use:   "rotate-key",
		Short: "Replace the receipt log's signing key (Postgres, or a running node's admin listener)",
		Long: `rotate-key draws a new Ed25519 log key, stores it (sealed with
VENUE_KEY_ENCRYPTION_KEY when set) and retires the current one at the log's
size: every node signs the next checkpoint with the new key, and /v1/info lists
the old key in log_retired_keys with the tree size it signed up to. Witnesses
that pinned the old key see checkpoints fail until they pin the new one.

With --database-url it writes the Postgres store. With --admin-url (a node's
admin listener, e.g. http://127.0.0.1:9090) the running node rotates the key
itself and signs a checkpoint with it at once: the only way on the embedded
default, whose log lives in the server's memory, and one that works on
Postgres too.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if adminURL != "" {
				return rotateLogKeyAdmin(cmd, adminURL)
			}
			if databaseURL == "" {
				return errors.New("--database-url (env DATABASE_URL) or --admin-url (a running node's admin listener) is required: the embedded default's log lives in the server's memory")
			}
			sealer, err := sealerFromEnv()
			if err != nil {
				return err
			}
			pg, err := postgres.New(cmd.Context(), databaseURL)
			if err != nil {
				return err
			}
			defer pg.Close()
			k, err := receiptlog.Rotate(cmd.Context(), pglog.New(pg.Pool()), sealer, time.Now())
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "log key %d is current; the next checkpoint is signed by it\n", k.ID)
			return nil
		},
	}
	cmd.Flags().StringVar(&databaseURL, "database-url", os.Getenv("DATABASE_URL"), "the Postgres store (env DATABASE_URL)")
	cmd.Flags().StringVar(&adminURL, "admin-url", "", "a running node's admin listener (http://HOST:PORT of serve's --admin-addr): the node rotates the key")
	return cmd
}

// rotateLogKeyAdmin asks the node at adminURL to rotate its log key
// (POST /log/rotate-key on its admin listener).
func rotateLogKeyAdmin(cmd *cobra.Command, adminURL string) error {
	ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(adminURL, "/")+"/log/rotate-key", nil)
	if err != nil {
		return fmt.Errorf("--admin-url: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s: %s", adminURL, resp.Status, strings.TrimSpace(string(body)))
	}
	var out struct {
		KeyID int64  `json:"key_id"`
		Key   string `json:"log_verifier_key"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return fmt.Errorf("%s: %w", adminURL, err)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "log key %d is current (%s); the latest checkpoint is signed by it\n", out.KeyID, out.Key)
	return nil
}
