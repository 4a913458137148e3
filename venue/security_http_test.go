package venue_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/store/memory"
	"github.com/venuehq/venue/venue"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestSecurityAdminListener: metrics, pprof and the detailed readiness are
// on the admin listener only; the public /readyz says ready or not.
func TestSecurityAdminListener(t *testing.T) {
	t.Parallel()
	v := newE2E(t, func(c *venue.Config) { c.Pprof = true })
	admin := "http://" + v.srv.AdminAddr()
	for _, path := range []string{"/metrics", "/debug/pprof/cmdline", "/debug/pprof/", "/debug/runtime-metrics"} {
		if code, _ := get(t, v.url+path); code != http.StatusNotFound {
			t.Errorf("public %s: %d, want 404", path, code)
		}
	}
	code, body := get(t, v.url+"/readyz")
	if code != 200 || strings.TrimSpace(body) != `{"ready":true}` {
		t.Errorf("public /readyz: %d %s", code, body)
	}
	if code, body := get(t, admin+"/metrics"); code != 200 || !strings.Contains(body, "go_goroutines") {
		t.Errorf("admin /metrics: %d", code)
	}
	if code, _ := get(t, admin+"/debug/pprof/cmdline"); code != 200 {
		t.Errorf("admin pprof: %d", code)
	}
	if code, body := get(t, admin+"/debug/runtime-metrics"); code != 200 || !strings.Contains(body, `"/gc/heap/allocs:objects"`) {
		t.Errorf("admin runtime metrics: %d", code)
	}
	code, body = get(t, admin+"/readyz")
	var m map[string]any
	if code != 200 || json.Unmarshal([]byte(body), &m) != nil || m["backend"] == nil || m["checks"] == nil {
		t.Errorf("admin /readyz: %d %s", code, body)
	}
}

// TestSecurityReadyzHidesErrors: an unreachable store makes the public
// /readyz 503 {"ready":false}, with no error text (which would name the
// database, its user and host).
func TestSecurityReadyzHidesErrors(t *testing.T) {
	t.Parallel()
	v := newE2E(t, func(c *venue.Config) {
		c.Store = failingPing{memory.New(), "postgres://venue@db.internal:5432/prod: connection refused"}
	})
	code, body := get(t, v.url+"/readyz")
	if code != 503 || strings.TrimSpace(body) != `{"ready":false}` {
		t.Fatalf("public /readyz: %d %s", code, body)
	}
	if _, body := get(t, "http://"+v.srv.AdminAddr()+"/readyz"); !strings.Contains(body, "db.internal") {
		t.Fatalf("admin /readyz lacks the cause: %s", body)
	}
}

// TestSecurityHTTPLimits: over 16 KiB of headers is 431 (from the first
// byte over, not 4 KiB later: a header of 17,000 bytes was once served),
// over 2 KiB of query string 414, and the query limit applies before
// authentication.
func TestSecurityHTTPLimits(t *testing.T) {
	t.Parallel()
	v := newE2E(t)
	for _, tc := range []struct{ junk, want int }{
		{16000, http.StatusOK}, // with the request line and the client's headers, under 16 KiB
		{17000, http.StatusRequestHeaderFieldsTooLarge},
		{20 << 10, http.StatusRequestHeaderFieldsTooLarge},
	} {
		req, _ := http.NewRequest("GET", v.url+"/v1/info", nil)
		req.Header.Set("X-Junk", strings.Repeat("a", tc.junk))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("header of %d bytes: %d, want %d", tc.junk, resp.StatusCode, tc.want)
		}
	}
	code, body := get(t, v.url+"/v1/info?q="+strings.Repeat("a", 3<<10))
	if code != http.StatusRequestURITooLong || !strings.Contains(body, "too_large") {
		t.Errorf("3 KiB query: %d %s", code, body)
	}
	if code, _ := get(t, v.url+"/v1/info?q="+strings.Repeat("a", 1<<10)); code != 200 {
		t.Errorf("1 KiB query: %d", code)
	}
}

// TestSecurityHTTPTimeouts: a body that trickles is cut off at the read
// timeout, and an idle keep-alive connection is closed at the idle timeout
// (both shortened here; the defaults are 30 s and 120 s).
func TestSecurityHTTPTimeouts(t *testing.T) {
	t.Parallel()
	v := newE2E(t, func(c *venue.Config) {
		c.HTTPTimeouts = venue.HTTPTimeouts{Read: 300 * time.Millisecond, Idle: 300 * time.Millisecond}
	})
	addr := strings.TrimPrefix(v.url, "http://")
	// A slow body: headers promise 100 bytes, one arrives.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = io.WriteString(c, "POST /v1/register HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
	if !closedBy(t, c) {
		t.Fatal("a trickling body held the connection")
	}
	// An idle keep-alive connection.
	c2, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	_, _ = io.WriteString(c2, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c2), nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthz: %v %v", resp, err)
	}
	resp.Body.Close()
	if !closedBy(t, c2) {
		t.Fatal("an idle keep-alive connection was held")
	}
}

// closedBy reads c until the server closes it (true) or e2eWait passes.
func closedBy(t *testing.T, c net.Conn) bool {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(e2eWait))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	return err == nil || !(errors.As(err, &ne) && ne.Timeout())
}

// failingPing is a store whose Ping fails with a message naming its host.
type failingPing struct {
	store.Store
	msg string
}

func (f failingPing) Ping(context.Context) error { return errors.New(f.msg) }
