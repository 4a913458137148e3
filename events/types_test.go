package events_test

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/venuehq/venue/briefs"
	"github.com/venuehq/venue/deliveries"
	"github.com/venuehq/venue/events"
	"github.com/venuehq/venue/handshake"
	"github.com/venuehq/venue/negotiation"
)

// TestTypes: Types are the frame types of the packages that push them,
// spelled as those packages spell them, each once; and every type of
// PROTOCOL.md's "Event types" table is one of them.
func TestTypes(t *testing.T) {
	t.Parallel()
	want := []string{
		negotiation.TypeNegotiationRequested, negotiation.TypeNegotiationAccepted, negotiation.TypeNegotiationDeclined,
		briefs.TypeBriefReceived, briefs.TypeQuotesReady, briefs.TypeBriefClosed,
		negotiation.TypeNegotiationStarted, negotiation.TypeNegotiationMessage, negotiation.TypeProposalExpired,
		negotiation.TypeProposalWithdrawn, negotiation.TypeNegotiationEnded, negotiation.TypeEscalationResolved,
		handshake.FrameContactRequested, handshake.FrameContactUpdated, handshake.FrameAgreementUpdated,
		handshake.FrameMessageReceived, handshake.FrameTaskReceived, handshake.FrameTaskUpdated,
		events.TypeSettlementUpdated, deliveries.TypeDeliveryUpdated,
	}
	got := slices.Clone(events.Types)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) || len(slices.Compact(slices.Clone(got))) != len(got) {
		t.Fatalf("Types %v\nwant  %v", got, want)
	}
	if slices.Contains(events.Types, negotiation.TypeAgentThinking) {
		t.Fatal("agent_thinking is not an event")
	}
	doc, err := os.ReadFile("../PROTOCOL.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, _ := strings.Cut(string(doc), "\n### Event types\n")
	table, _, _ = strings.Cut(table, "\n### ")
	named := 0
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		first, _, _ := strings.Cut(line[1:], "|")
		for _, m := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(first, -1) {
			named++
			if !slices.Contains(events.Types, m[1]) {
				t.Errorf("PROTOCOL.md \"Event types\" names %s, which is not in Types", m[1])
			}
		}
	}
	if named < 10 {
		t.Fatalf("read %d types from PROTOCOL.md \"Event types\"", named)
	}
	// The OpenAPI document lists them as the webhook's events.
	raw, err := os.ReadFile("../venue/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	var api struct {
		Components struct {
			Schemas struct {
				WebhookInput struct {
					Properties struct {
						Events struct {
							Items struct {
								Enum []string `json:"enum"`
							} `json:"items"`
						} `json:"events"`
					} `json:"properties"`
				} `json:"WebhookInput"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &api); err != nil {
		t.Fatal(err)
	}
	enum := slices.Clone(api.Components.Schemas.WebhookInput.Properties.Events.Items.Enum)
	slices.Sort(enum)
	if !slices.Equal(enum, got) {
		t.Fatalf("openapi.json WebhookInput.events %v\nTypes %v", enum, got)
	}
}
