package handshake_test

import (
	"strings"
	"testing"

	"github.com/venuehq/venue/directory"
	"github.com/venuehq/venue/handshake"
	"github.com/venuehq/venue/handshake/memory"
	storemem "github.com/venuehq/venue/store/memory"
)

// TestNewChecks: New refuses a service it cannot run, naming what is
// missing, and builds one from what it needs.
func TestNewChecks(t *testing.T) {
	dir := &directory.Service{Store: storemem.New()}
	for _, tc := range []struct {
		c    handshake.Service
		want string
	}{
		{handshake.Service{Agents: dir, NewID: directory.NewID}, "no Store"},
		{handshake.Service{Store: memory.New(), NewID: directory.NewID}, "no Agents"},
		{handshake.Service{Store: memory.New(), Agents: dir}, "no NewID"},
	} {
		if _, err := handshake.New(tc.c); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New: %v, want %q", err, tc.want)
		}
	}
	svc, err := handshake.New(handshake.Service{Store: memory.New(), Agents: dir, NewID: directory.NewID})
	if err != nil || svc.Log == nil {
		t.Fatalf("New: %v %v", svc, err)
	}
}
