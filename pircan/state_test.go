package pircan_test

import (
	"testing"

	"github.com/venuehq/venue/pircan"
	"github.com/venuehq/venue/pircan/statetest"
)

func TestMemoryState(t *testing.T) {
	statetest.Run(t, func(*testing.T) pircan.State { return pircan.NewMemoryState() })
}
