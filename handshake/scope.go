package handshake

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// MaxSkillChars bounds the <skill> of task:<skill>; a skill is letters,
// digits, '-', '_' and '.'.
const MaxSkillChars = 64

// CheckScopes checks a list of scopes (PIRCAN.md "Scopes"): 1-20 scopes,
// each message, resource:read or task:<skill>, none twice. It returns them
// sorted. Errors: invalid_scope naming the bad one.
func CheckScopes(scopes []string) ([]string, error) {
	if len(scopes) == 0 {
		return nil, errorf(CodeInvalidScope, "scopes must name at least one of message, task:<skill>, resource:read")
	}
	if len(scopes) > 20 {
		return nil, errorf(CodeInvalidScope, "at most 20 scopes")
	}
	out := slices.Clone(scopes)
	slices.Sort(out)
	for i, sc := range out {
		if !validScope(sc) {
			return nil, errorf(CodeInvalidScope, "%q is not a scope (message, task:<skill>, resource:read)", truncate(sc, 70))
		}
		if i > 0 && out[i-1] == sc {
			return nil, errorf(CodeInvalidScope, "scope %q is named twice", sc)
		}
	}
	return out, nil
}

func validScope(sc string) bool {
	switch sc {
	case ScopeMessage, ScopeResourceRead:
		return true
	}
	skill, ok := strings.CutPrefix(sc, ScopeTaskPrefix)
	return ok && validSkill(skill)
}

func validSkill(skill string) bool {
	if skill == "" || len(skill) > MaxSkillChars {
		return false
	}
	for _, r := range skill {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}

// Narrow checks that granted is a non-empty subset of requested (an
// accept may grant fewer scopes, never more) and returns it sorted; nil
// granted grants what was requested. Errors: invalid_scope.
func Narrow(requested, granted []string) ([]string, error) {
	if granted == nil {
		return slices.Clone(requested), nil
	}
	g, err := CheckScopes(granted)
	if err != nil {
		return nil, err
	}
	for _, sc := range g {
		if !slices.Contains(requested, sc) {
			return nil, errorf(CodeInvalidScope, "scope %q was not requested: an accept grants the requested scopes or fewer", sc)
		}
	}
	return g, nil
}

// autoAccepts reports whether the auto-accept policy accepts a request
// for scopes at once: only a request for exactly ["message"]; any other
// scope needs an explicit accept.
func autoAccepts(scopes []string) bool {
	return len(scopes) == 1 && scopes[0] == ScopeMessage
}

// holds reports whether the active agreements between from and to already
// grant from every scope in scopes: message in either direction, task and
// resource scopes only where from is the requester.
func holds(active []Agreement, from string, scopes []string) bool {
	for _, sc := range scopes {
		ok := false
		for _, a := range active {
			if slices.Contains(a.Scopes, sc) && (sc == ScopeMessage || a.Requester == from) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// truncate cuts s to at most n runes.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n])
}
