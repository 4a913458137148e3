package receipt

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/venuehq/venue/negotiation"
)

// Entry is one stored transcript frame (PROTOCOL.md "Transcript, offer hash and chain hash"), as
// GET /v1/negotiations/<id>/transcript returns it.
type Entry struct {
	Seq   int64           `json:"seq"`   // 1, 2, 3, ... without gaps
	Frame json.RawMessage `json:"frame"` // the frame as stored
	Hash  string          `json:"hash"`  // ChainHash(previous entry's Hash, Frame)
}

// ErrTranscript is wrapped by every [*TranscriptError].
var ErrTranscript = errors.New("receipt: transcript does not verify")

// TranscriptError names the first seq at which a transcript fails to verify.
type TranscriptError struct {
	Seq    int64  // the first failing seq (for a missing tail: the first seq missing)
	Reason string // what failed there
}

func (e *TranscriptError) Error() string {
	return fmt.Sprintf("receipt: transcript seq %d: %s", e.Seq, e.Reason)
}

// Unwrap makes errors.Is(err, ErrTranscript) hold.
func (e *TranscriptError) Unwrap() error { return ErrTranscript }

// ChainHash links one frame into the transcript chain (PROTOCOL.md "Transcript, offer hash and chain hash"):
//
//	"sha256:" + hex(SHA-256(prev || JCS(frame)))
//
// where prev is the previous entry's hash exactly as its string
// ("sha256:..."), or "" for seq 1, and JCS is RFC 8785 canonical JSON, so
// key order and number spelling of frame do not matter. It fails if frame
// is not a JSON value JCS accepts.
func ChainHash(prev string, frame json.RawMessage) (string, error) {
	h, err := negotiation.ChainHash(prev, frame) // the one definition, used by the room
	if err != nil {
		return "", fmt.Errorf("receipt: chain hash: frame is not canonicalizable JSON: %w", err)
	}
	return h, nil
}

// VerifyTranscript checks that entries are the whole transcript a receipt
// commits to: seqs run 1, 2, 3, ... without gaps, every Hash is the
// ChainHash of its frame on the previous Hash, and the last seq and hash
// equal c.LastSeq and c.HeadHash (no entries: LastSeq 0, HeadHash "").
// Any change to any byte of a frame's meaning is caught. The error is a
// [*TranscriptError] naming the first seq that fails.
func VerifyTranscript(c *Claims, entries []Entry) error {
	prev := ""
	for i, e := range entries {
		want := int64(i) + 1
		if e.Seq != want {
			return &TranscriptError{Seq: want, Reason: fmt.Sprintf("found seq %d in its place", e.Seq)}
		}
		h, err := ChainHash(prev, e.Frame)
		if err != nil {
			return &TranscriptError{Seq: e.Seq, Reason: err.Error()}
		}
		if h != e.Hash {
			return &TranscriptError{Seq: e.Seq, Reason: fmt.Sprintf("hash is %s, the chain gives %s", e.Hash, h)}
		}
		prev = h
	}
	last := int64(len(entries))
	switch {
	case last < c.LastSeq:
		return &TranscriptError{Seq: last + 1, Reason: fmt.Sprintf("missing; the receipt's last seq is %d", c.LastSeq)}
	case last > c.LastSeq:
		return &TranscriptError{Seq: c.LastSeq + 1, Reason: fmt.Sprintf("beyond the receipt's last seq %d", c.LastSeq)}
	case prev != c.HeadHash:
		return &TranscriptError{Seq: last, Reason: fmt.Sprintf("head hash %s is not the receipt's %s", prev, c.HeadHash)}
	}
	return nil
}
