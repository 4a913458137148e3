package venue_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/venuehq/venue/negotiation"
)

// keyedPost sends body to path on n with an Idempotency-Key and returns
// the status, the Idempotent-Replayed header and the body.
func keyedPost(t *testing.T, n *mnNode, key, apiKey, path, body string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), "POST", n.url+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+apiKey)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := apiClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = io.Copy(&b, resp.Body)
	return resp.StatusCode, resp.Header.Get("Idempotent-Replayed"), b.String()
}

// An Idempotency-Key holds across the nodes of a venue (Postgres): a
// lobby request sent twice at once to two nodes runs once, its retry on
// either node gets the first answer, another request with the key is a
// conflict (PROTOCOL.md "Without a socket").
func TestMultiNodeIdempotencyKey(t *testing.T) {
	t.Parallel()
	c := newMNCluster(t, mnStart)
	a, b := c.node("A"), c.node("B")
	brand := a.register(c, "Brand Co", negotiation.RoleBrand)
	bouncer := b.register(c, "Newsletter", negotiation.RoleBouncer)
	offer := `{"type":"submit_offer","id":"o1","to":"` + bouncer.id + `","offer":{"title":"Launch","brief":"Two sends"}}`

	type answer struct {
		code           int
		replayed, body string
	}
	var wg sync.WaitGroup
	answers := make([]answer, 2)
	for i, n := range []*mnNode{a, b} {
		wg.Go(func() {
			code, rep, body := keyedPost(t, n, "offer-1", brand.key, "/v1/agents/me/lobby", offer)
			answers[i] = answer{code, rep, body}
		})
	}
	wg.Wait()
	var first string
	for _, an := range answers {
		switch {
		case an.code == http.StatusOK && strings.Contains(an.body, `"offer_submitted"`):
			first = an.body
		case an.code == http.StatusConflict && strings.Contains(an.body, "idempotency_in_flight"):
		default:
			t.Fatalf("the same key at once on two nodes: %+v", answers)
		}
	}
	for _, n := range []*mnNode{a, b} {
		code, rep, body := keyedPost(t, n, "offer-1", brand.key, "/v1/agents/me/lobby", offer)
		if code != http.StatusOK || rep != "true" || (first != "" && body != first) {
			t.Fatalf("retry on %s: %d %q %s, want the first answer %s", n.name, code, rep, body, first)
		}
		first = body
	}
	var offers struct {
		Items []any `json:"items"`
	}
	if code := a.do("GET", "/v1/offers", brand.key, nil, &offers); code != http.StatusOK || len(offers.Items) != 1 {
		t.Fatalf("offers after three sends of one key: %d %d, want 1", code, len(offers.Items))
	}
	if code, _, body := keyedPost(t, b, "offer-1", brand.key, "/v1/agents/me/lobby", `{"type":"browse_bouncers"}`); code != http.StatusUnprocessableEntity || !strings.Contains(body, "idempotency_conflict") {
		t.Fatalf("another request with the key: %d %s", code, body)
	}
}
