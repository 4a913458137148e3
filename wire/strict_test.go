package wire

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestCheckStrict(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{
		`{}`, `[]`, `1`, `"s"`, `null`, ` {"a":[{"b":1},{"b":2}],"c":{"b":3}} `,
		`{"entries":[{"seq":1,"frame":{"type":"x"},"hash":"h"}]}`,
		`[{"a":1},{"a":1}]`, // equal keys in different objects are fine
	} {
		if err := CheckStrict([]byte(ok)); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{
		``, `{`, `{"a":1}{"b":2}`, `1 2`, `{"a":1,"a":2}`, `{"a":1,"A":2}`,
		`{"entries":[{"seq":1,"frame":{"type":"fake"},"frame":{"type":"real"}}]}`,
		`{"x":{"y":[{"k":1,"K":1}]}}`, `{"ſends":1,"sends":2}`,
		strings.Repeat("[", MaxStrictDepth+1) + strings.Repeat("]", MaxStrictDepth+1),
		`{"a":NaN}`,
	} {
		if err := CheckStrict([]byte(bad)); err == nil || err.Code != CodeInvalidJSON {
			t.Errorf("%q: %v, want invalid_json", bad, err)
		}
	}
	var v struct{ A int }
	if err := Unmarshal([]byte(`{"A":1,"a":2}`), &v); err == nil {
		t.Error("Unmarshal took a repeated key")
	}
	if err := Unmarshal([]byte(`{"A":1}`), &v); err != nil || v.A != 1 {
		t.Errorf("Unmarshal: %v %+v", err, v)
	}
}

// FuzzCheckStrict: whatever CheckStrict accepts, encoding/json parses, and
// a document json.Valid refuses is never accepted.
func FuzzCheckStrict(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1,"a":2}`, `[1,{"b":[]}]`, `"x"`, `{"a":{"b":{"c":1}}}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := CheckStrict([]byte(s))
		if err == nil && !json.Valid([]byte(s)) {
			t.Fatalf("accepted invalid JSON %q", s)
		}
	})
}
