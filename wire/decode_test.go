package wire

import (
	"encoding/json"
	"strings"
	"testing"
)

// nest returns an object nesting n deep ({} is 1): {"a":{"a":...{}}}.
func nest(n int) string {
	return strings.Repeat(`{"a":`, n-1) + "{}" + strings.Repeat("}", n-1)
}

// nestArrays returns an object holding arrays, n deep in all.
func nestArrays(n int) string {
	return `{"a":` + strings.Repeat("[", n-1) + strings.Repeat("]", n-1) + "}"
}

func TestDecodeObject(t *testing.T) {
	t.Parallel()
	valid := []struct {
		name string
		in   string
		keys []string
	}{
		{"empty object", `{}`, nil},
		{"one member", `{"type":"message"}`, []string{"type"}},
		{"surrounding whitespace", " \n\t{\"a\":1}\r\n ", []string{"a"}},
		{"all value kinds", `{"s":"x","n":-1.5e3,"t":true,"f":false,"z":null,"o":{"k":1},"a":[1,"2",{}]}`,
			[]string{"s", "n", "t", "f", "z", "o", "a"}},
		{"same key in different objects", `{"a":{"a":1},"b":{"a":2}}`, []string{"a", "b"}},
		{"same key in objects of an array", `{"a":[{"k":1},{"k":2}]}`, []string{"a"}},
		{"keys differing beyond case", `{"ab":1,"a_b":2,"ba":3}`, []string{"ab", "a_b", "ba"}},
		{"huge number stays raw", `{"a":1e400}`, []string{"a"}},
		{"escaped key", `{"\u0074ype":"x"}`, []string{"type"}},
		{"depth at the limit", nest(MaxDepth), []string{"a"}},
		{"array depth at the limit", nestArrays(MaxDepth), []string{"a"}},
		{"deep in a string is not depth", `{"a":"` + strings.Repeat("{[", 50) + `"}`, []string{"a"}},
	}
	for _, tc := range valid {
		t.Run("ok/"+tc.name, func(t *testing.T) {
			t.Parallel()
			m, err := DecodeObject([]byte(tc.in))
			if err != nil {
				t.Fatalf("DecodeObject(%s) = %v, want ok", tc.in, err)
			}
			if len(m) != len(tc.keys) {
				t.Fatalf("got %d members %v, want %v", len(m), m, tc.keys)
			}
			for _, k := range tc.keys {
				if _, ok := m[k]; !ok {
					t.Errorf("member %q missing from %v", k, m)
				}
			}
		})
	}

	refused := []struct {
		name, in string
	}{
		{"empty", ``},
		{"whitespace", "  \n"},
		{"not JSON", `hello`},
		{"truncated", `{"a":1`},
		{"unterminated string", `{"a":"x}`},
		{"missing colon", `{"a" 1}`},
		{"missing comma", `{"a":1 "b":2}`},
		{"trailing comma", `{"a":1,}`},
		{"trailing comma in array", `{"a":[1,]}`},
		{"single quotes", `{'a':1}`},
		{"unquoted key", `{a:1}`},
		{"array", `[1,2]`},
		{"empty array", `[]`},
		{"string", `"x"`},
		{"number", `42`},
		{"true", `true`},
		{"null", `null`},
		{"trailing object", `{}{}`},
		{"trailing number", `{"a":1} 1`},
		{"trailing garbage", `{"a":1}x`},
		{"trailing bracket", `{}]`},
		{"trailing brace", `{}}`},
		{"trailing open", `{"a":1}{`},
		{"duplicate key", `{"a":1,"a":2}`},
		{"duplicate type", `{"type":"accept","type":"walk"}`},
		{"duplicate key escaped", `{"a":1,"\u0061":2}`},
		{"duplicate differing in case", `{"type":"accept","Type":"walk"}`},
		{"duplicate differing in case, upper", `{"AMOUNT_USD":1,"amount_usd":2}`},
		{"duplicate by unicode folding (long s)", `{"sends":1,"ſends":2000}`},
		{"duplicate by unicode folding (kelvin)", `{"k":1,"` + "\u212a" + `":2}`},
		{"nested duplicate", `{"terms":{"amount_usd":1,"amount_usd":2}}`},
		{"nested duplicate differing in case", `{"terms":{"amount_usd":1,"Amount_USD":2}}`},
		{"duplicate in object in array", `{"a":[{"k":1,"k":2}]}`},
		{"NaN", `{"a":NaN}`},
		{"Infinity", `{"a":Infinity}`},
		{"-Infinity", `{"a":-Infinity}`},
		{"NaN string is not the problem but bare NaN is", `{"a":"NaN","b":NaN}`},
		{"leading zero", `{"a":01}`},
		{"plus sign", `{"a":+1}`},
		{"hex", `{"a":0x10}`},
		{"too deep", nest(MaxDepth + 1)},
		{"too deep arrays", nestArrays(MaxDepth + 1)},
		{"very deep", nest(10000)},
		{"comment", `{"a":1 /* c */}`},
	}
	for _, tc := range refused {
		t.Run("refused/"+tc.name, func(t *testing.T) {
			t.Parallel()
			m, err := DecodeObject([]byte(tc.in))
			if err == nil {
				t.Fatalf("DecodeObject(%.60s) = %v, want invalid_json", tc.in, m)
			}
			if err.Code != CodeInvalidJSON {
				t.Fatalf("code = %q, want %q (%v)", err.Code, CodeInvalidJSON, err)
			}
			if m != nil {
				t.Errorf("members returned with an error: %v", m)
			}
		})
	}
}

