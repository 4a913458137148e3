package briefs_test

import (
	"testing"

	"github.com/venuehq/venue/briefs"
	"github.com/venuehq/venue/briefs/briefstest"
)

func TestMemoryContract(t *testing.T) {
	briefstest.Run(t, func(*testing.T) briefs.Store { return briefs.NewMemory() })
}
