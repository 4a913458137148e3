package venue_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/venuehq/venue/venue"
)

// TestE2EWebhookEventTypes: a webhook's events are event types it can be
// sent (PROTOCOL.md "Event types"): a name no event carries (a typo) is 422
// invalid_argument naming it and sets nothing, where it used to be taken and
// silently match nothing.
func TestE2EWebhookEventTypes(t *testing.T) {
	t.Parallel()
	v := newE2E(t, func(c *venue.Config) { c.WebhooksAllowPrivate = true })
	a := v.register("Hook", "bouncer")
	const url = "http://127.0.0.1:9/hook"
	for _, evs := range [][]string{{"no_such_event"}, {"negotiation_requested", "negotiation_ende"}, {"agent_thinking"}} {
		code, m := v.do("PUT", "/v1/agents/me/webhook", a.key, map[string]any{"url": url, "events": evs})
		e, _ := m["error"].(map[string]any)
		bad := evs[len(evs)-1]
		if code != http.StatusUnprocessableEntity || e["code"] != "invalid_argument" || !strings.Contains(str(e["message"]), `"`+bad+`"`) {
			t.Errorf("events %v: %d %v, want 422 invalid_argument naming %s", evs, code, m, bad)
		}
	}
	if code, m := v.do("GET", "/v1/agents/me/webhook", a.key, nil); code != http.StatusNotFound {
		t.Fatalf("a refused webhook was set: %d %v", code, m)
	}
	evs := []string{"negotiation_requested", "brief_received", "escalation_resolved", "task_updated", "settlement_updated", "delivery_updated"}
	if code, m := v.do("PUT", "/v1/agents/me/webhook", a.key, map[string]any{"url": url, "events": evs}); code != http.StatusOK || len(m["events"].([]any)) != len(evs) {
		t.Fatalf("events %v: %d %v", evs, code, m)
	}
}

// TestE2EWebhookSchemeMessage: a URL of another scheme is told what the
// venue takes: https alone, or http and https with --webhooks-allow-private.
func TestE2EWebhookSchemeMessage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		private bool
		want    string
	}{{false, "url must be https"}, {true, "url must be http or https"}} {
		v := newE2E(t, func(c *venue.Config) { c.WebhooksAllowPrivate = tc.private })
		a := v.register("Hook", "bouncer")
		code, m := v.do("PUT", "/v1/agents/me/webhook", a.key, map[string]any{"url": "ftp://93.184.216.34/hook"})
		if e, _ := m["error"].(map[string]any); code != http.StatusUnprocessableEntity || e["code"] != "invalid_argument" || e["message"] != tc.want {
			t.Errorf("--webhooks-allow-private %v: %d %v, want %q", tc.private, code, m, tc.want)
		}
	}
}
