package pgstate_test

import (
	"testing"

	"github.com/venuehq/venue/pircan"
	"github.com/venuehq/venue/pircan/pgstate"
	"github.com/venuehq/venue/pircan/statetest"
	"github.com/venuehq/venue/store/postgres"
	"github.com/venuehq/venue/store/storetest"
)

func TestContract(t *testing.T) {
	statetest.Run(t, func(t *testing.T) pircan.State {
		url := storetest.DatabaseURL(t)
		st, err := postgres.New(t.Context(), url, postgres.WithSchema(storetest.Schema(t, url)), postgres.WithMaxConns(4))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(st.Close)
		if _, err := st.Migrate(t.Context()); err != nil {
			t.Fatal(err)
		}
		return pgstate.New(st.Pool())
	})
}
