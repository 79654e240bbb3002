package connlimit

import (
	"crypto/tls"
	"net"
	"net/netip"
	"testing"
)

// fakeConn is a connection with a given peer address.
type fakeConn struct {
	net.Conn
	remote net.Addr
}

func (c fakeConn) RemoteAddr() net.Addr { return c.remote }

// An address counts as itself, an IPv4 one mapped into IPv6 as the IPv4
// one, an IPv6 one by its /64; a peer without an IP is held to Max only.
func TestPeerAddr(t *testing.T) {
	for _, tc := range []struct {
		remote    net.Addr
		addr, key string // "" is no address
	}{
		{&net.TCPAddr{IP: net.ParseIP("192.0.2.7"), Port: 4000}, "192.0.2.7", "192.0.2.7"},
		{&net.TCPAddr{IP: net.ParseIP("::ffff:192.0.2.7"), Port: 4000}, "192.0.2.7", "192.0.2.7"},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8:1:2:aaaa:bbbb:cccc:dddd"), Port: 4000, Zone: "eth0"}, "2001:db8:1:2:aaaa:bbbb:cccc:dddd", "2001:db8:1:2::"},
		{&net.UnixAddr{Name: "/run/brain.sock", Net: "unix"}, "", ""},
		{nil, "", ""},
	} {
		addr, key := peerAddr(fakeConn{remote: tc.remote})
		if addr.String() != orInvalid(tc.addr) || key.String() != orInvalid(tc.key) {
			t.Errorf("peerAddr(%v) = %v, %v; want %s, %s", tc.remote, addr, key, orInvalid(tc.addr), orInvalid(tc.key))
		}
	}
}

func orInvalid(s string) string {
	if s == "" {
		return netip.Addr{}.String()
	}
	return s
}

// ConnState finds the Limiter's connection under a *tls.Conn, as an
// HTTPS server passes it, and ignores connections that are not its own.
func TestConnStateFindsItsConnection(t *testing.T) {
	l, other := New(Config{Max: 1, MaxPerIP: 1}), New(Config{Max: 1, MaxPerIP: 1})
	c := &conn{Conn: fakeConn{}, l: l}
	if got := l.own(tls.Server(c, &tls.Config{})); got != c {
		t.Errorf("own(a *tls.Conn over its connection) = %p, want %p", got, c)
	}
	if got := other.own(c); got != nil {
		t.Error("a Limiter took another's connection as its own")
	}
	if got := l.own(fakeConn{}); got != nil {
		t.Error("a Limiter took a connection it never accepted as its own")
	}
}
