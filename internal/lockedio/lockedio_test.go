package lockedio

import (
	"bytes"
	"strings"
	"sync"
	"testing"
)

// TestWriterWholeWrites: many goroutines writing lines into one
// bytes.Buffer through a Writer leave every line whole (and -race quiet).
func TestWriterWholeWrites(t *testing.T) {
	var buf bytes.Buffer
	w := &Writer{W: &buf}
	line := strings.Repeat("x", 100) + "\n"
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 200 {
				if n, err := w.Write([]byte(line)); n != len(line) || err != nil {
					t.Errorf("Write = %d, %v", n, err)
				}
			}
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 8*200 {
		t.Fatalf("%d lines, want %d", len(lines), 8*200)
	}
	for i, l := range lines {
		if l+"\n" != line {
			t.Fatalf("line %d broken: %q", i, l)
		}
	}
}
