package lobby

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/venuehq/venue/clock"
)

type presenceLog struct {
	mu     sync.Mutex
	writes []string // agent online|offline until-offset
	wrote  chan struct{}
	start  time.Time
}

func (l *presenceLog) SetPresence(_ context.Context, agentID, _ string, until, at time.Time) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := agentID + " offline"
	if !until.IsZero() {
		w = agentID + " until " + until.Sub(l.start).String()
	}
	l.writes = append(l.writes, w)
	select {
	case l.wrote <- struct{}{}:
	default:
	}
	return nil
}

func (l *presenceLog) last() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.writes[len(l.writes)-1]
}

// An agent is online while any of its lobby sockets is open, offline once
// the last one ends; Run renews the open ones every PresenceTTL/3.
func TestPresence(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clk := clock.NewFake(start)
	st := &presenceLog{start: start, wrote: make(chan struct{}, 1)}
	p := NewPresence(st, clk, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	closeA := p.Open(ctx, "agt_a")
	closeB := p.Open(ctx, "agt_a")
	<-st.wrote
	if got := st.last(); got != "agt_a until 1m30s" {
		t.Fatalf("open: %q", got)
	}
	closeA()
	if got := st.last(); got != "agt_a until 1m30s" {
		t.Fatalf("one of two closed: %q, want still online", got)
	}
	for clk.Pending() == 0 { // Run armed its renewal timer
		time.Sleep(time.Millisecond)
	}
	<-st.wrote
	clk.Advance(PresenceTTL / 3)
	<-st.wrote
	if got := st.last(); got != "agt_a until 2m0s" {
		t.Fatalf("renewed: %q", got)
	}
	closeB()
	if got := st.last(); got != "agt_a offline" {
		t.Fatalf("last closed: %q", got)
	}
}
