package wire

import (
	"encoding/json"
	"testing"
)

// FuzzFastCheck: whenever the fast path decides, it decides as the token
// walk does (both accept, or both refuse).
func FuzzFastCheck(f *testing.F) {
	for _, s := range []string{
		`{"a":1}`, `{"a":1,"A":2}`, `{"a":{"b":1,"b":2}}`, `{"a":[{"x":1},{"x":2}]}`, `{"a":"\"}"}`,
		`{"a":1} x`, `{"a":[[[[[[1]]]]]]}`, `{"k\u0061":1,"ka":2}`, `{"ſends":1,"sends":2}`, `[1]`, `{"a":}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		handled, fastErr := fastCheck(data)
		if !handled {
			return
		}
		slowErr := checkStructure(data)
		if (fastErr == nil) != (slowErr == nil) {
			// The fast path leaves value syntax to json.Unmarshal: it may
			// accept what the walk refuses only when Unmarshal refuses too.
			var m map[string]json.RawMessage
			if fastErr == nil && json.Unmarshal(data, &m) != nil {
				return
			}
			t.Fatalf("%q: fast %v, walk %v", data, fastErr, slowErr)
		}
	})
}

// TestFastCheckAllocatesNothing: a party frame's check allocates nothing.
func TestFastCheckAllocatesNothing(t *testing.T) {
	frame := []byte(`{"type":"message","id":"c-1","content":"bench:1764576000000000000 lorem ipsum dolor sit amet"}`)
	if handled, err := fastCheck(frame); !handled || err != nil {
		t.Fatalf("fastCheck(%s) = %v, %v: want it decided, no error", frame, handled, err)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = fastCheck(frame) }); n != 0 {
		t.Errorf("fastCheck allocates %v times a frame", n)
	}
}
