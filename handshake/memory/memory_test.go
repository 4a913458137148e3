package memory_test

import (
	"testing"

	"github.com/venuehq/venue/handshake"
	"github.com/venuehq/venue/handshake/handshaketest"
	"github.com/venuehq/venue/handshake/memory"
)

func TestContract(t *testing.T) {
	t.Parallel()
	handshaketest.Run(t, func(*testing.T) handshake.Store { return memory.New() })
}
