package handshake

import (
	"slices"
	"strings"
	"testing"
)

// A code that normalises is 8 letters of the alphabet as XXXX-XXXX, and
// normalising it again changes nothing.
func FuzzNormalizeCode(f *testing.F) {
	for _, s := range []string{"BCDF-GHJK", "bcdfghjk", " bcdf ghjk ", "AEIO-UAEI", "", "BCDF-GHJK-L", "ß"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out, ok := normalizeCode(in)
		if !ok {
			return
		}
		if len(out) != 9 || out[4] != '-' {
			t.Fatalf("%q -> %q", in, out)
		}
		for i, r := range out {
			if i != 4 && !strings.ContainsRune(codeAlphabet, r) {
				t.Fatalf("%q -> %q has %q", in, out, r)
			}
		}
		if again, ok := normalizeCode(out); !ok || again != out {
			t.Fatalf("%q -> %q -> %q", in, out, again)
		}
	})
}

// Scopes that pass are sorted, distinct and valid; an accept may grant
// them or any part of them, never a scope outside them.
func FuzzScopes(f *testing.F) {
	f.Add("message,task:assess,resource:read", "message")
	f.Add("message,message", "")
	f.Add("task:a b", "task:a b")
	f.Add("resource:read", "message")
	f.Fuzz(func(t *testing.T, requested, granted string) {
		req, err := CheckScopes(strings.Split(requested, ","))
		if err != nil {
			return
		}
		if !slices.IsSorted(req) || len(slices.Compact(slices.Clone(req))) != len(req) {
			t.Fatalf("%q -> %v", requested, req)
		}
		if got, err := Narrow(req, req); err != nil || !slices.Equal(got, req) {
			t.Fatalf("Narrow(req, req) = %v, %v", got, err)
		}
		g, err := Narrow(req, strings.Split(granted, ","))
		if err != nil {
			return
		}
		for _, sc := range g {
			if !slices.Contains(req, sc) {
				t.Fatalf("granted %q outside %v", sc, req)
			}
		}
	})
}
