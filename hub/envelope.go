package hub

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// Kind says what an envelope carries.
type Kind string

// Kinds of envelope (ARCHITECTURE.md "One frame's way").
const (
	// KindEntry is a transcript frame: Seq, Hash and, on a
	// negotiation_message, From are set. Every socket of the room gets it,
	// but a party does not get its own negotiation_message back.
	KindEntry Kind = "e"
	// KindPrivate is a frame for one party alone (escalation_resolved): To.
	KindPrivate Kind = "p"
	// KindThinking is agent_thinking: every socket but the sender's (From).
	KindThinking Kind = "t"
	// KindSync says the negotiation's stored last seq is Seq: a socket
	// behind it catches up from the store (a resend of a frame of unknown
	// outcome, the periodic reconciliation).
	KindSync Kind = "s"
)

// envelope is what travels on a negotiation's bus topic. It is encoded as
// one header line "KIND SEQ HASH FROM TO" ("-" for an empty field; ids and
// hashes hold no spaces) and the frame bytes after it, so a hop costs no
// JSON work.
type envelope struct {
	Kind  Kind
	Seq   int64           // entries
	Hash  string          // entries
	From  string          // entries (negotiation_message) and thinking
	To    string          // private
	Frame json.RawMessage // the frame as sent
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (e envelope) encode() []byte {
	b := make([]byte, 0, len(e.Kind)+20+len(e.Hash)+len(e.From)+len(e.To)+8+len(e.Frame))
	b = append(b, e.Kind...)
	b = append(b, ' ')
	b = strconv.AppendInt(b, e.Seq, 10)
	for _, f := range [...]string{e.Hash, e.From, e.To} {
		b = append(append(b, ' '), orDash(f)...)
	}
	b = append(b, '\n')
	return append(b, e.Frame...)
}

// decodeEnvelope parses encode's output; ok is false for anything else.
// The header becomes one string and the fields are cut from it: one
// allocation per receiver of a frame.
func decodeEnvelope(b []byte) (e envelope, ok bool) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return e, false
	}
	var f [5]string
	rest := string(b[:i])
	for k := range 4 {
		j := strings.IndexByte(rest, ' ')
		if j < 0 {
			return e, false
		}
		f[k], rest = rest[:j], rest[j+1:]
	}
	if strings.IndexByte(rest, ' ') >= 0 {
		return e, false
	}
	f[4] = rest
	seq, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return e, false
	}
	undash := func(s string) string {
		if s == "-" {
			return ""
		}
		return s
	}
	return envelope{Kind: Kind(f[0]), Seq: seq, Hash: undash(f[2]), From: undash(f[3]), To: undash(f[4]), Frame: b[i+1:]}, true
}
