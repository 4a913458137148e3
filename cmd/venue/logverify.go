package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/venuehq/venue/receipt"
	"github.com/venuehq/venue/receiptlog"
	"github.com/venuehq/venue/receiptlog/pglog"
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

// pinned is a log key and the last checkpoint seen (nil on first use).
type pinned struct {
	key  string
	last *receiptlog.Checkpoint
	tofu bool // the key was just taken from the venue, on first use
}

// checkpointFile is what --checkpoint FILE holds: the pinned verifier key
// on its first line, then the last signed checkpoint seen.
func readCheckpointFile(path string) (key string, note []byte, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil, nil
	}
	if err != nil {
		return "", nil, fmt.Errorf("read --checkpoint: %w", err)
	}
	key, rest, ok := strings.Cut(string(b), "\n")
	if !ok || receiptlog.KeyName(key) == "" {
		return "", nil, fmt.Errorf("--checkpoint %s: want the log key on the first line, then a checkpoint", path)
	}
	return key, []byte(rest), nil
}

func writeCheckpointFile(path, key string, note []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".venue-checkpoint-*")
	if err != nil {
		return fmt.Errorf("write --checkpoint: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := io.WriteString(tmp, key+"\n"+string(note)); err != nil {
		tmp.Close()
		return fmt.Errorf("write --checkpoint: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write --checkpoint: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write --checkpoint: %w", err)
	}
	return nil
}

// resolve finds the pinned key: --log-key, else the file's, else (a file
// not made yet) the venue's current one, trusted on this first use. ok is
// false when nothing pins a key (no --log-key, no --checkpoint).
func (p *logPin) resolve(cmd *cobra.Command, base string) (pinned, bool, error) {
	var pin pinned
	if p.checkpoint != "" {
		key, note, err := readCheckpointFile(p.checkpoint)
		if err != nil {
			return pin, false, err
		}
		if key != "" {
			if p.key != "" && p.key != key {
				return pin, false, fmt.Errorf("--log-key is not the key pinned in %s (%s): the log key changed? check the venue's /v1/info log_retired_keys, then start a new file", p.checkpoint, key)
			}
			cp, err := receiptlog.OpenCheckpoint(note, key)
			if err != nil {
				return pin, false, fmt.Errorf("--checkpoint %s: %w", p.checkpoint, err)
			}
			return pinned{key: key, last: &cp}, true, nil
		}
	}
	if p.key != "" {
		return pinned{key: p.key}, true, nil
	}
	if p.checkpoint == "" {
		return pin, false, nil
	}
	raw, err := fetch(cmd, base, "/v1/info")
	if err != nil {
		return pin, false, fmt.Errorf("fetch the venue's log key: %w", err)
	}
	var info struct {
		Key string `json:"log_verifier_key"`
	}
	if err := json.Unmarshal(raw, &info); err != nil || info.Key == "" {
		return pin, false, errors.New("the venue's /v1/info has no log_verifier_key")
	}
	return pinned{key: info.Key, tofu: true}, true, nil
}

// freshCheckpoint fetches the venue's checkpoint, opens it with the pinned
// key and checks it is consistent with the last one seen. It returns the
// checkpoint and its signed text; save writes it to the file (after the
// caller's own checks passed).
func (p *logPin) freshCheckpoint(cmd *cobra.Command, base string, pin pinned) (receiptlog.Checkpoint, func() error, error) {
	out := cmd.OutOrStdout()
	msg, err := fetch(cmd, base, "/v1/log/checkpoint")
	if err != nil {
		return receiptlog.Checkpoint{}, nil, fmt.Errorf("fetch the log's checkpoint: %w", err)
	}
	cp, err := receiptlog.OpenCheckpoint(msg, pin.key)
	if err != nil {
		return cp, nil, fmt.Errorf("the checkpoint is not signed by the pinned log key %s (the venue changed its log key, or the checkpoint is forged): %w", pin.key, err)
	}
	if pin.tofu {
		fmt.Fprintf(out, "log key %s pinned in %s (trust on first use)\n", pin.key, p.checkpoint)
	}
	fmt.Fprintf(out, "checkpoint OK: %s, %d entries, signed by the pinned log key\n", cp.Origin, cp.Size)
	if pin.last != nil {
		var hashes [][]byte
		if cp.Size > pin.last.Size && pin.last.Size > 0 {
			raw, err := fetch(cmd, base, "/v1/log/proof/consistency?first="+strconv.FormatInt(pin.last.Size, 10)+"&second="+strconv.FormatInt(cp.Size, 10))
			if err != nil {
				return cp, nil, fmt.Errorf("fetch the consistency proof: %w", err)
			}
			var proof receiptlog.ConsistencyProof
			if err := json.Unmarshal(raw, &proof); err != nil {
				return cp, nil, fmt.Errorf("consistency proof is not {\"first\",\"second\",\"hashes\"}: %w", err)
			}
			hashes = proof.Hashes
		}
		if err := receiptlog.VerifyConsistency(*pin.last, cp, hashes); err != nil {
			return cp, nil, fmt.Errorf("the log is not consistent with the checkpoint kept in %s: %w", p.checkpoint, err)
		}
		fmt.Fprintf(out, "consistency OK: the log of %d entries extends the one of %d kept in %s\n", cp.Size, pin.last.Size, p.checkpoint)
	}
	save := func() error {
		if p.checkpoint == "" {
			return nil
		}
		return writeCheckpointFile(p.checkpoint, pin.key, msg)
	}
	return cp, save, nil
}

