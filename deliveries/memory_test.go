package deliveries_test

import (
	"testing"

	"github.com/venuehq/venue/deliveries"
	"github.com/venuehq/venue/deliveries/deliveriestest"
)

func TestMemoryContract(t *testing.T) {
	t.Parallel()
	deliveriestest.Run(t, deliveries.NewMemory())
}
