package clock

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

// A node whose clock runs 5 s fast reads the shared clock's time, and says
// it is off.
func TestVenueClockSkewedNode(t *testing.T) {
	shared := NewFake(t0)
	node := NewStepped(shared, 5*time.Second)
	var logs bytes.Buffer
	v := NewVenue(node, time.Second, slog.New(slog.NewTextHandler(&logs, nil)))
	if !v.Now().Equal(t0.Add(5 * time.Second)) {
		t.Fatalf("before a sync the venue clock reads the node's own: %v", v.Now())
	}
	v.SetReference(func(context.Context) (time.Time, error) { return shared.Now(), nil })
	if err := v.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !v.Now().Equal(t0) {
		// Now never goes back: the reading before the sync was ahead.
		if !v.Now().Equal(t0.Add(5 * time.Second)) {
			t.Fatalf("venue clock %v", v.Now())
		}
	}
	shared.Advance(10 * time.Second)
	if got := v.Now(); !got.Equal(t0.Add(10 * time.Second)) {
		t.Fatalf("venue clock %v, want the shared %v", got, t0.Add(10*time.Second))
	}
	st := v.Status()
	if !st.Synced || !st.Skewed || st.OffsetMS != 5000 || st.MaxSkewMS != 1000 {
		t.Fatalf("status %+v", st)
	}
	if !strings.Contains(logs.String(), "off from the venue clock") {
		t.Fatalf("no warning logged: %s", logs.String())
	}
}

// Steps of the node's wall clock, forward or back, move the venue clock
// not at all; the next sync reports the new offset.
func TestVenueClockIgnoresWallSteps(t *testing.T) {
	shared := NewFake(t0)
	node := NewStepped(shared, 0)
	v := NewVenue(node, time.Second, slog.New(slog.DiscardHandler))
	v.SetReference(func(context.Context) (time.Time, error) { return shared.Now(), nil })
	if err := v.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	shared.Advance(time.Second)
	node.Step(10 * time.Minute)
	if got := v.Now(); !got.Equal(t0.Add(time.Second)) {
		t.Fatalf("after a +10 min step: %v", got)
	}
	node.Step(-20 * time.Minute)
	shared.Advance(time.Second)
	if got := v.Now(); !got.Equal(t0.Add(2 * time.Second)) {
		t.Fatalf("after a -20 min step: %v", got)
	}
	if v.Status().Skewed {
		t.Fatal("skewed before a sync measured it")
	}
	if err := v.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if st := v.Status(); !st.Skewed || st.OffsetMS != -10*60*1000 {
		t.Fatalf("status after the steps %+v", st)
	}
	if got := v.Now(); !got.Equal(t0.Add(2 * time.Second)) {
		t.Fatalf("after the sync: %v", got)
	}
}

// The reference is taken as read at the end of its round trip: the venue
// clock is never ahead of it, and never goes back.
func TestVenueClockNeverAheadNeverBack(t *testing.T) {
	shared := NewFake(t0)
	v := NewVenue(NewStepped(shared, 0), 0, slog.New(slog.DiscardHandler))
	v.SetReference(func(context.Context) (time.Time, error) {
		r := shared.Now().Add(time.Millisecond) // read mid-way through a 2 ms round trip
		shared.Advance(2 * time.Millisecond)
		return r, nil
	})
	if err := v.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := v.Now(); !got.Equal(t0.Add(time.Millisecond)) || got.After(shared.Now()) {
		t.Fatalf("venue clock %v ahead of the reference's %v", got, shared.Now())
	}
	before := v.Now()
	v.SetReference(func(context.Context) (time.Time, error) { return t0, nil }) // a reading behind
	if err := v.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := v.Now(); got.Before(before) {
		t.Fatalf("venue clock went back: %v after %v", got, before)
	}
	v.SetReference(func(context.Context) (time.Time, error) { return time.Time{}, errors.New("down") })
	if err := v.Sync(t.Context()); err == nil || v.Status().Error != "down" {
		t.Fatalf("failed sync: %v, status %+v", err, v.Status())
	}
}