func TestDecodeObjectKeepsRawValues(t *testing.T) {
	t.Parallel()
	m, err := DecodeObject([]byte(`{"terms":{"amount_usd":3200.0,"sends":2},"n":1.50}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(m["terms"]); got != `{"amount_usd":3200.0,"sends":2}` {
		t.Errorf("terms = %s", got)
	}
	if got := string(m["n"]); got != `1.50` {
		t.Errorf("n = %s, want the number as written", got)
	}
}

func FuzzDecodeObject(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"type":"message","content":"hi"}`, `{"a":1,"A":2}`, `{"a":{"b":[1,2,{"c":null}]}}`,
		`[]`, `"x"`, `1`, `{"a":NaN}`, `{}{}`, nest(MaxDepth), nest(MaxDepth + 1), `{"sends":1,"ſends":2}`,
		`{"type":"propose_terms","terms":{"amount_usd":3200,"sends":2},"ttl_seconds":60}`, "{\"a\":\"\xff\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := DecodeObject(data)
		if err != nil {
			if err.Code != CodeInvalidJSON {
				t.Fatalf("code %q, want %q", err.Code, CodeInvalidJSON)
			}
			if m != nil {
				t.Fatal("members returned with an error")
			}
			return
		}
		if m == nil {
			t.Fatal("nil map without an error")
		}
		var into map[string]any
		if jerr := json.Unmarshal(data, &into); jerr != nil {
			t.Fatalf("DecodeObject accepted %q, json.Unmarshal refuses it: %v", data, jerr)
		}
		if len(into) != len(m) {
			t.Fatalf("%d members, json.Unmarshal sees %d", len(m), len(into))
		}
		seen := map[string]string{}
		for k := range m {
			f := foldKey(k)
			if prev, dup := seen[f]; dup {
				t.Fatalf("keys %q and %q fold the same and were both accepted", prev, k)
			}
			seen[f] = k
		}
	})
}

// TestDecodeMessages: what is not valid JSON (NaN and Infinity included) is
// said to be that, not "not a JSON object"; a REST body is called a body
// (DecodeBody), a frame a frame.
func TestDecodeMessages(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, frame, body string
	}{
		{`{"a":NaN}`, "frame is not valid JSON", "body is not valid JSON"},
		{`{"a":Infinity}`, "frame is not valid JSON", "body is not valid JSON"},
		{`{"a":NaN,"b":"é"}`, "frame is not valid JSON", "body is not valid JSON"}, // the slow path
		{`hello`, "frame is not valid JSON", "body is not valid JSON"},
		{``, "frame is not valid JSON", "body is not valid JSON"},
		{`[1]`, "frame must be a JSON object", "body must be a JSON object"},
		{`{"a":1}x`, "trailing data after the JSON object", "trailing data after the JSON object"},
	} {
		for _, c := range []struct {
			decode func([]byte) (map[string]json.RawMessage, *Error)
			want   string
		}{{DecodeObject, tc.frame}, {DecodeBody, tc.body}} {
			_, err := c.decode([]byte(tc.in))
			if err == nil || err.Code != CodeInvalidJSON || !strings.HasPrefix(err.Message, c.want) {
				t.Errorf("%q: %v, want invalid_json %q…", tc.in, err, c.want)
			}
		}
	}
}
