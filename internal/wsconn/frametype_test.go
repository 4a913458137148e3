package wsconn

import "testing"

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
		if got := frameType([]byte(frame)); got != want {
			t.Errorf("frameType(%s) = %q, want %q", frame, got, want)
		}
		if got := frameType([]byte(frame)); got != "other" && !outTypes[got] {
			t.Errorf("label %q is not from the fixed set", got)
		}
	}
}
