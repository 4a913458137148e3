package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/venuehq/venue/handshake"
	hspostgres "github.com/venuehq/venue/handshake/postgres"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/store/postgres"
	"github.com/venuehq/venue/store/storetest"
)

type auditAgents map[string]store.Agent

func (a auditAgents) Agent(_ context.Context, id string) (store.Agent, error) {
	if ag, ok := a[id]; ok {
		return ag, nil
	}
	return store.Agent{}, fmt.Errorf("agent %s: %w", id, store.ErrNotFound)
}

// `venue audit` prints what the handshake recorded, one JSON object a line.
func TestAuditCommand(t *testing.T) {
	t.Parallel()
	base := storetest.DatabaseURL(t)
	schema := storetest.Schema(t, base)
	ctx := context.Background()
	s, err := postgres.New(ctx, base, postgres.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	n := 0
	svc := &handshake.Service{Store: hspostgres.New(s.Pool()), Agents: auditAgents{"a": {ID: "a"}, "b": {ID: "b"}},
		NewID: func(p string) string { n++; return fmt.Sprintf("%s_%d", p, n) }}
	now := time.Now()
	r, err := svc.Contact(ctx, "a", handshake.ContactInput{To: "b", Purpose: "secret purpose"}, now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Decline(ctx, handshake.AgentActor("b"), r.ID, now); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(base)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	out, _, err := execute(t, rootCmd(), "", "audit", "--database-url", u.String(), "--since", "1h")
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var e map[string]any
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		actions = append(actions, fmt.Sprint(e["actor"], " ", e["action"], " ", e["subject"]))
	}
	want := []string{"agent:a contact " + r.ID, "agent:b decline " + r.ID}
	if strings.Join(actions, "|") != strings.Join(want, "|") {
		t.Fatalf("audit lines %v, want %v", actions, want)
	}
	if strings.Contains(out, "secret purpose") {
		t.Fatal("the audit log copies the purpose")
	}
	if _, _, err := execute(t, rootCmd(), "", "audit", "--database-url", u.String(), "--limit", "0"); err == nil {
		t.Fatal("--limit 0 accepted")
	}
}
