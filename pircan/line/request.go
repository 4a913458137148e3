package line

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/venuehq/venue/wire"
)

// Prefix starts every request and reply (compared case-insensitively in
// requests).
const Prefix = "PIRCAN/1"

// Byte limits of PIRCAN.md "Message format", in UTF-8 bytes.
const (
	// MaxRequestBytes is the longest request line; longer is too_long.
	MaxRequestBytes = 400
	// MaxReplyBytes is the longest reply payload (the NOTICE text).
	MaxReplyBytes = 350
	// MaxIDChars is the longest correlation id, in characters.
	MaxIDChars = 64
	// MaxIDBytes bounds the id's JSON form (escapes counted, quotes not):
	// a reply always has room for its "re".
	MaxIDBytes = 64
	// maxScanBytes bounds ScanID's reading of a request.
	maxScanBytes = 1024
)

// Error codes of PIRCAN.md "Errors" that the codec and the lobby verbs
// produce.
const (
	CodeNotPircan          = "not_pircan"
	CodeMissingVerb        = "missing_verb"
	CodeUnknownVerb        = "unknown_verb"
	CodeInvalidJSON        = "invalid_json"
	CodeInvalidID          = "invalid_id"
	CodeInvalidArgument    = "invalid_argument"
	CodeTooLong            = "too_long"
	CodeEmpty              = "empty"
	CodeNotIdentified      = "not_identified"
	CodeNotRegistered      = "not_registered"
	CodeUnknownChannel     = "unknown_channel"
	CodeRateLimited        = "rate_limited"
	CodeRegistrationPaused = "registration_paused"
	CodeInternal           = "internal_error"
)

// Error is a protocol error with a stable code (one of the Code constants)
// and a message for people. Verb and Re are filled in when known.
type Error struct {
	Code    string
	Message string
	Verb    string // the request's verb, upper-cased ("" when none was read)
	Re      string // the request's id ("" when none was read)
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Errorf is an *Error with code and message.
func Errorf(code, message string) *Error { return &Error{Code: code, Message: message} }

// Request is a parsed request line.
type Request struct {
	// Verb is the verb, upper-cased (ASCII). Whether it is known is the
	// caller's business (unknown_verb).
	Verb string
	// Args is the JSON object argument, nil when the request had none.
	Args json.RawMessage
	// ID is the optional correlation id ("" when absent), echoed as "re".
	ID string
}

// Parse reads one request line (the PRIVMSG text). Errors, as *Error:
//   - too_long: over MaxRequestBytes;
//   - empty: nothing but blanks;
//   - not_pircan: it does not start with PIRCAN/1 (any case);
//   - missing_verb: no verb after the prefix;
//   - invalid_json: the argument is not one JSON object (or has trailing text);
//   - invalid_id: "id" is present but not a string of 1 to MaxIDChars
//     characters and at most MaxIDBytes bytes once escaped (validID).
//
// Errors after the verb was read carry Verb; after the id was read, Re.
func Parse(text string) (Request, *Error) {
	if len(text) > MaxRequestBytes {
		return Request{}, Errorf(CodeTooLong, "A request must not exceed 400 bytes.")
	}
	s := strings.Trim(text, " \t")
	if s == "" {
		return Request{}, Errorf(CodeEmpty, "Empty request; send PIRCAN/1 HELP.")
	}
	head, rest, _ := strings.Cut(s, " ")
	if !strings.EqualFold(head, Prefix) {
		return Request{}, Errorf(CodeNotPircan, "Requests start with PIRCAN/1; send PIRCAN/1 HELP.")
	}
	rest = strings.TrimLeft(rest, " \t")
	if rest == "" {
		return Request{}, Errorf(CodeMissingVerb, "No verb; send PIRCAN/1 HELP.")
	}
	verb, arg, _ := strings.Cut(rest, " ")
	if i := strings.IndexAny(verb, "{\t"); i >= 0 { // PIRCAN/1 FIND{"q":1}
		verb, arg = verb[:i], rest[i:]
	}
	if verb == "" {
		return Request{}, Errorf(CodeMissingVerb, "No verb; send PIRCAN/1 HELP.")
	}
	req := Request{Verb: upperASCII(verb)}
	fail := func(code, msg string) (Request, *Error) {
		return Request{}, &Error{Code: code, Message: msg, Verb: req.Verb, Re: req.ID}
	}
	if !validVerb(req.Verb) {
		return fail(CodeUnknownVerb, "Unknown verb; send PIRCAN/1 HELP.")
	}
	arg = strings.Trim(arg, " \t")
	if arg == "" {
		return req, nil
	}
	if arg[0] != '{' || !json.Valid([]byte(arg)) {
		return fail(CodeInvalidJSON, "The argument must be one JSON object.")
	}
	// Each key once, also in another case, as every path of the venue reads
	// JSON (PIRCAN.md "Message format"): encoding/json keeps the last of
	// two, so {"text":"a","text":"b"} would say one thing to a person
	// reading the line and another to the venue.
	if werr := wire.CheckStrict([]byte(arg)); werr != nil {
		return fail(CodeInvalidJSON, "The argument must be one JSON object with each key once (also in another case).")
	}
	req.Args = json.RawMessage(arg)
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(req.Args, &fields); err != nil {
		return fail(CodeInvalidJSON, "The argument must be one JSON object.")
	}
	if raw, ok := fields["id"]; ok {
		var id string
		if err := json.Unmarshal(raw, &id); err != nil || !validID(id) {
			return fail(CodeInvalidID, "id must be a string of 1 to 64 characters, at most 64 bytes once escaped.")
		}
		req.ID = id
	}
	return req, nil
}

// validID: 1 to MaxIDChars characters whose JSON form (as a reply writes
// it: control characters, DEL, U+2028 and U+2029 as \uXXXX) is at most
// MaxIDBytes bytes.
func validID(id string) bool {
	if id == "" || utf8.RuneCountInString(id) > MaxIDChars || !utf8.ValidString(id) {
		return false
	}
	var b bytes.Buffer
	writeString(&b, id)
	return b.Len()-2 <= MaxIDBytes
}

// ScanID reads a request's "id" the way Parse would, but from the first
// 1,024 bytes only and without needing the rest to be valid: so a reply
// to a request refused before it is parsed (too long, over a rate limit,
// a bad verb or bad JSON after the id) still carries "re". "" when there
// is no valid id in that prefix.
func ScanID(text string) string {
	i := strings.IndexByte(text, '{')
	if i < 0 {
		return ""
	}
	text = text[i:]
	if len(text) > maxScanBytes {
		text = text[:maxScanBytes]
	}
	dec := json.NewDecoder(strings.NewReader(text))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return ""
	}
	id := "" // the last "id" read wins, as in Parse
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return id
		}
		if key, _ := k.(string); key != "id" {
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return id
			}
			continue
		}
		var v string
		if dec.Decode(&v) != nil || !validID(v) {
			v = ""
		}
		id = v
	}
	return id
}

