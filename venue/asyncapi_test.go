package venue_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/venuehq/venue/arena"
	"github.com/venuehq/venue/deliveries"
	"github.com/venuehq/venue/events"
	"github.com/venuehq/venue/handshake"
	"github.com/venuehq/venue/lobby"
	"github.com/venuehq/venue/negotiation"
)

// TestAsyncAPIDocument: asyncapi.yaml is AsyncAPI 3, every frame type of the
// code is a message of the right channels (and each channel has only those), and every reference of its
// operations resolves to a message of the operation's channel.
func TestAsyncAPIDocument(t *testing.T) {
	t.Parallel()
	spec, err := loadAsyncSpec()
	if err != nil {
		t.Fatal(err)
	}
	if spec.doc["asyncapi"] != "3.0.0" {
		t.Fatalf("asyncapi %v, want 3.0.0", spec.doc["asyncapi"])
	}
	want := map[string][]string{
		"lobby": {lobby.TypeBrowseBouncers, lobby.TypeGetProfile, lobby.TypeSubmitOffer, lobby.TypeCreateNegotiation,
			lobby.TypeAcceptNegotiation, lobby.TypeDeclineNegotiation, lobby.TypeBouncers, lobby.TypeProfile,
			lobby.TypeOfferSubmitted, lobby.TypeNegotiationCreated, lobby.TypeNegotiationAccepted,
			negotiation.TypeNegotiationDeclined, negotiation.TypeNegotiationRequested, negotiation.TypeError,
			lobby.TypeBlockBrand, lobby.TypeUnblockBrand, lobby.TypeBrandBlocked,
			handshake.FrameContactRequested, handshake.FrameContactUpdated, handshake.FrameAgreementUpdated,
			handshake.FrameMessageReceived, handshake.FrameTaskReceived, handshake.FrameTaskUpdated},
		"negotiation": {negotiation.TypeMessage, negotiation.TypeResearch, negotiation.TypeThinking,
			negotiation.TypeProposeTerms, negotiation.TypeCounterTerms, negotiation.TypeAccept, negotiation.TypeReject,
			negotiation.TypeWithdraw, negotiation.TypeEscalate, negotiation.TypeWalk, negotiation.TypeClose,
			negotiation.TypeNegotiationStarted, negotiation.TypeNegotiationMessage, negotiation.TypeMessageAck,
			negotiation.TypeAgentThinking, negotiation.TypeProposalExpired, negotiation.TypeProposalWithdrawn, negotiation.TypeScopeBlock,
			negotiation.TypeNegotiationEnded, negotiation.TypeEscalationResolved, negotiation.TypeError},
		"arena": {arena.EventStarted, arena.EventUpdated, arena.EventEnded, arena.EventResync},
		"webhook": {negotiation.TypeNegotiationRequested, lobby.TypeNegotiationAccepted, negotiation.TypeNegotiationDeclined,
			negotiation.TypeNegotiationStarted, negotiation.TypeNegotiationMessage, negotiation.TypeProposalExpired,
			negotiation.TypeProposalWithdrawn, negotiation.TypeNegotiationEnded, negotiation.TypeEscalationResolved,
			handshake.FrameContactRequested, handshake.FrameContactUpdated, handshake.FrameAgreementUpdated,
			handshake.FrameMessageReceived, handshake.FrameTaskReceived, handshake.FrameTaskUpdated, events.TypeSettlementUpdated,
			deliveries.TypeDeliveryUpdated},
		"observe": {negotiation.TypeNegotiationStarted, negotiation.TypeNegotiationMessage, negotiation.TypeAgentThinking,
			negotiation.TypeProposalExpired, negotiation.TypeProposalWithdrawn, negotiation.TypeNegotiationEnded},
	}
	for ch, types := range want {
		var got []string
		for typ := range spec.channels[ch] {
			got = append(got, typ)
		}
		slices.Sort(got)
		slices.Sort(types)
		if !slices.Equal(got, types) {
			t.Errorf("channel %s has %v, want %v", ch, got, types)
		}
	}
	ops, _ := spec.doc["operations"].(map[string]any)
	if len(ops) == 0 {
		t.Fatal("no operations")
	}
	channels, _ := spec.doc["channels"].(map[string]any)
	for name, o := range ops {
		op := o.(map[string]any)
		check := func(chRef any, msgs any) {
			ch := strings.TrimPrefix(chRef.(map[string]any)["$ref"].(string), "#/channels/")
			cmsgs, ok := channels[ch].(map[string]any)["messages"].(map[string]any)
			if !ok {
				t.Errorf("operation %s: no channel %s", name, ch)
				return
			}
			for _, m := range msgs.([]any) {
				ref := m.(map[string]any)["$ref"].(string)
				msg, found := strings.CutPrefix(ref, "#/channels/"+ch+"/messages/")
				if _, in := cmsgs[msg]; !found || !in {
					t.Errorf("operation %s: %s is not a message of channel %s", name, ref, ch)
				}
			}
		}
		check(op["channel"], op["messages"])
		if r, ok := op["reply"].(map[string]any); ok {
			check(r["channel"], r["messages"])
		}
	}
}

// TestAsyncAPICheckFails: the frame check of the socket helper refuses
// frames that drift from asyncapi.yaml, so it can fail.
func TestAsyncAPICheckFails(t *testing.T) {
	t.Parallel()
	const thinking = `{"type":"agent_thinking","from":"agt_0123456789abcdef01234567","at":"2026-11-30T08:00:00.000Z"}`
	for _, tc := range []struct {
		channel, frame string
		ok             bool
	}{
		{"negotiation", thinking, true},
		{"observe", thinking, true},
		{"lobby", thinking, false}, // not a frame of the lobby
		{"negotiation", `{"type":"agent_thinking","from":"agt_0123456789abcdef01234567"}`, false},
		{"negotiation", `{"type":"agent_thinking","from":"agt_0123456789abcdef01234567","at":"2026-11-30T08:00:00Z"}`, false},
		{"negotiation", `{"type":"agent_thinking","from":"agt_0123456789abcdef01234567","at":"2026-11-30T08:00:00.000Z","extra":1}`, false},
		{"observe", `{"type":"message_ack","id":"neg_0123456789abcdef01234567.m1","seq":1,"at":"2026-11-30T08:00:00.000Z","frame_type":"message","turn":"agt_0123456789abcdef01234567","turn_deadline_at":null,"turn_paused":true}`, false},
		{"negotiation", `{"type":"message_ack","id":"neg_0123456789abcdef01234567.m1","seq":1,"at":"2026-11-30T08:00:00.000Z","frame_type":"message","turn":"agt_0123456789abcdef01234567","turn_deadline_at":null,"turn_paused":true}`, true},
		{"lobby", `{"type":"error","code":"invalid_json","message":"x"}`, true},
		{"lobby", `{"type":"error","code":"nonsense","message":"x"}`, false},
		{"lobby", `{"type":"nonsense"}`, false},
		{"lobby", `not json`, false},
	} {
		err := checkFrame(tc.channel, []byte(tc.frame))
		if (err == nil) != tc.ok {
			t.Errorf("%s %s: %v, want ok=%v", tc.channel, tc.frame, err, tc.ok)
		}
	}
}
