//go:build !linux

package streams

import "net"

// unsentBytes cannot tell, off Linux: a stalled stream then ends only
// when a write fails its deadline.
func unsentBytes(net.Conn) (int, bool) { return 0, false }
