package webhookspg_test

import (
	"testing"

	"github.com/venuehq/venue/events/eventspg"
	"github.com/venuehq/venue/store/postgres"
	"github.com/venuehq/venue/store/storetest"
	"github.com/venuehq/venue/webhooks/webhookspg"
	"github.com/venuehq/venue/webhooks/webhookstest"
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
	webhookstest.Run(t, webhookspg.New(s.Pool()), eventspg.New(s.Pool()))
}
