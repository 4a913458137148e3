package mcpagent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"

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

// schemaOptions infer a raw JSON member (terms, an offer, claims) as an
// object: every one the venue sends is a JSON object.
var schemaOptions = &jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[json.RawMessage](): {Type: "object"},
}}

// schemaFor infers the schema of T (descriptions from `jsonschema` tags,
// required from fields without omitempty) and makes it portable: no type
// arrays anywhere. A field Go could leave null (a pointer, a slice, a map)
// is typed as its value and made optional, and [dropNulls] takes the nulls
// out of every answer, so "optional" is what a client sees instead of
// "nullable". It panics on a type it cannot describe: a bug found at start.
func schemaFor[T any]() *jsonschema.Schema {
	s, err := jsonschema.For[T](schemaOptions)
	if err != nil {
		panic(fmt.Sprintf("mcpagent: schema of %T: %v", *new(T), err))
	}
	portable(s)
	return s
}

// portable removes "null" from every type array of s, and a property that
// was nullable from its object's required list.
func portable(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	for name, p := range s.Properties {
		if slices.Contains(p.Types, "null") {
			s.Required = slices.DeleteFunc(s.Required, func(r string) bool { return r == name })
		}
		portable(p)
	}
	if len(s.Types) > 0 {
		types := slices.DeleteFunc(slices.Clone(s.Types), func(t string) bool { return t == "null" })
		s.Types = nil
		if len(types) == 1 {
			s.Type = types[0]
		} else {
			s.Types = types
		}
	}
	portable(s.Items)
	portable(s.AdditionalProperties)
	for _, d := range s.Defs {
		portable(d)
	}
}

// inputSchema is schemaFor[In] with the limits added by property name. It
// panics on a limit for a property In does not have: a typo in a tool's
// declaration is a bug found at start.
func inputSchema[In any](limits map[string]limit) *jsonschema.Schema {
	s := schemaFor[In]()
	for name, l := range limits {
		p, ok := s.Properties[name]
		if !ok {
			panic(fmt.Sprintf("mcpagent: schema of %T has no property %q", *new(In), name))
		}
		p.Minimum, p.Maximum, p.MinLength, p.MaxLength = l.min, l.max, l.minLen, l.maxLen
	}
	return s
}

// dropNulls re-encodes the JSON value b without its null object members,
// recursively (arrays keep their elements): an answer's optional member is
// absent, never null. Numbers keep their text.
func dropNulls(b []byte) ([]byte, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return json.Marshal(prune(v))
}

func prune(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, m := range x {
			if m == nil {
				delete(x, k)
				continue
			}
			x[k] = prune(m)
		}
	case []any:
		for i := range x {
			x[i] = prune(x[i])
		}
	}
	return v
}
