package negotiation

import "testing"

// chainHashOwn skips JCS for frames the venue built; it must always agree
// with ChainHash, whatever the strings hold.
func TestChainHashOwnAgreesWithJCS(t *testing.T) {
	t.Parallel()
	for _, content := range []string{
		"plain", "<b>&amp;</b>", "line\nbreak\ttab\rcr", "bell\b form\f", "\x00\x01\x1f\x7f",
		"\u2028\u2029", "😀 émoji", `quote " backslash \ slash /`, "\ufffd", "",
	} {
		frame := marshal(map[string]any{"type": TypeNegotiationMessage, "content": content, "seq": 7,
			"terms": []byte(`{"amount_usd":1}`)})
		want, err := ChainHash("sha256:prev", frame)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := chainHashOwn("sha256:prev", frame); got != want {
			t.Errorf("content %q: fast hash %s, JCS hash %s (frame %s)", content, got, want, frame)
		}
	}
}

func FuzzChainHashOwn(f *testing.F) {
	f.Add("hello", "primary_slot")
	f.Add("\u2028<>&", "\x7f")
	f.Fuzz(func(t *testing.T, content, category string) {
		frame := marshal(map[string]any{"type": TypeNegotiationMessage, "content": content, "category": category, "seq": 1})
		want, err := ChainHash("", frame)
		if err != nil {
			t.Skip() // not JSON JCS can read (e.g. invalid UTF-8 replaced): nothing to compare
		}
		if got, _ := chainHashOwn("", frame); got != want {
			t.Fatalf("fast hash differs from JCS for %s", frame)
		}
	})
}
