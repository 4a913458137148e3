package webhooks_test

import (
	"testing"

	"github.com/venuehq/venue/events"
	"github.com/venuehq/venue/webhooks"
	"github.com/venuehq/venue/webhooks/webhookstest"
)

func TestMemoryContract(t *testing.T) {
	ev := events.NewMemory()
	webhookstest.Run(t, webhooks.NewMemory(ev), ev)
}
