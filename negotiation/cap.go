package negotiation

import "github.com/venuehq/venue/wire"

// MaxTranscriptFrames bounds a negotiation's transcript (PROTOCOL.md
// "Limits and close codes"): once it holds this many entries, only frames
// that end the negotiation (accept, walk, close) still land, so a pair of
// chatty or hostile agents cannot grow one transcript (and every replay and
// receipt check of it) without bound within the 8-minute deadline.
const MaxTranscriptFrames = 2000

// checkTranscriptCap refuses f when the transcript is full and f would not
// end the negotiation.
func (s *State) checkTranscriptCap(f Frame) *wire.Error {
	if s.LastSeq < MaxTranscriptFrames {
		return nil
	}
	switch f.Type {
	case TypeAccept, TypeWalk, TypeClose:
		return nil
	}
	return wire.Errorf(wire.CodeInvalidState, "the transcript is full (%d frames): only accept, walk or close can land", MaxTranscriptFrames)
}
