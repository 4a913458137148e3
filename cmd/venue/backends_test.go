package main

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/venuehq/venue/clock"
)

// TestOpenBackendsUnreachable: a configured but unreachable backend stops
// the start with a message naming it, and never shows the password.
func TestOpenBackendsUnreachable(t *testing.T) {
	t.Parallel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct{ db, redis, names string }{
		{"postgres://venue:s3cret-pw@127.0.0.1:1/venue?sslmode=disable&connect_timeout=2", "", "DATABASE_URL"},
		{"", "redis://:s3cret-pw@127.0.0.1:1/0", "REDIS_URL"},
	} {
		b, err := openBackends(ctx, tc.db, tc.redis, "", clock.Real{}, log)
		if err == nil {
			b.Close()
			t.Fatalf("%s: unreachable backend accepted", tc.names)
		}
		if msg := err.Error(); !strings.Contains(msg, tc.names) || strings.Contains(msg, "s3cret-pw") {
			t.Errorf("%s: error %q should name it and hide the password", tc.names, msg)
		}
	}
	b, err := openBackends(ctx, "", "", "", clock.Real{}, log)
	if err != nil || !strings.Contains(b.Name, "embedded") {
		t.Fatalf("no URLs: %v %q", err, b.Name)
	}
	b.Close()
}
