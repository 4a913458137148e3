package main

import (
	"slices"
	"strings"
	"testing"
)

func TestGodebugEnv(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in      []string
		want    []string
		changed bool
	}{
		{[]string{"HOME=/root"}, []string{"HOME=/root", "GODEBUG=gcshrinkstackoff=1"}, true},
		{[]string{"GODEBUG=madvdontneed=1", "HOME=/root"}, []string{"HOME=/root", "GODEBUG=madvdontneed=1,gcshrinkstackoff=1"}, true},
		{[]string{"GODEBUG="}, []string{"GODEBUG=gcshrinkstackoff=1"}, true},
		// Named already, either way: left as it is (no exec, no loop).
		{[]string{"GODEBUG=gcshrinkstackoff=0"}, []string{"GODEBUG=gcshrinkstackoff=0"}, false},
		{[]string{"GODEBUG=x=1, gcshrinkstackoff=1"}, []string{"GODEBUG=x=1, gcshrinkstackoff=1"}, false},
	} {
		got, changed := godebugEnv(c.in)
		if changed != c.changed || !slices.Equal(got, c.want) {
			t.Errorf("godebugEnv(%q) = %q, %v; want %q, %v", c.in, got, changed, c.want, c.changed)
		}
		if changed {
			if _, again := godebugEnv(got); again {
				t.Errorf("godebugEnv(%q) would start the process again", got)
			}
		}
	}
}

func TestServes(t *testing.T) {
	t.Parallel()
	root := rootCmd()
	for args, want := range map[string]bool{
		"":                      true,
		"serve":                 true,
		"serve --addr :0":       true,
		"--addr :0":             true,
		"bench --sweep 10000":   true,
		"bench-relay --addr :0": true,
		"keygen":                false,
		"serve --help":          false,
		"-h":                    false,
		"mcp":                   false,
		"no-such-command --x 1": false,
	} {
		if got := serves(root, strings.Fields(args)); got != want {
			t.Errorf("serves(%q) = %v, want %v", args, got, want)
		}
	}
}