// Decode reads the request's arguments into v (a pointer to a struct),
// refusing fields v does not have. An absent argument leaves v as is.
// Errors: invalid_argument naming what was wrong.
func (r Request) Decode(v any) *Error {
	if r.Args == nil {
		return nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(r.Args, &fields); err != nil {
		return &Error{Code: CodeInvalidJSON, Message: "The argument must be one JSON object.", Verb: r.Verb, Re: r.ID}
	}
	delete(fields, "id") // every verb takes it; Parse checked it
	args, err := json.Marshal(fields)
	if err != nil {
		return &Error{Code: CodeInvalidArgument, Message: "Bad argument.", Verb: r.Verb, Re: r.ID}
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		msg := badArgument(err)
		if len(msg) > 200 {
			msg = msg[:200]
		}
		return &Error{Code: CodeInvalidArgument, Message: strings.ToValidUTF8(msg, ""), Verb: r.Verb, Re: r.ID}
	}
	return nil
}

// badArgument says what is wrong with an argument in the request's own
// terms (its field and the JSON it should be), not the decoder's (Go
// types and struct names).
func badArgument(err error) string {
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &te) && te.Field != "":
		return fmt.Sprintf("Bad argument: %s must be %s.", te.Field, jsonKind(te.Type.Kind()))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return "Bad argument: unknown field " + strings.TrimPrefix(err.Error(), "json: unknown field ") + "."
	default:
		return "Bad argument."
	}
}

// jsonKind names the JSON a Go kind is read from.
func jsonKind(k reflect.Kind) string {
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "an array"
	default:
		return "an object"
	}
}

// validVerb: 1-32 ASCII letters, digits or '-'.
func validVerb(v string) bool {
	if len(v) == 0 || len(v) > 32 {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

func upperASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}
