package events_test

import (
	"testing"

	"github.com/venuehq/venue/events"
	"github.com/venuehq/venue/events/eventstest"
)

func TestMemory(t *testing.T) { eventstest.Run(t, events.NewMemory()) }
