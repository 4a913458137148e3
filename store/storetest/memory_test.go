package storetest_test

import (
	"testing"

	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/store/memory"
	"github.com/venuehq/venue/store/storetest"
)

// The embedded default passes the contract.
func TestMemory(t *testing.T) {
	storetest.Run(t, func(*testing.T) store.Store { return memory.New() })
}
