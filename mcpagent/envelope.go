package mcpagent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/venuehq/venue/internal/lockedio"
	"github.com/venuehq/venue/wire"
)

// The JSON-RPC envelope is read as strictly as the venue reads a frame
// (SECURITY.md): every message, over stdio or HTTP, passes envelopeRefusal
// (wire.CheckStrict on every member but a tool call's arguments, which the
// tool checks the same way itself) before the SDK decodes it. A repeated
// key (two "name"s, two "arguments", two "id"s) would otherwise reach the
// SDK, whose decoder keeps the last while a host showing the call for
// approval may show the first: a read-only call approved as room_state
// could run as walk.

// JSON-RPC 2.0 error codes of a message refused before the SDK reads it.
const (
	rpcParseError     = -32700 // not JSON
	rpcInvalidRequest = -32600 // JSON, but not strict JSON (a repeated key, too deep, trailing data)
)

// maxMessageBytes bounds one message: a stdio line or an HTTP body (the
// SDK's own limit for bodies, mcp.DefaultMaxRequestBodyBytes).
const maxMessageBytes = mcp.DefaultMaxRequestBodyBytes

// envelopeRefusal returns the JSON-RPC error response for a message whose
// envelope is not strict JSON, or nil when it is. A tool call's
// "arguments" are left to the tool, which reads them with the same check
// and answers a refusal as a tool result the model can read (tools.go).
// The id is the message's when it has exactly one (null otherwise:
// JSON-RPC's answer when the id cannot be told).
func envelopeRefusal(msg []byte) []byte {
	if !json.Valid(msg) {
		return rpcError(nil, rpcParseError, "refused before reading: not JSON")
	}
	var werr *wire.Error
	if len(msg) > 0 && msg[0] == '[' { // a batch
		var items []json.RawMessage
		_ = json.Unmarshal(msg, &items)
		for _, it := range items {
			if werr = checkEnvelope(it, true); werr != nil {
				break
			}
		}
	} else {
		werr = checkEnvelope(msg, true)
	}
	if werr == nil {
		return nil
	}
	return rpcError(envelopeID(msg), rpcInvalidRequest, "refused before reading: "+werr.Message)
}

// checkEnvelope checks one JSON object's keys (no two equal, also when
// they differ only in case) and every value with wire.CheckStrict, but for
// the "arguments" of its "params" (top: this is the message, whose params
// object is checked the same way). A value that is not an object is
// checked whole.
func checkEnvelope(obj []byte, top bool) *wire.Error {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return wire.CheckStrict(obj)
	}
	keys := []byte{'{'}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return wire.CheckStrict(obj)
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return wire.CheckStrict(obj)
		}
		kb, _ := json.Marshal(k)
		keys = append(append(keys, kb...), ":0,"...)
		switch {
		case top && k == "params":
			if werr := checkEnvelope(v, false); werr != nil {
				return werr
			}
		case !top && k == "arguments":
			// the tool's to check (decodeArgs), with its own answer
		default:
			if werr := wire.CheckStrict(v); werr != nil {
				return werr
			}
		}
	}
	if len(keys) > 1 {
		keys = keys[:len(keys)-1]
	}
	// The keys alone, as an object: wire's rule for repeated keys.
	return wire.CheckStrict(append(keys, '}'))
}

// envelopeID is the "id" of a JSON-RPC message when its top-level object
// has exactly one, a string or a number; otherwise nil (null).
func envelopeID(msg []byte) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(msg))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var id json.RawMessage
	n := 0
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil
		}
		if k == "id" {
			id, n = v, n+1
		}
	}
	if n != 1 || len(id) == 0 || (id[0] != '"' && id[0] != '-' && (id[0] < '0' || id[0] > '9')) {
		return nil
	}
	return id
}

// StdioTransport is MCP's stdio transport (one JSON-RPC message a line)
// over r and w, with the envelope checked: a line that is not strict JSON
// is answered on w with a JSON-RPC error (-32700 for what is not JSON,
// -32600 for a repeated key, nesting too deep or trailing data; the
// message's id when it has one) and dropped, and reading goes on. The
// SDK's own transport ends the session at the first line it cannot parse.
// A line over 4 MiB is refused (-32600) the same way. Closing the session
// closes neither r nor w.
func StdioTransport(r io.Reader, w io.Writer) mcp.Transport {
	lw := &lockedWriter{lockedio.Writer{W: w}}
	pr, pw := io.Pipe()
	go filterLines(bufio.NewReaderSize(r, 64<<10), pw, lw)
	return &mcp.IOTransport{Reader: pr, Writer: lw, MaxLineLength: maxMessageBytes + 1}
}

// filterLines copies the lines of r that pass the envelope check to pw,
// answers the others on out, and closes pw with r's end (or when the
// session closed pw's reader).
func filterLines(r *bufio.Reader, pw *io.PipeWriter, out io.Writer) {
	var line []byte
	tooLong := false
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > maxMessageBytes {
				tooLong, line = true, line[:0]
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue // the rest of the line follows
		}
		switch msg := bytes.TrimSpace(line); {
		case tooLong:
			_, _ = out.Write(append(rpcError(nil, rpcInvalidRequest, fmt.Sprintf("refused before reading: a message over %d bytes", maxMessageBytes)), '\n'))
		case len(msg) == 0:
		default:
			if bad := envelopeRefusal(msg); bad != nil {
				_, _ = out.Write(append(bad, '\n'))
			} else if _, werr := pw.Write(append(msg, '\n')); werr != nil {
				return // the session is over
			}
		}
		line, tooLong = line[:0], false
		if err != nil {
			_ = pw.CloseWithError(err)
			return
		}
	}
}

// rpcError is a JSON-RPC error response.
func rpcError(id json.RawMessage, code int, msg string) []byte {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
	return b
}

// lockedWriter serializes whole writes: the SDK writes each message in one
// Write, and so do refusals, so a refusal never lands inside a message.
type lockedWriter struct{ lockedio.Writer }

func (l *lockedWriter) Close() error { return nil }

// checkBody reads a POST's body (at most maxMessageBytes; over it 413, as
// the SDK answers) and refuses (HTTP 400 with the JSON-RPC error) a body
// that is not strict JSON. It reports whether r may go on to the SDK, with
// its body restored.
func checkBody(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodPost || r.Body == nil {
		return true
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxMessageBytes))
	_ = r.Body.Close()
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			http.Error(w, fmt.Sprintf("request body exceeds %d bytes", mbe.Limit), http.StatusRequestEntityTooLarge)
		} else {
			http.Error(w, "reading the request body: "+err.Error(), http.StatusBadRequest)
		}
		return false
	}
	if bad := envelopeRefusal(bytes.TrimSpace(body)); bad != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write(append(bad, '\n'))
		return false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return true
}
