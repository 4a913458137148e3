package receiptlog

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
)

// ErrCheckpoint is wrapped by every error about a checkpoint's text or
// signature.
var ErrCheckpoint = errors.New("receiptlog: bad checkpoint")

// Checkpoint is the body of a C2SP tlog-checkpoint (PROTOCOL.md "The
// receipt log"): the log's origin, its size in leaves and the RFC 6962 root
// hash of those leaves (32 bytes).
type Checkpoint struct {
	Origin string
	Size   int64
	Root   []byte
}

// Text is the checkpoint's note text: "<origin>\n<size>\n<base64 root>\n".
func (c Checkpoint) Text() string {
	return c.Origin + "\n" + strconv.FormatInt(c.Size, 10) + "\n" + base64.StdEncoding.EncodeToString(c.Root) + "\n"
}

// ParseCheckpoint reads a checkpoint's note text (as note.Open returns it
// in Note.Text). Extension lines after the root are allowed and ignored,
// as C2SP tlog-checkpoint says. Errors wrap ErrCheckpoint.
func ParseCheckpoint(text string) (Checkpoint, error) {
	lines := strings.Split(text, "\n")
	if len(lines) < 4 || lines[len(lines)-1] != "" {
		return Checkpoint{}, fmt.Errorf("%w: want origin, size and root hash lines", ErrCheckpoint)
	}
	origin, sizeText, rootText := lines[0], lines[1], lines[2]
	if origin == "" {
		return Checkpoint{}, fmt.Errorf("%w: empty origin", ErrCheckpoint)
	}
	size, err := strconv.ParseInt(sizeText, 10, 64)
	if err != nil || size < 0 || strconv.FormatInt(size, 10) != sizeText {
		return Checkpoint{}, fmt.Errorf("%w: size %q is not a decimal count", ErrCheckpoint, sizeText)
	}
	root, err := base64.StdEncoding.Strict().DecodeString(rootText)
	if err != nil || len(root) != sha256.Size {
		return Checkpoint{}, fmt.Errorf("%w: root %q is not base64 of 32 bytes", ErrCheckpoint, rootText)
	}
	return Checkpoint{Origin: origin, Size: size, Root: root}, nil
}

// noteSigner signs notes with an Ed25519 key under a name (the log's
// origin), as note.NewSigner would from a "PRIVATE+KEY+..." string.
type noteSigner struct {
	name string
	hash uint32
	priv ed25519.PrivateKey
}

func (s noteSigner) Name() string                    { return s.name }
func (s noteSigner) KeyHash() uint32                 { return s.hash }
func (s noteSigner) Sign(msg []byte) ([]byte, error) { return ed25519.Sign(s.priv, msg), nil }

// VerifierKey is the note verifier key of the log key priv under name,
// "<name>+<8 hex key hash>+<base64 of 0x01 || public key>": the
// log_verifier_key of GET /v1/info and what note.NewVerifier takes.
func VerifierKey(name string, pub ed25519.PublicKey) (string, error) {
	vkey, err := note.NewEd25519VerifierKey(name, pub)
	if err != nil {
		return "", fmt.Errorf("receiptlog: verifier key %q: %w", name, err)
	}
	return vkey, nil
}

// SignCheckpoint signs c's text with the log key priv (named c.Origin) and
// returns the signed note, as GET /v1/log/checkpoint serves it.
func SignCheckpoint(c Checkpoint, priv ed25519.PrivateKey) ([]byte, error) {
	if len(priv) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("receiptlog: sign checkpoint: log key is %d bytes", len(priv))
	}
	vkey, err := VerifierKey(c.Origin, priv.Public().(ed25519.PublicKey))
	if err != nil {
		return nil, err
	}
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return nil, fmt.Errorf("receiptlog: sign checkpoint: %w", err)
	}
	msg, err := note.Sign(&note.Note{Text: c.Text()}, noteSigner{name: v.Name(), hash: v.KeyHash(), priv: priv})
	if err != nil {
		return nil, fmt.Errorf("receiptlog: sign checkpoint: %w", err)
	}
	return msg, nil
}

// OpenCheckpoint checks a signed checkpoint against the verifier keys
// (note format) and reads it: at least one signature must be by one of
// them, and the origin must be the name of the key that signed. Errors wrap
// ErrCheckpoint (a signature by none of the keys, a bad signature, a body
// out of shape).
func OpenCheckpoint(msg []byte, verifierKeys ...string) (Checkpoint, error) {
	var vs []note.Verifier
	for _, k := range verifierKeys {
		v, err := note.NewVerifier(k)
		if err != nil {
			return Checkpoint{}, fmt.Errorf("%w: verifier key %q: %w", ErrCheckpoint, k, err)
		}
		vs = append(vs, v)
	}
	n, err := note.Open(msg, note.VerifierList(vs...))
	if err != nil {
		return Checkpoint{}, fmt.Errorf("%w: %w", ErrCheckpoint, err)
	}
	c, err := ParseCheckpoint(n.Text)
	if err != nil {
		return Checkpoint{}, err
	}
	for _, sig := range n.Sigs {
		if sig.Name == c.Origin {
			return c, nil
		}
	}
	return Checkpoint{}, fmt.Errorf("%w: signed by %q, not by the origin %q", ErrCheckpoint, n.Sigs[0].Name, c.Origin)
}

// KeyName is the name in a verifier key ("" if it is not one).
func KeyName(vkey string) string {
	name, _, ok := strings.Cut(vkey, "+")
	if !ok {
		return ""
	}
	return name
}

// SameCheckpoint reports whether two signed checkpoints have the same body.
func SameCheckpoint(a, b []byte) bool {
	ab, _, _ := bytes.Cut(a, []byte("\n\n"))
	bb, _, _ := bytes.Cut(b, []byte("\n\n"))
	return bytes.Equal(ab, bb)
}
