package wire

import "testing"

func TestHiddenAt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		s         string
		multiline bool
		want      int
	}{
		{"plain text, é and 中文", false, -1},
		{"tab\there", false, -1},
		{"two\nlines", false, 3},
		{"two\nlines\r\n", true, -1},
		{"rtl \u202egnp.exe", true, 4},
		{"zero\u200bwidth", true, 4},
		{"joiner\u2060", false, 6},
		{"\ufeffbom", false, 0},
		{"isolate \u2066x\u2069", false, 8},
		{"bell\a", true, 4},
		{"c1 \u0085", false, 3},
		{"", false, -1},
	} {
		if got := HiddenAt(tc.s, tc.multiline); got != tc.want {
			t.Errorf("HiddenAt(%q, %v) = %d, want %d", tc.s, tc.multiline, got, tc.want)
		}
	}
}
