//go:build !unix

package main

// reexec does nothing where exec cannot replace the process: the server
// runs with the runtime's defaults (set GODEBUG yourself).
func reexec([]string) {}
