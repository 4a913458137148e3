package logtest_test

import (
	"testing"

	"github.com/venuehq/venue/receiptlog"
	"github.com/venuehq/venue/receiptlog/logtest"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/store/memory"
)

func TestMemory(t *testing.T) {
	logtest.Run(t, func(t *testing.T) (logtest.Backend, func() receiptlog.Store) {
		st := memory.New()
		lg := receiptlog.NewMemory(st.Negotiation, store.ErrNotFound)
		return logtest.Backend{Store: st, Log: lg}, func() receiptlog.Store { return lg }
	})
}
