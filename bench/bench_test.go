package bench_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"testing"

	"github.com/venuehq/venue/bench"
	"github.com/venuehq/venue/venue"
)

// startVenue runs a venue in-process with limits a load run needs and
// returns its URL and its admin listener's.
func startVenue(t *testing.T) (string, string) {
	t.Helper()
	srv, err := venue.New(venue.Config{
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), RegisterPerMinute: 1e6, AdminAddr: "127.0.0.1:0",
		Limits: venue.Limits{FramesPerSecond: 1000, FrameBurst: 1000},
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- srv.ServeListener(ctx, ln, ready) }()
	addr := <-ready
	t.Cleanup(func() { cancel(); <-done })
	return "http://" + addr, "http://" + srv.AdminAddr()
}

// TestRunSmall: a small run completes and reports sane numbers for both the
// venue and the relay.
func TestRunSmall(t *testing.T) {
	ctx := context.Background()
	url, admin := startVenue(t)
	cfg := bench.Config{URL: url, MetricsURL: admin, Negotiations: 8, Observers: 4, Rate: 400, Frames: 10,
		Server: &bench.Server{PID: os.Getpid(), MetricsURL: admin}}
	v, err := bench.RunVenue(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if v.Sent != 80 || v.Delivered != v.Sent || v.Errors != 0 || v.Dropped != 0 {
		t.Fatalf("venue run: %+v", v)
	}
	if v.Delivery.N != 80 || v.Delivery.P50 <= 0 || v.Delivery.P99 < v.Delivery.P50 || v.FramesPerSecond <= 0 {
		t.Fatalf("venue latency: %+v", v)
	}
	if v.Sockets != 20 || v.HeapPerSocket == 0 {
		t.Fatalf("venue sockets: %+v", v)
	}
	// The venue runs in this process here, so its CPU is the test's: only
	// that the figures are there and sane.
	if u := v.Server; u == nil || u.CPUSeconds < 0 || u.AllocsPerFrame <= 0 || u.AllocBytesPerFrame <= 0 || u.LoadStart < 0 {
		t.Fatalf("venue usage: %+v", u)
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	relay, err := bench.StartRelay(rctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r, err := bench.RunRelay(ctx, bench.Config{URL: "http://" + relay.Addr, Negotiations: 8, Rate: 400, Frames: 10,
		Server: &bench.Server{PID: os.Getpid(), MetricsURL: "http://" + relay.Addr}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Delivered != 80 || r.Delivery.N != 80 || r.Dropped != 0 {
		t.Fatalf("relay run: %+v", r)
	}
	if r.Server == nil || r.Server.AllocsPerFrame <= 0 {
		t.Fatalf("relay usage: %+v", r.Server)
	}
	c := bench.Compare(v, &r)
	if len(c) != 1 || c[0].RateTarget != 400 || c[0].P99 <= 0 || (v.Server.CPUSeconds > 0 && r.Server.CPUSeconds > 0 && c[0].CPUPerFrame <= 0) {
		t.Fatalf("ratios: %+v", c)
	}
}
