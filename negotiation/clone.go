package negotiation

import (
	"encoding/json"
	"maps"
	"slices"
)

// Clone returns a copy of s that shares nothing mutable with it, so a store
// can hand out states while it keeps its own.
func (s *State) Clone() State {
	c := *s
	if s.Standing != nil {
		p := *s.Standing
		c.Standing = &p
	}
	c.Escalations = slices.Clone(s.Escalations)
	if s.Acks != nil {
		c.Acks = make(map[string]json.RawMessage, len(s.Acks))
		maps.Copy(c.Acks, s.Acks)
	}
	c.AckOrder = slices.Clone(s.AckOrder)
	return c
}
