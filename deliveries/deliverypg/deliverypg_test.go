package deliverypg_test

import (
	"testing"

	"github.com/venuehq/venue/deliveries/deliveriestest"
	"github.com/venuehq/venue/deliveries/deliverypg"
	"github.com/venuehq/venue/store/postgres"
	"github.com/venuehq/venue/store/storetest"
)

func TestContract(t *testing.T) {
	t.Parallel()
	url := storetest.DatabaseURL(t)
	s, err := postgres.New(t.Context(), url, postgres.WithSchema(storetest.Schema(t, url)), postgres.WithMaxConns(10))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	if _, err := s.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	deliveriestest.Run(t, deliverypg.New(s.Pool()))
}
