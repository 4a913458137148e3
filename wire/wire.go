// Package wire holds what every part of the venue's protocol shares: the
// error value with its stable codes (PROTOCOL.md "Limits and close codes"), the time format of the
// wire (§1) and a strict JSON object decoder.
package wire

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// Error codes sent in `error` frames and REST error bodies. They are part of
// the wire: never rename one.
const (
	CodeInvalidJSON      = "invalid_json"       // not JSON, not an object, duplicated key, NaN
	CodeInvalidArgument  = "invalid_argument"   // a field missing, ill-typed or out of bounds
	CodeUnknownType      = "unknown_type"       // a frame type the venue does not take
	CodeInvalidState     = "invalid_state"      // the frame does not fit the room's state
	CodeRateLimited      = "rate_limited"       // over the per-connection or per-address rate
	CodeUnauthorized     = "unauthorized"       // no or bad credentials
	CodeForbidden        = "forbidden"          // credentials fine, not allowed (wrong role, addressee)
	CodeNotFound         = "not_found"          // unknown id
	CodeConflict         = "conflict"           // the request conflicts with the current state
	CodeTooLarge         = "too_large"          // body over the limit
	CodeInternal         = "internal"           // the venue failed; nothing was changed
	CodeUnavailable      = "unavailable"        // a backend is unreachable or busy past its bounds; nothing changed, retry
	CodeMethodNotAllowed = "method_not_allowed" // the route exists, not with that method
	CodeOutcomeUnknown   = "outcome_unknown"    // the store took the frame's commit but could not be asked whether it landed; resend with the same id
	// Idempotency-Key answers (PROTOCOL.md "Without a socket").
	CodeIdempotencyConflict = "idempotency_conflict"  // the key was used with another request
	CodeIdempotencyInFlight = "idempotency_in_flight" // the first request with the key is still being answered

	// Grants and escalations (DELEGATION.md "The checks"); token errors carry the codes of
	// grants.TokenError with their own statuses.
	CodeNoPrincipalKey   = "no_principal_key"  // the agent has no principal key to verify against
	CodeDuplicateJTI     = "duplicate_jti"     // a grant with that jti was uploaded before
	CodeEscalationClosed = "escalation_closed" // lapsed, decided, or the negotiation ended
	CodeGrantNegotiation = "grant_negotiation" // a grant naming a negotiation the agent is not in
	CodeProofRequired    = "proof_required"    // replacing a principal key needs the current key's proof
	CodeTooManyGrants    = "too_many_grants"   // the agent holds as many active grants as the venue allows
)

// Error is a protocol error: a stable Code from the list above and a message
// for people. It is the `{code,message}` of error frames and REST bodies.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Error implements error.
func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Errorf builds an *Error with a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// HTTPStatus maps an error code to the REST status (the one table of codes to
// statuses, PROTOCOL.md "Errors").
func HTTPStatus(code string) int {
	switch code {
	case CodeInvalidJSON:
		return http.StatusBadRequest
	case CodeInvalidArgument, CodeUnknownType, CodeNoPrincipalKey, CodeGrantNegotiation, CodeIdempotencyConflict:
		return http.StatusUnprocessableEntity
	case CodeInvalidState, CodeConflict, CodeDuplicateJTI, CodeEscalationClosed, CodeIdempotencyInFlight, CodeTooManyGrants:
		return http.StatusConflict
	case CodeRateLimited:
		return http.StatusTooManyRequests
	case CodeUnauthorized:
		return http.StatusUnauthorized
	case CodeForbidden, CodeProofRequired:
		return http.StatusForbidden
	case CodeNotFound:
		return http.StatusNotFound
	case CodeTooLarge:
		return http.StatusRequestEntityTooLarge
	case CodeUnavailable, CodeOutcomeUnknown:
		return http.StatusServiceUnavailable
	case CodeMethodNotAllowed:
		return http.StatusMethodNotAllowed
	default:
		return http.StatusInternalServerError
	}
}

// TimeLayout is RFC 3339 UTC with milliseconds, the one time format of the
// wire (PROTOCOL.md "Registration and auth"): 2026-11-30T08:19:22.134Z.
const TimeLayout = "2006-01-02T15:04:05.000Z07:00"

// Time formats t for the wire, in UTC with milliseconds (TimeLayout).
func Time(t time.Time) string {
	var buf [len("2006-01-02T15:04:05.000Z")]byte
	return string(AppendTime(buf[:0], t))
}

// AppendTime appends t as Time formats it: the 24 bytes of TimeLayout in
// UTC, digits written directly for the years 0 to 9999 (the venue writes
// several times into every frame; time.Format parses its layout each
// time), time.Format beyond them. Fractions of a millisecond are cut, as
// Format cuts them.
func AppendTime(b []byte, t time.Time) []byte {
	t = t.UTC()
	y, mo, d := t.Date()
	if y < 0 || y > 9999 {
		return t.AppendFormat(b, TimeLayout)
	}
	h, mi, sec := t.Clock()
	ms := t.Nanosecond() / 1e6
	return append(b,
		byte('0'+y/1000), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10), '-',
		byte('0'+int(mo)/10), byte('0'+int(mo)%10), '-', byte('0'+d/10), byte('0'+d%10), 'T',
		byte('0'+h/10), byte('0'+h%10), ':', byte('0'+mi/10), byte('0'+mi%10), ':',
		byte('0'+sec/10), byte('0'+sec%10), '.',
		byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), 'Z')
}

// ParseTime parses a wire time.
func ParseTime(s string) (time.Time, error) { return time.Parse(time.RFC3339Nano, s) }

// ErrorFrame is the `error` frame {"code","message","re","type"} that
// answers a refused frame on any socket (PROTOCOL.md "Errors"): re is the
// client id of the frame it answers, omitted when empty. Keys are in
// sorted order, as every venue frame.
func ErrorFrame(e *Error, re string) []byte {
	b := make([]byte, 0, 64+len(e.Message)+len(re))
	b = append(b, `{"code":`...)
	b = appendJSONString(b, e.Code)
	b = append(b, `,"message":`...)
	b = appendJSONString(b, e.Message)
	if re != "" {
		b = append(b, `,"re":`...)
		b = appendJSONString(b, re)
	}
	return append(b, `,"type":"error"}`...)
}

// appendJSONString appends s as a JSON string, escaped as encoding/json
// escapes it (HTML characters included), so frames stay byte-identical to
// what json.Marshal wrote before.
func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s)
	return append(b, q...)
}
