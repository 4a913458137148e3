package inproc

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
)

// TestServe: a request through DialContext reaches the handler marked
// Local with RemoteAddr "inproc"; after Close, Dial says ErrClosed.
func TestServe(t *testing.T) {
	t.Parallel()
	s := Serve(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !Local(r) || r.RemoteAddr != "inproc" {
			http.Error(w, "not local", http.StatusForbidden)
			return
		}
		_, _ = io.WriteString(w, "hello")
	}))
	hc := &http.Client{Transport: &http.Transport{DialContext: s.DialContext}}
	resp, err := hc.Get("http://venue.invalid/x")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "hello" {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
	if Local(&http.Request{}) {
		t.Fatal("a request from elsewhere is Local")
	}
	hc.CloseIdleConnections()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DialContext(context.Background(), "tcp", "x"); !errors.Is(err, ErrClosed) {
		t.Fatalf("dial after Close: %v", err)
	}
}
