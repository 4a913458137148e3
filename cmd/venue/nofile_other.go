//go:build !unix

package main

import "log/slog"

// raiseOpenFiles: no open-files limit to raise on this platform.
func raiseOpenFiles(*slog.Logger, uint64) (limit, sockets uint64) { return 0, 0 }
