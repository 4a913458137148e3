package main

import (
	"os"
	"strings"

	"github.com/spf13/cobra"
)

// serveGODEBUG is the runtime setting `venue serve` runs with unless
// GODEBUG names it already (GODEBUG=gcshrinkstackoff=0 keeps the runtime's
// default). With it the collector does not move goroutines onto smaller
// stacks. A socket's goroutine waits for its next frame on a shallow stack
// and handles the frame on a deep one, so every GC cycle halved some two
// thousand stacks in its mark phase (the goroutines that allocated paid
// for it as assists) and every socket grew its stack back on its next
// frame: about two thirds of the collector's CPU time and the latency tail
// of the cycle, for no memory saved, since the stacks regrow
// (BENCHMARKS.md "Issue 21, seventh pass").
const serveGODEBUG = "gcshrinkstackoff=1"

// godebugEnv returns environ with serveGODEBUG added to GODEBUG, and
// whether it changed anything (false when GODEBUG names gcshrinkstackoff).
func godebugEnv(environ []string) ([]string, bool) {
	out := make([]string, 0, len(environ)+1)
	cur := ""
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, "GODEBUG="); ok {
			cur = v
			continue
		}
		out = append(out, kv)
	}
	for _, s := range strings.Split(cur, ",") {
		if strings.HasPrefix(strings.TrimSpace(s), "gcshrinkstackoff=") {
			return environ, false
		}
	}
	v := serveGODEBUG
	if cur != "" {
		v = cur + "," + v
	}
	return append(out, "GODEBUG="+v), true
}

// serves says whether args (without the program name) run the server:
// `venue serve ...`, or no subcommand at all. `venue bench` and its bare
// relay run with the setting too: the load generator's thousands of
// reader goroutines are the server's case again, and the relay the venue
// is measured against runs with the venue's runtime settings, so that the
// ratio compares the work, not the settings.
func serves(root *cobra.Command, args []string) bool {
	for _, a := range args {
		if a == "-h" || a == "--help" {
			return false // prints help and exits: no reason to start again
		}
	}
	cmd, _, err := root.Find(args)
	if err != nil {
		return false
	}
	switch cmd.Name() {
	case "serve", "bench", "bench-relay":
		return true
	}
	return cmd == root
}

// withServeGODEBUG re-executes the binary with serveGODEBUG when args run
// the server and GODEBUG does not name the setting: the runtime reads it
// only when a process starts. It returns when there is nothing to do or
// the exec failed (the server then runs with the runtime's default).
func withServeGODEBUG(root *cobra.Command) {
	if !serves(root, os.Args[1:]) {
		return
	}
	env, changed := godebugEnv(os.Environ())
	if !changed {
		return
	}
	reexec(env)
}