// verifyLogInclusion is verify-receipt's log step: the receipt is an entry
// of the log under a fresh checkpoint signed by the pinned key.
func verifyLogInclusion(cmd *cobra.Command, base string, p logPin, token string, claims *receipt.Claims) error {
	out := cmd.OutOrStdout()
	pin, ok, err := p.resolve(cmd, base)
	if err != nil {
		return err
	}
	if !ok {
		fmt.Fprintln(out, "log: not checked (pin the log key with --log-key KEY or --checkpoint FILE)")
		return nil
	}
	cp, save, err := p.freshCheckpoint(cmd, base, pin)
	if err != nil {
		return err
	}
	raw, err := fetch(cmd, base, "/v1/log/proof/inclusion?negotiation_id="+url.QueryEscape(claims.NegotiationID)+"&tree_size="+strconv.FormatInt(cp.Size, 10))
	if err != nil {
		return fmt.Errorf("the receipt is not in the log under this checkpoint (a receipt is logged within a few seconds of the ending): %w", err)
	}
	var proof receiptlog.InclusionProof
	if err := json.Unmarshal(raw, &proof); err != nil {
		return fmt.Errorf("inclusion proof is not {\"leaf_index\",\"tree_size\",\"hashes\"}: %w", err)
	}
	if err := receiptlog.VerifyInclusion(token, proof, cp); err != nil {
		return fmt.Errorf("the receipt is not the log's entry for %s: %w", claims.NegotiationID, err)
	}
	fmt.Fprintf(out, "log OK: entry %d of %d\n", proof.LeafIndex, cp.Size)
	return save()
}

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
			err := runLogVerify(cmd, base, p)
			if err != nil {
				fmt.Fprintf(cmd.OutOrStdout(), "FAILED: %v\n", err)
			}
			return err
		},
	}
	cmd.Flags().StringVar(&base, "url", envOr("VENUE_URL", "http://127.0.0.1:8080"), "the venue's base URL (env VENUE_URL)")
	p.flags(cmd)
	return cmd
}

func runLogVerify(cmd *cobra.Command, base string, p logPin) error {
	pin, ok, err := p.resolve(cmd, base)
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("pin the log key with --log-key KEY or --checkpoint FILE (never the key the venue serves now)")
	}
	cp, save, err := p.freshCheckpoint(cmd, base, pin)
	if err != nil {
		return err
	}
	jwks, err := fetch(cmd, base, "/.well-known/jwks.json")
	if err != nil {
		return fmt.Errorf("fetch the venue's receipt keys: %w", err)
	}
	receipts := make([]string, 0, cp.Size)
	for start := int64(0); start < cp.Size; start += receiptlog.MaxEntries {
		end := min(cp.Size, start+receiptlog.MaxEntries)
		raw, err := fetch(cmd, base, fmt.Sprintf("/v1/log/entries?start=%d&end=%d", start, end))
		if err != nil {
			return fmt.Errorf("fetch entries %d-%d: %w", start, end, err)
		}
		var page struct {
			Entries []receiptlog.Entry `json:"entries"`
		}
		if err := json.Unmarshal(raw, &page); err != nil {
			return fmt.Errorf("entries %d-%d are not {\"entries\":[{\"index\",\"receipt\"}]}: %w", start, end, err)
		}
		if int64(len(page.Entries)) != end-start {
			return fmt.Errorf("asked for entries %d-%d, got %d: the log is shorter than its checkpoint", start, end, len(page.Entries))
		}
		for i, e := range page.Entries {
			if e.Index != start+int64(i) {
				return fmt.Errorf("entry %d has index %d", start+int64(i), e.Index)
			}
			if _, err := receipt.Verify(e.Receipt, jwks); err != nil {
				return fmt.Errorf("entry %d is not a receipt of the venue: %w", e.Index, err)
			}
			receipts = append(receipts, e.Receipt)
		}
	}
	if err := receiptlog.VerifyRoot(receipts, cp); err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "log OK: %d entries, every one a receipt of the venue, root %x is the checkpoint's\n", cp.Size, cp.Root)
	return save()
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
