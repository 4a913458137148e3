package bustest_test

import (
	"testing"

	"github.com/venuehq/venue/bus"
	"github.com/venuehq/venue/bus/bustest"
)

// The in-process bus passes the contract; its "nodes" are one bus.
func TestLocal(t *testing.T) {
	bustest.Run(t, func(t *testing.T, n int) []bus.Bus {
		l := bus.NewLocal()
		nodes := make([]bus.Bus, n)
		for i := range nodes {
			nodes[i] = l
		}
		return nodes
	})
}
