// Package lockedio serializes writes to a writer that several goroutines
// share (ARCHITECTURE.md "Packages").
package lockedio

import (
	"io"
	"sync"
)

// Writer passes each Write to W whole, one at a time: two goroutines'
// writes never interleave, and a W that is not safe for concurrent use
// (a bytes.Buffer) is written by one at a time. It returns W's n and
// error. Safe for concurrent use; the zero value needs W set, and a
// Writer must not be copied after first use.
type Writer struct {
	mu sync.Mutex
	W  io.Writer
}

// Write writes p to W under the lock.
func (l *Writer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.W.Write(p)
}
