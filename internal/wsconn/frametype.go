package wsconn

import (
	"bytes"
	"strings"
)

var typeKey = []byte(`"type":"`)

// outTypes are the frame types the venue builds for sockets: the only
// label values venue_frames_out_total takes (a "type" inside an agent's
// terms must never become a series; SECURITY.md "What an outsider can
// grow").
var outTypes = map[string]bool{}

func init() {
	for _, t := range strings.Fields(`message_ack scope_block error negotiation_message negotiation_started
		negotiation_ended proposal_expired proposal_withdrawn agent_thinking escalation_resolved
		offer_submitted negotiation_created negotiation_requested negotiation_accepted negotiation_declined
		brand_blocked bouncers profile`) {
		outTypes[t] = true
	}
}

// frameType finds a frame's type for the metrics without decoding it: one
// of outTypes, "other" for anything else (never a value an agent chose).
func frameType(b []byte) string {
	i := bytes.Index(b, typeKey)
	if i < 0 {
		return "other"
	}
	rest := b[i+len(typeKey):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 || j > 32 || !outTypes[string(rest[:j])] {
		return "other"
	}
	return string(rest[:j])
}
