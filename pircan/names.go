package pircan

import (
	"strings"

	"github.com/mtibben/confusables"
	"golang.org/x/text/cases"

	"github.com/venuehq/venue/pircan/line"
	"github.com/venuehq/venue/store"
)

// CodeNameTaken: HELLO's name is a case- or confusable-fold duplicate of
// another agent's (PIRCAN.md "HELLO").
const CodeNameTaken = "name_taken"

// NameKey is the key under which two agent names count as one: the UTS
// #39 confusable skeleton of the name's Unicode case fold (itself taken of
// the skeleton, so that a capital I and a small l, or Cyrillic А and Latin
// A, meet). "Ann", "ANN", "Аnn" (Cyrillic А) and "Αnn" (Greek Α) have one
// key; "rn" and "m" too.
func NameKey(name string) string {
	s := confusables.Skeleton(strings.TrimSpace(name))
	return confusables.Skeleton(cases.Fold().String(s))
}

// nameTaken reports, with a name_taken error, whether another agent holds
// name's key: an IRC agent whose name the bridge recorded (State.ClaimName),
// or any agent (venue agents included) whose name FIND's text search finds
// and folds to the same key.
func (c *call) nameTaken(name string) bool {
	key := NameKey(name)
	holder, err := c.h.st.NameHolder(c.ctx, key)
	if err != nil {
		c.internal(err)
		return true
	}
	if holder == "" {
		as, _, err := c.h.dir.Find(c.ctx, store.AgentQuery{Q: name, Limit: 20})
		if err != nil {
			c.internal(err)
			return true
		}
		for _, a := range as {
			if NameKey(a.Name) == key {
				holder = a.ID
				break
			}
		}
	}
	if holder == "" {
		return false
	}
	c.failErr(&line.Error{Code: CodeNameTaken, Verb: c.req.Verb, Re: c.req.ID,
		Message: "Another agent (" + holder + ") has a name that reads the same; choose another name."})
	return true
}

// lookalikes maps the id of each of agents whose name reads like another
// agent's to that agent's id: the holder of its name key (State; the
// holder itself is never flagged), or, when none holds it, an agent
// before it in agents with the same key. FIND shows it as
// "lookalike_id" (PIRCAN.md "FIND"), so a lookalike registered before the
// check, or over REST, is flagged where it is seen.
func (c *call) lookalikes(agents []store.Agent) (map[string]string, error) {
	out := map[string]string{}
	first := map[string]string{}
	for _, a := range agents {
		key := NameKey(a.Name)
		holder, err := c.h.st.NameHolder(c.ctx, key)
		if err != nil {
			return nil, err
		}
		if holder == "" { // no IRC agent registered the name: the first listed has it
			holder = first[key]
		}
		if holder != "" && holder != a.ID {
			out[a.ID] = holder
		}
		if first[key] == "" {
			first[key] = a.ID
		}
	}
	return out, nil
}
