package mcpagent

import (
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
)

// limit constrains one property of a tool's input schema.
type limit struct {
	min, max       *float64
	minLen, maxLen *int
}

func between(lo, hi float64) limit { return limit{min: &lo, max: &hi} }
func atLeast(lo float64) limit     { return limit{min: &lo} }
func chars(lo, hi int) limit       { return limit{minLen: &lo, maxLen: &hi} }

// inputSchema infers the schema of In (descriptions from `jsonschema` tags,
// required from fields without omitempty) and adds the limits by property
// name. It panics on a limit for a property In does not have: a typo in a
// tool's declaration is a bug found at start.
func inputSchema[In any](limits map[string]limit) *jsonschema.Schema {
	s, err := jsonschema.For[In](nil)
	if err != nil {
		panic(fmt.Sprintf("mcpagent: schema of %T: %v", *new(In), err))
	}
	for name, l := range limits {
		p, ok := s.Properties[name]
		if !ok {
			panic(fmt.Sprintf("mcpagent: schema of %T has no property %q", *new(In), name))
		}
		p.Minimum, p.Maximum, p.MinLength, p.MaxLength = l.min, l.max, l.minLen, l.maxLen
	}
	return s
}
