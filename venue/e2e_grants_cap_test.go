package venue_test

import (
	"crypto/ed25519"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/venuehq/venue/grants"
	"github.com/venuehq/venue/venue"
)

// grantToken is a day-long unlimited grant for agentID signed by principal
// at now, with a fresh jti.
func grantToken(t *testing.T, principal ed25519.PrivateKey, agentID string, now time.Time) string {
	t.Helper()
	tok, err := grants.SignGrant(principal, grants.GrantClaims{Subject: agentID, Audience: "venue", IssuedAt: now, ExpiresAt: now.Add(24 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// grantPages walks GET /v1/grants with limit through list (query -> status,
// body), checking each page's size and next, and returns the jtis in order.
func grantPages(t *testing.T, limit int, list func(query string) (int, map[string]any)) []string {
	t.Helper()
	var jtis []string
	query := fmt.Sprintf("?limit=%d", limit)
	for pages := 0; ; pages++ {
		if pages > 50 {
			t.Fatal("GET /v1/grants never ends")
		}
		code, m := list(query)
		if code != http.StatusOK {
			t.Fatalf("GET /v1/grants%s: %d %v", query, code, m)
		}
		items := m["items"].([]any)
		if len(items) > limit {
			t.Fatalf("a page of %d, limit %d", len(items), limit)
		}
		for _, it := range items {
			jtis = append(jtis, it.(map[string]any)["jti"].(string))
		}
		next, more := m["next"].(string)
		if !more {
			return jtis
		}
		if len(items) != limit {
			t.Fatalf("a short page (%d of %d) with next %q", len(items), limit, next)
		}
		query = fmt.Sprintf("?limit=%d&after=%s", limit, next)
	}
}

// TestGrantCapAndPaging (embedded): past --max-active-grants an upload is
// 409 too_many_grants and stores nothing; a revoked grant frees a place;
// GET /v1/grants pages every grant once in upload order, revoked ones
// included, and refuses a bad after or limit (DELEGATION.md "Uploading,
// listing, revoking").
func TestGrantCapAndPaging(t *testing.T) {
	t.Parallel()
	v := newE2E(t, func(c *venue.Config) { c.MaxActiveGrants = 3 })
	a := v.registerBare("capped", "brand")
	var jtis []string
	for range 3 {
		jtis = append(jtis, v.grant(a, grants.Scope{}))
	}
	code, m := v.do("POST", "/v1/grants", a.key, map[string]any{"token": grantToken(t, a.principal, a.id, v.clock.Now())})
	if code != http.StatusConflict || errCode(m) != "too_many_grants" {
		t.Fatalf("a fourth active grant: %d %v", code, m)
	}
	list := func(q string) (int, map[string]any) { return v.do("GET", "/v1/grants"+q, a.key, nil) }
	if got := grantPages(t, 100, list); len(got) != 3 {
		t.Fatalf("the refused grant was stored: %v", got)
	}
	if code, m := v.do("DELETE", "/v1/grants/"+jtis[0], a.key, nil); code != http.StatusOK {
		t.Fatalf("revoke: %d %v", code, m)
	}
	jtis = append(jtis, v.grant(a, grants.Scope{}))
	v.clock.Advance(25 * time.Hour) // every grant expired: places free again
	jtis = append(jtis, v.grant(a, grants.Scope{}), v.grant(a, grants.Scope{}), v.grant(a, grants.Scope{}))
	for _, limit := range []int{1, 2, 3, 7, 100} {
		got := grantPages(t, limit, list)
		if fmt.Sprint(got) != fmt.Sprint(jtis) {
			t.Fatalf("limit %d: paged %v, want %v", limit, got, jtis)
		}
	}
	for _, q := range []string{"?limit=0", "?limit=101", "?limit=x", "?after=abc", "?after=0", "?after=-1"} {
		if code, m := v.do("GET", "/v1/grants"+q, a.key, nil); code != http.StatusUnprocessableEntity || errCode(m) != "invalid_argument" {
			t.Fatalf("GET /v1/grants%s: %d %v", q, code, m)
		}
	}
}

// TestGrantCapAcrossNodes (Postgres + Redis): uploads of one agent racing
// on two nodes never pass the cap together, and either node pages the same
// list.
func TestGrantCapAcrossNodes(t *testing.T) {
	t.Parallel()
	c := newMNCluster(t, e2eStart)
	capped := func(cfg *venue.Config) { cfg.MaxActiveGrants = 4 }
	n1, n2 := c.nodeWith("n1", capped), c.nodeWith("n2", capped)
	pub, priv, err := grants.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	var reg map[string]string
	if code := n1.do("POST", "/v1/register", "", map[string]any{"name": "racer", "role": "brand", "principal_key": grants.PublicJWK(pub)}, &reg); code != http.StatusCreated {
		t.Fatalf("register: %d %v", code, reg)
	}
	id, key := reg["agent_id"], reg["api_key"]
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	for i := range 10 {
		tok := grantToken(t, priv, id, c.clock.Now())
		n := []*mnNode{n1, n2}[i%2]
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out map[string]any
			code := n.do("POST", "/v1/grants", key, map[string]any{"token": tok}, &out)
			if code == http.StatusConflict && errCode(out) != "too_many_grants" {
				t.Errorf("409 %v", out)
			}
			mu.Lock()
			codes[code]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if codes[http.StatusCreated] != 4 || codes[http.StatusConflict] != 6 {
		t.Fatalf("10 uploads racing on two nodes under a cap of 4: %v", codes)
	}
	var lists [][]string
	for _, n := range []*mnNode{n1, n2} {
		lists = append(lists, grantPages(t, 3, func(q string) (int, map[string]any) {
			var m map[string]any
			code := n.do("GET", "/v1/grants"+q, key, nil, &m)
			return code, m
		}))
	}
	if len(lists[0]) != 4 || fmt.Sprint(lists[0]) != fmt.Sprint(lists[1]) {
		t.Fatalf("node 1 pages %v, node 2 %v", lists[0], lists[1])
	}
}
