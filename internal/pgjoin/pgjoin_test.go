package pgjoin_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/venuehq/venue/internal/pgjoin"
	"github.com/venuehq/venue/internal/testenv"
)

// What Join makes, Postgres's string_to_array (Split) gives back as the
// same texts, in order: quotes, backslashes, commas, braces, "NULL", empty
// texts between others, multi-byte characters and JSON.
func TestSplitGivesTheTextsBack(t *testing.T) {
	conn, err := pgx.Connect(t.Context(), testenv.DatabaseURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	frame, _ := json.Marshal(map[string]string{"content": "a \"quoted\" {brace}, \\ and \x1f"})
	for _, texts := range [][]string{
		{},
		{"one"},
		{"", "between", ""},
		{`{"a":1}`, `"x"`, `\`, `,`, `{}`, "NULL", "null", " spaced ", "ünïcødé ✓"},
		{string(frame), string(frame)},
	} {
		raws := make([][]byte, len(texts))
		for i, s := range texts {
			raws[i] = []byte(s)
		}
		joined, err := pgjoin.Join(raws)
		if err != nil {
			t.Fatalf("%q: %v", texts, err)
		}
		var got []string
		if err := conn.QueryRow(t.Context(), "SELECT "+pgjoin.Split(1), joined).Scan(&got); err != nil {
			t.Fatalf("%q: %v", texts, err)
		}
		if !slices.Equal(got, texts) && !(len(got) == 0 && len(texts) == 0) {
			t.Fatalf("split %q, want %q", got, texts)
		}
		if want := strings.Join(texts, "\x1f"); joined != want {
			t.Fatalf("Join = %q, want %q", joined, want)
		}
	}
}

// A text holding the separator, or a lone empty text (string_to_array
// would give no element), is refused, not sent to split wrong.
func TestJoinRefuses(t *testing.T) {
	for _, texts := range [][]string{{"a", "b\x1fc"}, {"\x1f"}, {""}} {
		raws := make([][]byte, len(texts))
		for i, s := range texts {
			raws[i] = []byte(s)
		}
		if _, err := pgjoin.Join(raws); !errors.Is(err, pgjoin.ErrSeparator) {
			t.Errorf("Join(%q) err = %v, want ErrSeparator", texts, err)
		}
	}
}

// JSON text never holds the separator raw: encoding/json escapes it in a
// string (RFC 8259 section 7), which is why the writer may join frames,
// states and event data.
func FuzzJSONNeverHoldsSeparator(f *testing.F) {
	f.Add("plain", []byte("\x1f"))
	f.Fuzz(func(t *testing.T, s string, b []byte) {
		out, err := json.Marshal(map[string]any{"s": s, "b": string(b), "k\x1f": []string{s}})
		if err != nil {
			t.Skip()
		}
		if strings.IndexByte(string(out), pgjoin.Sep) >= 0 {
			t.Fatalf("json.Marshal(%q) holds 0x1F: %q", s, out)
		}
		if _, err := pgjoin.Join([][]byte{out, out}); err != nil {
			t.Fatal(err)
		}
	})
}
