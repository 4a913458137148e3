package wire

import (
	"encoding/json"
	"testing"
)

func TestErrorFrameIsWhatMarshalWrote(t *testing.T) {
	for _, tt := range []struct{ code, msg, re string }{
		{"invalid_json", "frame is not a JSON object", ""},
		{"rate_limited", "over 10 frames a second", "c-1"},
		{"invalid_argument", `quote " backslash \ <html> & U+2028 ` + "\u2028 tab\t nul\x00", "é\"<"},
		{"x", "bad utf-8 \xff here", "\xfe"},
	} {
		m := map[string]any{"type": "error", "code": tt.code, "message": tt.msg}
		if tt.re != "" {
			m["re"] = tt.re
		}
		want, _ := json.Marshal(m)
		if got := ErrorFrame(Errorf(tt.code, "%s", tt.msg), tt.re); string(got) != string(want) {
			t.Errorf("ErrorFrame = %s\nwant        %s", got, want)
		}
	}
}

func FuzzErrorFrame(f *testing.F) {
	f.Add("invalid_state", "the negotiation is deal", "r1")
	f.Add("", "", "")
	f.Fuzz(func(t *testing.T, code, msg, re string) {
		m := map[string]any{"type": "error", "code": code, "message": msg}
		if re != "" {
			m["re"] = re
		}
		want, _ := json.Marshal(m)
		if got := ErrorFrame(&Error{Code: code, Message: msg}, re); string(got) != string(want) {
			t.Fatalf("ErrorFrame = %s, json.Marshal %s", got, want)
		}
	})
}

func fields(t *testing.T, body string) *Fields {
	t.Helper()
	m, werr := DecodeObject([]byte(body))
	if werr != nil {
		t.Fatal(werr)
	}
	return NewFields(m)
}

func TestFields(t *testing.T) {
	f := fields(t, `{"s":"x","e":"","n":5,"q":"5","fr":1.5,"big":1e300,"b":true,"o":{"a":1},"nul":null}`)
	if f.String("s", true) != "x" || f.String("missing", false) != "" || f.String("nul", false) != "" || f.Err != nil {
		t.Fatalf("strings: %v", f.Err)
	}
	if f.IntIn("n", 1, 10, 0) != 5 || f.IntIn("missing", 1, 10, 7) != 7 || f.Bool("b") != true || string(f.Object("o", true)) != `{"a":1}` || f.Err != nil {
		t.Fatalf("typed: %v", f.Err)
	}
	for _, tt := range []struct {
		read func(*Fields)
		want string
	}{
		{func(f *Fields) { f.String("missing", true) }, "missing is required"},
		{func(f *Fields) { f.String("n", false) }, "n must be a string"},
		{func(f *Fields) { f.NonEmpty("e") }, "e must not be empty"},
		{func(f *Fields) { f.IntIn("q", 1, 10, 0) }, "q must be an integer"},
		{func(f *Fields) { f.IntIn("fr", 1, 10, 0) }, "fr must be an integer from 1 to 10"},
		{func(f *Fields) { f.IntIn("big", 1, 10, 0) }, "big must be an integer from 1 to 10"},
		{func(f *Fields) { f.IntIn("n", 6, 10, 0) }, "n must be an integer from 6 to 10"},
		{func(f *Fields) { f.Bool("s") }, "s must be true or false"},
		{func(f *Fields) { f.Object("s", false) }, "s must be an object"},
		{func(f *Fields) { f.Object("missing", true) }, "missing is required"},
		// The first error is kept.
		{func(f *Fields) { f.String("missing", true); f.Bool("s") }, "missing is required"},
	} {
		f := fields(t, `{"s":"x","e":"","n":5,"q":"5","fr":1.5,"big":1e300}`)
		tt.read(f)
		if f.Err == nil || f.Err.Code != CodeInvalidArgument || f.Err.Message != tt.want {
			t.Errorf("got %v, want invalid_argument %q", f.Err, tt.want)
		}
	}
}

// TestPlainStringAsUnmarshal: the fast path gives encoding/json's string
// whenever it answers, and leaves escapes, bad UTF-8 and non-strings to it.
func TestPlainStringAsUnmarshal(t *testing.T) {
	for raw, fast := range map[string]bool{
		`"hello"`: true, `""`: true, `"émoji 😀"`: true, `"a\"b"`: false, `"\u00e9"`: false,
		`"bad ` + "\xff" + `"`: false, `"tab` + "\t" + `"`: false, `"a"b"`: false, `5`: false, `"`: false,
		`null`: false, ` "x"`: false,
	} {
		s, ok := plainString([]byte(raw))
		if ok != fast {
			t.Errorf("plainString(%q): ok %v, want %v", raw, ok, fast)
		}
		var want string
		if ok && (json.Unmarshal([]byte(raw), &want) != nil || s != want) {
			t.Errorf("plainString(%q) = %q, encoding/json says %q", raw, s, want)
		}
	}
}

func FuzzPlainString(f *testing.F) {
	f.Add(`"hello"`)
	f.Add(`"a\"b"`)
	f.Fuzz(func(t *testing.T, raw string) {
		s, ok := plainString([]byte(raw))
		if !ok {
			return
		}
		var want string
		if err := json.Unmarshal([]byte(raw), &want); err != nil || s != want {
			t.Fatalf("plainString(%q) = %q; encoding/json: %q, %v", raw, s, want, err)
		}
	})
}

// TestOnly: an unknown member is named with what the body takes, or, when
// it takes nothing, with that said (not "takes only " and an empty list).
func TestOnly(t *testing.T) {
	t.Parallel()
	m := map[string]json.RawMessage{"note": []byte(`"x"`), "descripton": []byte(`"y"`)}
	if err := NewFields(m).Only("note", "url"); err == nil || err.Code != CodeInvalidArgument ||
		err.Message != `unknown field "descripton": this body takes only note, url` {
		t.Errorf("Only(note, url): %v", err)
	}
	if err := NewFields(m).Only(); err == nil || err.Code != CodeInvalidArgument ||
		err.Message != `unknown field "descripton": this route takes no body (send none, or {})` {
		t.Errorf("Only(): %v", err)
	}
	if err := NewFields(map[string]json.RawMessage{}).Only(); err != nil {
		t.Errorf("Only() of {}: %v", err)
	}
}
