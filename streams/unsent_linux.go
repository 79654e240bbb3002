package streams

import (
	"net"

	"golang.org/x/sys/unix"
)

// unsentBytes is how many bytes written to c (or the TCP connection it wraps)
// its peer has not yet acknowledged (SIOCOUTQ), and whether the kernel could say.
func unsentBytes(c net.Conn) (int, bool) {
	for range 8 {
		w, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			break
		}
		c = w.NetConn()
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
