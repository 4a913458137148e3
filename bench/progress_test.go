package bench

import (
	"bytes"
	"strings"
	"testing"
)

func TestProgressPlainWhenNotATerminal(t *testing.T) {
	t.Parallel()
	if newBar(nil, 10, "x") != nil {
		t.Fatal("a nil writer gets a progress")
	}
	var buf bytes.Buffer
	p := newBar(&buf, 200, "opening sockets")
	for _, n := range []int{0, 5, 20, 21, 39, 200, 200, 250} {
		_ = p.Set(n)
	}
	want := "opening sockets: 10% (20/200)\nopening sockets: 100% (200/200)\n"
	if got := buf.String(); got != want || strings.Contains(got, "\r") {
		t.Fatalf("got %q, want %q", got, want)
	}
}
