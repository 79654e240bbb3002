package api

import (
	"crypto/tls"
	"net"

	"golang.org/x/sys/unix"
)

// unsentBytes is how many bytes written to c its peer has not yet
// acknowledged (SIOCOUTQ), and whether the kernel could say.
func unsentBytes(c net.Conn) (int, bool) {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	tcp, ok := c.(*net.TCPConn)
	if !ok {
		return 0, false
	}
	raw, err := tcp.SyscallConn()
	if err != nil {
		return 0, false
	}
	n, ierr := 0, error(nil)
	if err := raw.Control(func(fd uintptr) { n, ierr = unix.IoctlGetInt(int(fd), unix.SIOCOUTQ) }); err != nil || ierr != nil {
		return 0, false
	}
	return n, true
}
