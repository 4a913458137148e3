package lobby

import (
	"encoding/json"

	"github.com/venuehq/venue/wire"
)

// req reads typed fields of a lobby request, keeping the first error.
type req struct {
	m   map[string]json.RawMessage
	err *wire.Error
}

func (r *req) fail(format string, args ...any) {
	if r.err == nil {
		r.err = wire.Errorf(wire.CodeInvalidArgument, format, args...)
	}
}

func (r *req) str(key string, required bool) string {
	raw, ok := r.m[key]
	if !ok || string(raw) == "null" {
		if required {
			r.fail("%s is required", key)
		}
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		r.fail("%s must be a string", key)
		return ""
	}
	if required && s == "" {
		r.fail("%s must not be empty", key)
	}
	return s
}

func (r *req) intIn(key string, lo, hi, def int) int {
	raw, ok := r.m[key]
	if !ok || string(raw) == "null" {
		return def
	}
	var n json.Number
	if c := raw[0]; !(c == '-' || (c >= '0' && c <= '9')) || json.Unmarshal(raw, &n) != nil {
		// json.Number also takes "5" (a string): the lobby does not.
		r.fail("%s must be an integer", key)
		return def
	}
	i, err := n.Int64()
	if err != nil || i < int64(lo) || i > int64(hi) {
		r.fail("%s must be an integer from %d to %d", key, lo, hi)
		return def
	}
	return int(i)
}

func (r *req) boolean(key string) bool {
	raw, ok := r.m[key]
	if !ok || string(raw) == "null" {
		return false
	}
	var b bool
	if json.Unmarshal(raw, &b) != nil {
		r.fail("%s must be true or false", key)
	}
	return b
}

func (r *req) object(key string, required bool) json.RawMessage {
	raw, ok := r.m[key]
	if !ok || string(raw) == "null" {
		if required {
			r.fail("%s is required", key)
		}
		return nil
	}
	if len(raw) == 0 || raw[0] != '{' {
		r.fail("%s must be an object", key)
		return nil
	}
	return raw
}
