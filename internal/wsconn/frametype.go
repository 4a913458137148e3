package wsconn

import (
	"bytes"
	"strings"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

var typeKey = []byte(`"type":"`)

// outTypeNames are the frame types the venue builds for sockets, and
// "other" last: the only label values venue_frames_out_total takes (a
// "type" inside an agent's terms must never become a series; SECURITY.md
// "What an outsider can grow"). outTypes maps each to its index.
var (
	outTypeNames = strings.Fields(`message_ack scope_block error negotiation_message negotiation_started
		negotiation_ended proposal_expired proposal_withdrawn agent_thinking escalation_resolved
		offer_submitted negotiation_created negotiation_requested negotiation_accepted negotiation_declined
		brand_blocked bouncers profile other`)
	outTypes = map[string]int{}
	otherOut = len(outTypeNames) - 1
)

func init() {
	for i, t := range outTypeNames[:otherOut] {
		outTypes[t] = i
	}
}

// frameType finds a frame's type for the metrics without decoding it: one
// of outTypes, "other" for anything else (never a value an agent chose).
func frameType(b []byte) string { return outTypeNames[frameTypeIndex(b)] }

// frameTypeIndex is frameType's index in outTypeNames; it allocates
// nothing.
func frameTypeIndex(b []byte) int {
	i := bytes.Index(b, typeKey)
	if i < 0 {
		return otherOut
	}
	rest := b[i+len(typeKey):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 || j > 32 {
		return otherOut
	}
	if k, ok := outTypes[string(rest[:j])]; ok {
		return k
	}
	return otherOut
}

// outCounters holds FramesOut's counter of each label once it has been
// looked up: counting a frame costs no label hashing or lock.
type outCounters [32]atomic.Pointer[prometheus.Counter]

// countOut counts frame b in m.FramesOut.
func (m *Metrics) countOut(b []byte) {
	i := frameTypeIndex(b)
	if c := m.out[i].Load(); c != nil {
		(*c).Inc()
		return
	}
	c := m.FramesOut.WithLabelValues(outTypeNames[i])
	m.out[i].Store(&c)
	c.Inc()
}
