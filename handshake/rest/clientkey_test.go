package rest_test

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/venuehq/venue/clock"
	"github.com/venuehq/venue/handshake"
	"github.com/venuehq/venue/handshake/memory"
	"github.com/venuehq/venue/handshake/rest"
)

// The owner sign-in limit per address (10 starts an hour) counts the
// venue's client key: behind a trusted proxy the X-Forwarded-For client,
// an IPv6 client by its /64; without trusted proxies X-Forwarded-For is
// ignored and the socket's address counts.
func TestSignInLimitPerClientKey(t *testing.T) {
	t.Parallel()
	start := func(t *testing.T, trusted []*net.IPNet) func(xff string) int {
		d := dir{"b": {ID: "b", Name: "Bravo"}}
		svc := &handshake.Service{Store: memory.New(), Agents: d, NewID: func(p string) string { return p + "_1" }}
		srv := httptest.NewServer(rest.New(rest.Handler{Service: svc, Auth: d, Now: clock.NewFake(t0).Now, Bridge: true, TrustedProxies: trusted}))
		t.Cleanup(srv.Close)
		return func(xff string) int {
			req, _ := http.NewRequest("POST", srv.URL+"/owner/api/start", strings.NewReader("{}"))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Forwarded-For", xff)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			return res.StatusCode
		}
	}
	_, loopback, _ := net.ParseCIDR("127.0.0.1/32")
	behind := start(t, []*net.IPNet{loopback})
	for i := range handshake.SignInStartsPerHour {
		if st := behind(fmt.Sprintf("2001:db8:1:2::%x", i+1)); st != http.StatusCreated {
			t.Fatalf("start %d: %d", i, st)
		}
	}
	// Another address of the same /64 is the same client; another /64,
	// or another IPv4 client behind the proxy, is not.
	if st := behind("2001:db8:1:2:ffff::1"); st != http.StatusTooManyRequests {
		t.Fatalf("same /64: %d, want 429", st)
	}
	if st := behind("2001:db8:1:3::1"); st != http.StatusCreated {
		t.Fatalf("another /64: %d", st)
	}
	if st := behind("192.0.2.9"); st != http.StatusCreated {
		t.Fatalf("another client: %d", st)
	}

	// Untrusted: X-Forwarded-For is the client's word and changes nothing.
	direct := start(t, nil)
	for i := range handshake.SignInStartsPerHour {
		if st := direct(fmt.Sprintf("198.51.100.%d", i+1)); st != http.StatusCreated {
			t.Fatalf("direct start %d: %d", i, st)
		}
	}
	if st := direct("203.0.113.1"); st != http.StatusTooManyRequests {
		t.Fatalf("a forged X-Forwarded-For escaped the limit: %d", st)
	}
}
