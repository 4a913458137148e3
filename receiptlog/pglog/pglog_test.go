package pglog_test

import (
	"testing"

	"github.com/venuehq/venue/receiptlog"
	"github.com/venuehq/venue/receiptlog/logtest"
	"github.com/venuehq/venue/receiptlog/pglog"
	"github.com/venuehq/venue/store/postgres"
	"github.com/venuehq/venue/store/storetest"
)

func TestPostgres(t *testing.T) {
	logtest.Run(t, func(t *testing.T) (logtest.Backend, func() receiptlog.Store) {
		url := storetest.DatabaseURL(t)
		schema := storetest.Schema(t, url)
		open := func() *postgres.Store {
			s, err := postgres.New(t.Context(), url, postgres.WithSchema(schema), postgres.WithMaxConns(4))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(s.Close)
			return s
		}
		st := open()
		if _, err := st.Migrate(t.Context()); err != nil {
			t.Fatal(err)
		}
		return logtest.Backend{Store: st, Log: pglog.New(st.Pool())}, func() receiptlog.Store { return pglog.New(open().Pool()) }
	})
}
