package client

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// TestKeyedRetry: an authenticated POST carries an Idempotency-Key and is
// sent again with the same key while the venue says the first is in flight;
// a GET carries none.
func TestKeyedRetry(t *testing.T) {
	var keys []string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Method+" "+r.Header.Get("Idempotency-Key"))
		n := len(keys)
		mu.Unlock()
		if r.Method == http.MethodPost && n == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusConflict)
			_, _ = w.Write([]byte(`{"error":{"code":"idempotency_in_flight","message":"retry"}}`))
			return
		}
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	c, err := New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	c = c.WithKey("vk_test")
	if err := c.do(t.Context(), http.MethodPost, "/v1/grants", map[string]string{"token": "x"}, nil, true); err != nil {
		t.Fatal(err)
	}
	if err := c.do(t.Context(), http.MethodGet, "/v1/grants", nil, nil, true); err != nil {
		t.Fatal(err)
	}
	if len(keys) != 3 || keys[0] != keys[1] || len(keys[0]) < len("POST ")+32 || keys[2] != "GET " {
		t.Fatalf("requests %q: want a POST with a key, its retry with the same key, a GET without", keys)
	}
}
