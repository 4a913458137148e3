package main

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// readmeCommands returns every command line README.md gives: the code spans
// and code-block lines that run `venue` (or `go run ./cmd/venue`), cut at a
// shell operator or comment.
func readmeCommands(readme string) []string {
	var snippets []string
	inBlock := false
	for _, line := range strings.Split(readme, "\n") {
		switch {
		case strings.HasPrefix(strings.TrimSpace(line), "```"):
			inBlock = !inBlock
			continue
		case inBlock || strings.HasPrefix(line, "    "):
			snippets = append(snippets, line)
			continue
		}
		for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(line, -1) {
			snippets = append(snippets, m[1])
		}
	}
	var cmds []string
	for _, s := range snippets {
		fields := strings.Fields(s)
		for i, f := range fields {
			if f != "venue" && f != "./cmd/venue" {
				continue
			}
			if f == "venue" && i > 0 && (fields[i-1] == "-o" || fields[i-1] == "build") {
				continue // go build -o venue: a file name
			}
			var args []string
			for _, a := range fields[i+1:] {
				if a == "|" || a == "&" || a == "&&" || a == ";" || a == ">" || strings.HasPrefix(a, "#") {
					break
				}
				args = append(args, a)
			}
			cmds = append(cmds, strings.Join(append([]string{"venue"}, args...), " "))
			break
		}
	}
	return cmds
}

// checkCommand finds the command a README line names in the cobra tree and
// checks that every --flag it gives exists there.
func checkCommand(root *cobra.Command, line string) []string {
	args := strings.Fields(line)[1:]
	var words, flags []string
	for _, a := range args {
		a = strings.Trim(a, "[]()…,.")
		switch {
		case strings.HasPrefix(a, "--"):
			name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
			flags = append(flags, name)
		case regexp.MustCompile(`^[a-z][a-z-]*$`).MatchString(a):
			words = append(words, a)
		}
	}
	cmd := root
	for len(words) > 0 && cmd.HasSubCommands() {
		next, _, err := cmd.Find(words[:1])
		if err != nil || next == cmd {
			return []string{"no command " + strings.Join(append([]string{cmd.CommandPath()}, words[0]), " ")}
		}
		cmd, words = next, words[1:]
	}
	var bad []string
	for _, f := range flags {
		if f == "help" {
			continue
		}
		if cmd.Flags().Lookup(f) == nil && cmd.InheritedFlags().Lookup(f) == nil {
			bad = append(bad, cmd.CommandPath()+" has no flag --"+f)
		}
	}
	return bad
}

// TestReadmeCommands: every `venue ...` command line in README.md names a
// command and flags that exist (`venue COMMAND --help` would list them).
func TestReadmeCommands(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	cmds := readmeCommands(string(raw))
	if len(cmds) < 10 {
		t.Fatalf("found only %d command lines in README.md: %q", len(cmds), cmds)
	}
	seen := map[string]bool{}
	for _, line := range cmds {
		for _, problem := range checkCommand(rootCmd(), line) {
			t.Errorf("README.md: %q: %s", line, problem)
		}
		if f := strings.Fields(line); len(f) > 1 {
			seen[f[1]] = true
		}
	}
	// Every command of the binary is in the README.
	for _, c := range rootCmd().Commands() {
		if !c.Hidden && c.Name() != "help" && c.Name() != "completion" && !seen[c.Name()] {
			t.Errorf("README.md never shows `venue %s`", c.Name())
		}
	}
}

// TestReadmeCheckerCatches: the checker itself refuses what does not exist.
func TestReadmeCheckerCatches(t *testing.T) {
	t.Parallel()
	for line, want := range map[string]string{
		"venue frobnicate --x":           "no command venue frobnicate",
		"venue connect --negotiaton ID":  "venue connect has no flag --negotiaton",
		"venue mcp --url URL --http A":   "",
		"venue serve --log-format json":  "",
		"venue --addr 127.0.0.1:8081":    "",
		"venue decide --key F approve":   "",
		"venue grant --key F --nonsense": "venue grant has no flag --nonsense",
	} {
		got := strings.Join(checkCommand(rootCmd(), line), "; ")
		if got != want {
			t.Errorf("%q: %q, want %q", line, got, want)
		}
	}
	got := readmeCommands("run `venue connect --key K` or:\n\n    go run ./cmd/venue demo --url U | tee x\n    go build -o venue ./cmd/venue\n")
	if strings.Join(got, "; ") != "venue connect --key K; venue demo --url U; venue" {
		t.Fatalf("readmeCommands: %q", got)
	}
}
