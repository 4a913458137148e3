package negotiation

import (
	"slices"
)

// Clone returns a copy of s that shares nothing mutable with it, so a store
// can hand out states while it keeps its own. Acks and AckOrder are shared:
// no rule changes them in place (rememberAck replaces both), so a clone
// costs the struct, not the AckWindow acks, on every step.
func (s *State) Clone() State {
	c := *s
	if s.Standing != nil {
		p := *s.Standing
		c.Standing = &p
	}
	c.Escalations = slices.Clone(s.Escalations)
	return c
}
