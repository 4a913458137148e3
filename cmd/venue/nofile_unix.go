//go:build unix

package main

import (
	"log/slog"
	"syscall"
)

// raiseOpenFiles lifts the soft open-files limit to the hard one (Go does
// this itself at start on Linux; done here too so every Unix behaves the
// same and the figure is logged) and returns the limit now in force and how
// many sockets that leaves for agents once reserve descriptors (logs,
// database and Redis connections, listeners) are set aside.
func raiseOpenFiles(log *slog.Logger, reserve uint64) (limit, sockets uint64) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		log.Warn("cannot read the open-files limit", "err", err)
		return 0, 0
	}
	if rl.Cur < rl.Max {
		want := rl
		want.Cur = rl.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err != nil {
			log.Warn("cannot raise the open-files limit", "from", rl.Cur, "to", rl.Max, "err", err)
		} else {
			rl = want
		}
	}
	limit = uint64(rl.Cur)
	if limit > reserve {
		sockets = limit - reserve
	}
	return limit, sockets
}
