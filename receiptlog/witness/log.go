package witness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"

	"github.com/venuehq/venue/receipt"
	"github.com/venuehq/venue/receiptlog"
)

// Pin is how a log check knows the log key (PROTOCOL.md "The receipt
// log"): Key (--log-key), or the key kept in CheckpointFile since its first
// use (trust on first use), never the one the venue serves now.
type Pin struct {
	Key            string
	CheckpointFile string
}

// pinned is a log key and the last checkpoint seen (nil on first use).
type pinned struct {
	key  string
	last *receiptlog.Checkpoint
	tofu bool // the key was just taken from the venue, on first use
}

// readCheckpointFile reads what a checkpoint file holds: the pinned
// verifier key on its first line, then the last signed checkpoint seen. A
// file not made yet is no key and no checkpoint.
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

// writeCheckpointFile replaces path with key and note, atomically (a
// temporary file renamed over it).
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

// resolve finds the pinned key: p.Key, else the file's, else (a file not
// made yet) the venue's current one, trusted on this first use. ok is
// false when nothing pins a key (no Key, no CheckpointFile).
func (w *Witness) resolve(ctx context.Context, p Pin) (pinned, bool, error) {
	var pin pinned
	if p.Key != "" {
		if _, err := note.NewVerifier(p.Key); err != nil {
			return pin, false, fmt.Errorf("--log-key %q is not a log verifier key (the log_verifier_key of the venue's /v1/info: <origin>+<hash>+<key>): %w", p.Key, err)
		}
	}
	if p.CheckpointFile != "" {
		key, note, err := readCheckpointFile(p.CheckpointFile)
		if err != nil {
			return pin, false, err
		}
		if key != "" {
			if p.Key != "" && p.Key != key {
				return pin, false, fmt.Errorf("--log-key is not the key pinned in %s (%s): the log key changed? check the venue's /v1/info log_retired_keys, then start a new file", p.CheckpointFile, key)
			}
			cp, err := receiptlog.OpenCheckpoint(note, key)
			if err != nil {
				return pin, false, fmt.Errorf("--checkpoint %s: %w", p.CheckpointFile, err)
			}
			return pinned{key: key, last: &cp}, true, nil
		}
	}
	if p.Key != "" {
		return pinned{key: p.Key}, true, nil
	}
	if p.CheckpointFile == "" {
		return pin, false, nil
	}
	raw, err := w.Fetch(ctx, "/v1/info")
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
// checkpoint; save writes it to the file (after the caller's own checks
// passed).
func (w *Witness) freshCheckpoint(ctx context.Context, p Pin, pin pinned) (receiptlog.Checkpoint, func() error, error) {
	msg, err := w.Fetch(ctx, "/v1/log/checkpoint")
	if err != nil {
		return receiptlog.Checkpoint{}, nil, fmt.Errorf("fetch the log's checkpoint: %w", err)
	}
	cp, err := receiptlog.OpenCheckpoint(msg, pin.key)
	if err != nil {
		return cp, nil, fmt.Errorf("the checkpoint is not signed by the pinned log key %s (the venue changed its log key, or the checkpoint is forged): %w", pin.key, err)
	}
	if pin.tofu {
		fmt.Fprintf(w.Out, "log key %s pinned in %s (trust on first use)\n", pin.key, p.CheckpointFile)
	}
	fmt.Fprintf(w.Out, "checkpoint OK: %s, %d entries, signed by the pinned log key\n", cp.Origin, cp.Size)
	if pin.last != nil {
		var hashes [][]byte
		if cp.Size > pin.last.Size && pin.last.Size > 0 {
			raw, err := w.Fetch(ctx, "/v1/log/proof/consistency?first="+strconv.FormatInt(pin.last.Size, 10)+"&second="+strconv.FormatInt(cp.Size, 10))
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
			return cp, nil, fmt.Errorf("the log is not consistent with the checkpoint kept in %s: %w", p.CheckpointFile, err)
		}
		fmt.Fprintf(w.Out, "consistency OK: the log of %d entries extends the one of %d kept in %s\n", cp.Size, pin.last.Size, p.CheckpointFile)
	}
	save := func() error {
		if p.CheckpointFile == "" {
			return nil
		}
		return writeCheckpointFile(p.CheckpointFile, pin.key, msg)
	}
	return cp, save, nil
}

// Inclusion is the log step of Receipt (PROTOCOL.md "The receipt log"):
// the receipt token (whose claims were verified) is an entry of the log
// under a fresh checkpoint signed by the pinned key, by an RFC 6962
// inclusion proof; the checkpoint file, if any, then keeps that
// checkpoint. Without a pinned key it says the log was not checked.
func (w *Witness) Inclusion(ctx context.Context, p Pin, token string, claims *receipt.Claims) error {
	pin, ok, err := w.resolve(ctx, p)
	if err != nil {
		return err
	}
	if !ok {
		fmt.Fprintln(w.Out, "log: not checked (pin the log key with --log-key KEY or --checkpoint FILE)")
		return nil
	}
	cp, save, err := w.freshCheckpoint(ctx, p, pin)
	if err != nil {
		return err
	}
	raw, err := w.Fetch(ctx, "/v1/log/proof/inclusion?negotiation_id="+url.QueryEscape(claims.NegotiationID)+"&tree_size="+strconv.FormatInt(cp.Size, 10))
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
	fmt.Fprintf(w.Out, "log OK: entry %d of %d\n", proof.LeafIndex, cp.Size)
	return save()
}

// Log checks the whole log (PROTOCOL.md "The receipt log"): a fresh
// checkpoint signed by the pinned key and consistent with the one kept,
// then every entry (GET /v1/log/entries, receiptlog.MaxEntries at a time)
// a receipt signed by a key of the venue's JWKS, and the RFC 6962 root of
// them all the checkpoint's. An entry changed, dropped, added or
// reordered, or a checkpoint that forks from the one kept, fails.
func (w *Witness) Log(ctx context.Context, p Pin) error {
	pin, ok, err := w.resolve(ctx, p)
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("pin the log key with --log-key KEY or --checkpoint FILE (never the key the venue serves now)")
	}
	cp, save, err := w.freshCheckpoint(ctx, p, pin)
	if err != nil {
		return err
	}
	jwks, err := w.Fetch(ctx, "/.well-known/jwks.json")
	if err != nil {
		return fmt.Errorf("fetch the venue's receipt keys: %w", err)
	}
	receipts := make([]string, 0, cp.Size)
	for start := int64(0); start < cp.Size; start += receiptlog.MaxEntries {
		end := min(cp.Size, start+receiptlog.MaxEntries)
		page, err := w.entries(ctx, start, end, jwks)
		if err != nil {
			return err
		}
		receipts = append(receipts, page...)
	}
	if err := receiptlog.VerifyRoot(receipts, cp); err != nil {
		return err
	}
	fmt.Fprintf(w.Out, "log OK: %d entries, every one a receipt of the venue, root %x is the checkpoint's\n", cp.Size, cp.Root)
	return save()
}

