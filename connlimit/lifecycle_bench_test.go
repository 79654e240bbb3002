package connlimit

import (
	"net"
	"net/http"
	"testing"
)

// nopConn is a connection whose reads and writes succeed at once.
type nopConn struct{ fakeConn }

func (nopConn) Read(b []byte) (int, error)  { return len(b), nil }
func (nopConn) Write(b []byte) (int, error) { return len(b), nil }

// BenchmarkRequestLifecycle is what the Limiter adds to one keep-alive
// request without a body: the first read after idling, the request's
// arrival, a write, idle again; among 1,000 other connections.
func BenchmarkRequestLifecycle(b *testing.B) {
	l := New(Config{Max: 100000, MaxPerIP: 100000})
	var cs []*conn
	for i := range 1001 {
		c, _, _ := l.admit(nopConn{fakeConn{remote: &net.TCPAddr{IP: net.IPv4(10, 0, byte(i>>8), byte(i))}}})
		l.arrive(c)
		l.connState(c, http.StateIdle)
		cs = append(cs, c)
	}
	c := cs[0]
	buf := make([]byte, 512)
	b.ReportAllocs()
	for b.Loop() {
		c.Read(buf)
		l.connState(c, http.StateActive)
		l.arrive(c)
		c.Write(buf)
		l.connState(c, http.StateIdle)
	}
}
