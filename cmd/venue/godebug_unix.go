//go:build unix

package main

import (
	"os"
	"syscall"
)

// reexec replaces the process with a fresh start of its own binary, same
// arguments, environment env (same pid: a supervisor sees no change). It
// returns only if that failed.
func reexec(env []string) {
	exe, err := os.Executable()
	if err != nil {
		return
	}
	_ = syscall.Exec(exe, os.Args, env)
}
