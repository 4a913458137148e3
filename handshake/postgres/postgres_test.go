package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/venuehq/venue/handshake"
	"github.com/venuehq/venue/handshake/handshaketest"
	hspg "github.com/venuehq/venue/handshake/postgres"
	"github.com/venuehq/venue/store/postgres"
	"github.com/venuehq/venue/store/storetest"
)

// newStore returns a handshake store on a fresh, migrated schema of its own.
func newStore(t *testing.T) handshake.Store { return newBenchStore(t) }

func newBenchStore(t testing.TB) handshake.Store {
	t.Helper()
	url := storetest.DatabaseURL(t)
	schema := storetest.Schema(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := postgres.New(ctx, url, postgres.WithSchema(schema), postgres.WithMaxConns(20),
		// The contract's races (16 contacts of one agent at once) queue on
		// one advisory lock; the default 2 s lock timeout is a production
		// bound, and under -race on a loaded CI machine the queue outlasted
		// it (55P03). The tests check the outcome, not that bound.
		postgres.WithTimeouts(0, 30*time.Second, 0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return hspg.New(s.Pool())
}

func TestContract(t *testing.T) {
	t.Parallel()
	handshaketest.Run(t, newStore)
}
