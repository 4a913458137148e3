package redisbus_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/venuehq/venue/bus"
	"github.com/venuehq/venue/bus/bustest"
	"github.com/venuehq/venue/bus/redisbus"
)

// newNodes returns n Redis buses sharing a fresh prefix: n nodes of a venue.
func newNodes(t *testing.T, n int) []bus.Bus {
	t.Helper()
	url := bustest.RedisURL(t)
	prefix := bustest.KeyPrefix(t, url)
	nodes := make([]bus.Bus, n)
	for i := range nodes {
		b, err := redisbus.New(t.Context(), url, redisbus.Options{Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := b.Close(); err != nil {
				t.Error(err)
			}
		})
		nodes[i] = b
	}
	return nodes
}

func TestContract(t *testing.T) {
	t.Parallel()
	bustest.Run(t, newNodes)
}

func TestPingAndClose(t *testing.T) {
	t.Parallel()
	b := newNodes(t, 1)[0].(*redisbus.Bus)
	if err := b.Ping(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil { // idempotent
		t.Fatal(err)
	}
	// Subscribing to a closed bus does not hang.
	done := make(chan struct{})
	go func() { b.Subscribe("neg:late", func([]byte) {})(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Subscribe on a closed bus hangs")
	}
}

func TestUnreachableRedactsPassword(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	const pw = "r3dis-Secret"
	for _, url := range []string{
		"redis://:" + pw + "@127.0.0.1:1/0?max_retries=-1",
		"redis://user:" + pw + "@127.0.0.1:1/0?max_retries=-1",
		"redis://user:" + pw + "@127.0.0.1:1/notadb",
		"redis://user:" + pw + "@[::1/0", // not a URL
	} {
		_, err := redisbus.New(ctx, url, redisbus.Options{})
		if err == nil {
			t.Fatalf("New(%s) connected", redisbus.RedactURL(url))
		}
		if strings.Contains(err.Error(), pw) {
			t.Errorf("error shows the password: %v", err)
		}
	}
}
