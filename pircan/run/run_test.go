package run

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/venuehq/venue/pircan"
)

// PIRCAN_IRC_TLS is true or false; anything else is refused, naming it.
func TestFromEnvTLS(t *testing.T) {
	t.Setenv("PIRCAN_IRC_TLS", "")
	if o, err := FromEnv(); err != nil || !o.TLS || o.Lobby != "#agents" || o.Nick != "PIRCAN" {
		t.Fatalf("defaults: %+v, %v", o, err)
	}
	t.Setenv("PIRCAN_IRC_TLS", "false")
	if o, err := FromEnv(); err != nil || o.TLS {
		t.Fatalf("false: %+v, %v", o, err)
	}
	t.Setenv("PIRCAN_IRC_TLS", "maybe")
	if _, err := FromEnv(); err == nil || !strings.Contains(err.Error(), `PIRCAN_IRC_TLS="maybe"`) {
		t.Fatalf("maybe: %v", err)
	}
}

// A channels file's channels are created with their privacy and topic;
// applied again, they change rather than double.
func TestApplyChannels(t *testing.T) {
	ctx := context.Background()
	st := pircan.NewMemoryState()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	chans := []pircan.ChannelConfig{{Name: "#deals", Topic: "t1"}, {Name: "#vip", Private: true, Invite: []string{"agt_1"}}}
	if err := ApplyChannels(ctx, st, chans, now); err != nil {
		t.Fatal(err)
	}
	chans[0].Topic = "t2"
	if err := ApplyChannels(ctx, st, chans, now); err != nil {
		t.Fatal(err)
	}
	got, n, err := st.Channels(ctx, pircan.ChannelQuery{All: true, Limit: 10})
	if err != nil || n != 2 || len(got) != 2 {
		t.Fatalf("channels %+v (%d), %v", got, n, err)
	}
	for _, c := range got {
		if (c.Name == "#deals" && (c.Topic != "t2" || c.Private)) || (c.Name == "#vip" && !c.Private) {
			t.Errorf("channel %+v", c)
		}
	}
}
