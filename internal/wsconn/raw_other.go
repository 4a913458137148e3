//go:build !unix

package wsconn

import "net"

// rawWriter: no inline writes off unix (newRawWriter is always nil).
type rawWriter struct{}

func newRawWriter(net.Conn) *rawWriter { return nil }

func (*rawWriter) writeOnce([]byte) int { return 0 }
