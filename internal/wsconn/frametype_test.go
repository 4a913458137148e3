package wsconn

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// The frame type label of venue_frames_out_total comes from a fixed set:
// a "type" an agent put inside its terms never becomes a label value.
func TestFrameTypeLabelIsFromAFixedSet(t *testing.T) {
	for frame, want := range map[string]string{
		`{"type":"message_ack","seq":3}`: "message_ack",
		`{"frame_type":"propose_terms","terms":{"type":"agent-chosen-1234"},"type":"negotiation_message"}`: "other",
		`{"terms":{"type":"negotiation_ended"}}`:                                                           "negotiation_ended", // a known name at worst, never a new one
		`{"type":"` + "x\u00e9" + `"}`:                                                                     "other",
		`not json`:                                                                                         "other",
	} {
		got := frameType([]byte(frame))
		if got != want {
			t.Errorf("frameType(%s) = %q, want %q", frame, got, want)
		}
		if _, known := outTypes[got]; got != "other" && !known {
			t.Errorf("label %q is not from the fixed set", got)
		}
	}
	if n := testing.AllocsPerRun(100, func() { frameType([]byte(`{"seq":3,"type":"negotiation_message"}`)) }); n != 0 {
		t.Errorf("frameType allocates %v times", n)
	}
	if len(outTypeNames) > len(outCounters{}) {
		t.Fatalf("%d label values, room for %d counters", len(outTypeNames), len(outCounters{}))
	}
}

// TestCountOut: a frame counts under its type's series, looked up once.
func TestCountOut(t *testing.T) {
	m := NewMetrics(nil)
	for range 3 {
		m.countOut([]byte(`{"seq":3,"type":"message_ack"}`))
	}
	m.countOut([]byte(`{"type":"agent-chosen"}`))
	if got := testutil.ToFloat64(m.FramesOut.WithLabelValues("message_ack")); got != 3 {
		t.Errorf("message_ack counted %v, want 3", got)
	}
	if got := testutil.ToFloat64(m.FramesOut.WithLabelValues("other")); got != 1 {
		t.Errorf("other counted %v, want 1", got)
	}
	if n := testing.AllocsPerRun(100, func() { m.countOut([]byte(`{"seq":3,"type":"message_ack"}`)) }); n != 0 {
		t.Errorf("countOut allocates %v times", n)
	}
}
