package bench

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress is how far a phase has come; Set is safe for concurrent use.
type progress interface{ Set(n int) error }

// newBar returns nil for a nil w, a progress bar when w is a terminal, and
// plain lines otherwise (a log or a pipe gets no carriage returns).
func newBar(w io.Writer, max int, what string) progress {
	if w == nil {
		return nil
	}
	if f, ok := w.(interface{ Fd() uintptr }); ok && term.IsTerminal(int(f.Fd())) {
		return progressbar.NewOptions(max, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription(what),
			progressbar.OptionShowCount(), progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
	}
	return &plainProgress{w: w, max: max, what: what}
}

// plainProgress prints a line each tenth of the way: "what: 30% (300/1000)".
type plainProgress struct {
	mu    sync.Mutex
	w     io.Writer
	max   int
	what  string
	shown int // the last tenth printed
}

func (p *plainProgress) Set(n int) error {
	if p.max <= 0 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	tenth := min(n, p.max) * 10 / p.max
	if tenth <= p.shown {
		return nil
	}
	p.shown = tenth
	_, err := fmt.Fprintf(p.w, "%s: %d%% (%d/%d)\n", p.what, tenth*10, min(n, p.max), p.max)
	return err
}
