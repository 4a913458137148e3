package negotiation

import (
	"encoding/json"
	"unicode/utf8"

	"github.com/venuehq/venue/wire"
)

// Frame types a party sends (PROTOCOL.md "The eleven frames").
const (
	TypeMessage      = "message"
	TypeResearch     = "research"
	TypeThinking     = "thinking"
	TypeProposeTerms = "propose_terms"
	TypeCounterTerms = "counter_terms"
	TypeAccept       = "accept"
	TypeReject       = "reject"
	TypeWithdraw     = "withdraw"
	TypeEscalate     = "escalate"
	TypeWalk         = "walk"
	TypeClose        = "close"
)

// Frame types the venue sends (PROTOCOL.md "What the sender gets back",
// "What everyone else gets", "Private frames"; DELEGATION.md "scope_block").
const (
	TypeNegotiationStarted = "negotiation_started"
	TypeNegotiationMessage = "negotiation_message"
	TypeMessageAck         = "message_ack"
	TypeAgentThinking      = "agent_thinking"
	TypeProposalExpired    = "proposal_expired"
	TypeProposalWithdrawn  = "proposal_withdrawn"
	TypeScopeBlock         = "scope_block"
	TypeNegotiationEnded   = "negotiation_ended"
	TypeEscalationResolved = "escalation_resolved"
	TypeError              = "error"
)

// Limits of the envelope (PROTOCOL.md "The eleven frames").
const (
	MaxIDLen      = 64   // client `id`, characters
	MaxContentLen = 4000 // `content`, characters
	MinTTLSeconds = 10
	MaxTTLSeconds = 300
)

// Frame is a decoded party frame: the envelope of PROTOCOL.md "The eleven frames". Terms is
// parsed for the frames that carry them.
type Frame struct {
	Type       string
	ID         string // client reference, echoed as `re`
	Content    string
	HasContent bool
	Terms      *Terms
	TTLSeconds int // clamped to [10, 300]; 0 when absent
	OfferHash  string
	ProposalID string
}

// Binding reports whether the frame binds the sender's principal and so goes
// through the grant check (propose_terms, counter_terms, accept).
func (f Frame) Binding() bool {
	return f.Type == TypeProposeTerms || f.Type == TypeCounterTerms || f.Type == TypeAccept
}

// ClientID returns the client `id` of a frame that failed to decode, if its
// envelope had one, so the error can carry `re`.
func ClientID(data []byte) string {
	var env map[string]json.RawMessage // exact member names: "ID" is not "id"
	if json.Unmarshal(data, &env) == nil {
		var s string
		if raw, ok := env["id"]; ok && json.Unmarshal(raw, &s) == nil && utf8.RuneCountInString(s) <= MaxIDLen {
			return s
		}
	}
	return ""
}

// DecodeFrame parses one party frame (PROTOCOL.md "The eleven frames", "Limits and close codes"). Errors:
// CodeInvalidJSON (not JSON, not an object, duplicated key, too deep),
// CodeUnknownType, CodeInvalidArgument (a field missing, ill-typed or out of
// bounds: `amount_usd` as a string or with 3 decimals, `ttl_seconds` not a
// number, content over 4,000 characters). Unknown fields are ignored.
func DecodeFrame(data []byte) (Frame, *wire.Error) {
	m, werr := wire.DecodeObject(data)
	if werr != nil {
		return Frame{}, werr
	}
	r := wire.NewFields(m)
	f := Frame{Type: r.String("type", true), ID: r.String("id", false)}
	if r.Err != nil {
		return Frame{}, r.Err
	}
	if utf8.RuneCountInString(f.ID) > MaxIDLen {
		return Frame{}, wire.Errorf(wire.CodeInvalidArgument, "id is longer than %d characters", MaxIDLen)
	}
	switch f.Type {
	case TypeMessage, TypeResearch, TypeThinking, TypeProposeTerms, TypeCounterTerms,
		TypeAccept, TypeReject, TypeWithdraw, TypeEscalate, TypeWalk, TypeClose:
	default:
		return Frame{}, wire.Errorf(wire.CodeUnknownType, "unknown frame type %q", f.Type)
	}
	if r.Has("content") {
		f.Content, f.HasContent = r.String("content", false), true
		if r.Err != nil {
			return Frame{}, r.Err
		}
		if utf8.RuneCountInString(f.Content) > MaxContentLen {
			return Frame{}, wire.Errorf(wire.CodeInvalidArgument, "content is longer than %d characters", MaxContentLen)
		}
	}
	f.OfferHash = r.String("offer_hash", false)
	f.ProposalID = r.String("proposal_id", false)
	if r.Err != nil {
		return Frame{}, r.Err
	}
	if raw, ok := m["ttl_seconds"]; ok && string(raw) != "null" {
		var n float64
		if json.Unmarshal(raw, &n) != nil {
			return Frame{}, wire.Errorf(wire.CodeInvalidArgument, "ttl_seconds must be a number")
		}
		f.TTLSeconds = clampTTL(n)
	}
	if raw, ok := m["terms"]; ok && string(raw) != "null" {
		t, err := ParseTerms(raw)
		if err != nil {
			return Frame{}, err
		}
		f.Terms = &t
	}
	switch f.Type {
	case TypeMessage, TypeResearch:
		if !f.HasContent || f.Content == "" {
			return Frame{}, wire.Errorf(wire.CodeInvalidArgument, "%s needs content", f.Type)
		}
	case TypeProposeTerms, TypeCounterTerms:
		if f.Terms == nil {
			return Frame{}, wire.Errorf(wire.CodeInvalidArgument, "%s needs terms", f.Type)
		}
	case TypeEscalate:
		if !f.HasContent || f.Content == "" {
			return Frame{}, wire.Errorf(wire.CodeInvalidArgument, "escalate needs content saying what authority is asked for")
		}
	}
	return f, nil
}

func clampTTL(n float64) int {
	switch {
	case n != n || n < MinTTLSeconds: // NaN cannot come from JSON, but be safe
		return MinTTLSeconds
	case n > MaxTTLSeconds:
		return MaxTTLSeconds
	default:
		return int(n)
	}
}
