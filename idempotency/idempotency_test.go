package idempotency_test

import (
	"testing"

	"github.com/venuehq/venue/idempotency"
	"github.com/venuehq/venue/idempotency/idemtest"
)

func TestMemory(t *testing.T) { idemtest.Run(t, idempotency.NewMemory()) }
