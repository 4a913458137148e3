package grants

import (
	"encoding/json"
	"math"
	"strconv"
	"time"
)

// The range a date claim (exp, nbf, iat) may take, in seconds since the
// Unix epoch: from 1970-01-01 to 9999-12-31T23:59:59Z, the last second a
// wire time (RFC 3339, four-digit year) can name. Outside it, or not a JSON
// number at all, the claim is malformed.
const (
	MinNumericDate = 0
	MaxNumericDate = 253402300799
)

// checkDates requires each date claim present to be a JSON number (not a
// string, null, bool or object) whose value lies in
// [MinNumericDate, MaxNumericDate]. Without this, "exp": 1e30 overflows
// time.Time and is reported as a long-expired token with a year no calendar
// has, and "exp": "1796112000" is read as a number by the JWT library.
// Every fault is CodeMalformed (DELEGATION.md "The grant token").
func checkDates(claims map[string]json.RawMessage) *TokenError {
	for _, name := range []string{"exp", "nbf", "iat"} {
		raw, ok := claims[name]
		if !ok {
			continue
		}
		if len(raw) == 0 || !(raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9')) {
			return tokenErr(CodeMalformed, "%s must be a JSON number of seconds since 1970, not %s", name, rawShort(raw))
		}
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil || math.IsNaN(f) || f < MinNumericDate || f > MaxNumericDate {
			return tokenErr(CodeMalformed, "%s %s is out of range: seconds since 1970 up to %d (%s)",
				name, rawShort(raw), MaxNumericDate, stamp(time.Unix(MaxNumericDate, 0)))
		}
	}
	return nil
}
