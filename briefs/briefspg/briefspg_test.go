package briefspg_test

import (
	"testing"

	"github.com/venuehq/venue/briefs"
	"github.com/venuehq/venue/briefs/briefspg"
	"github.com/venuehq/venue/briefs/briefstest"
	"github.com/venuehq/venue/store/postgres"
	"github.com/venuehq/venue/store/storetest"
)

func TestPostgresContract(t *testing.T) {
	briefstest.Run(t, func(t *testing.T) briefs.Store {
		url := storetest.DatabaseURL(t)
		st, err := postgres.New(t.Context(), url, postgres.WithSchema(storetest.Schema(t, url)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(st.Close)
		if _, err := st.Migrate(t.Context()); err != nil {
			t.Fatal(err)
		}
		return briefspg.New(st.Pool())
	})
}
