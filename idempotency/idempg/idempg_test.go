package idempg_test

import (
	"testing"

	"github.com/venuehq/venue/idempotency/idempg"
	"github.com/venuehq/venue/idempotency/idemtest"
	"github.com/venuehq/venue/store/postgres"
	"github.com/venuehq/venue/store/storetest"
)

func TestContract(t *testing.T) {
	url := storetest.DatabaseURL(t)
	schema := storetest.Schema(t, url)
	s, err := postgres.New(t.Context(), url, postgres.WithSchema(schema), postgres.WithMaxConns(10))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if _, err := s.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	idemtest.Run(t, idempg.New(s.Pool()))
}