// entries fetches the log's entries [start, end) and checks each is the
// one at its index and a receipt of the venue (jwks).
func (w *Witness) entries(ctx context.Context, start, end int64, jwks []byte) ([]string, error) {
	raw, err := w.Fetch(ctx, fmt.Sprintf("/v1/log/entries?start=%d&end=%d", start, end))
	if err != nil {
		return nil, fmt.Errorf("fetch entries %d-%d: %w", start, end, err)
	}
	var page struct {
		Entries []receiptlog.Entry `json:"entries"`
	}
	if err := json.Unmarshal(raw, &page); err != nil {
		return nil, fmt.Errorf("entries %d-%d are not {\"entries\":[{\"index\",\"receipt\"}]}: %w", start, end, err)
	}
	if int64(len(page.Entries)) != end-start {
		return nil, fmt.Errorf("asked for entries %d-%d, got %d: the log is shorter than its checkpoint", start, end, len(page.Entries))
	}
	out := make([]string, 0, len(page.Entries))
	for i, e := range page.Entries {
		if e.Index != start+int64(i) {
			return nil, fmt.Errorf("entry %d has index %d", start+int64(i), e.Index)
		}
		if _, err := receipt.Verify(e.Receipt, jwks); err != nil {
			return nil, fmt.Errorf("entry %d is not a receipt of the venue: %w", e.Index, err)
		}
		out = append(out, e.Receipt)
	}
	return out, nil
}
