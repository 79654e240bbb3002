// Package connlimit bounds the connections a server holds open, in total
// and from any one client address, so that a crowd of connections that
// send nothing can use up neither the process's file descriptors nor its
// memory, and a new client is still served.
//
// A [Limiter] wraps the server's [net.Listener] and follows each
// connection through net/http's ConnState hook; both are needed:
//
//	lim := connlimit.New(connlimit.Config{Max: 10000, MaxPerIP: 256})
//	srv := &http.Server{Handler: h, ConnState: lim.ConnState}
//	err := srv.Serve(lim.Listener(ln))
//
// # Idle connections make room
//
// A connection is idle while no byte of a request has been read from it:
// accepted with nothing read yet (http.StateNew), or kept alive between
// requests (http.StateIdle) with nothing read since. HTTP lets a server
// close such a connection at any time (clients retry on a new one), so
// when a new connection would pass a cap, the limiter makes room by
// closing an idle one: the one idle the longest of the new connection's
// address when the address is at MaxPerIP, else the one idle the longest
// of all when Max connections are open. A connection that has read part
// of a request, is serving one, or was taken over (Hijack) is never
// closed for another: when every connection that could make room is busy,
// the new one is refused. It gets [Config.TooMany] (or TooManyFromIP),
// written at once if the kernel takes it, and is closed. Accept never
// returns an error for it, so net/http's Serve never backs off.
//
// A hijacked connection (a stream that took its connection over) counts
// until it is closed. A pipelined request that net/http has read ahead
// into its buffer is not seen until net/http reports it active; in that
// moment the connection counts as idle, as the client's retry covers.
//
// # Addresses
//
// An address is the TCP peer's IP; an IPv6 peer counts by its /64, the
// block one host is given. Peers in [Config.Exempt] (trusted reverse
// proxies, which carry many clients' requests) are held to Max only.
//
// # Cost
//
// Each event (accept, a state change, the first byte read after idling,
// close) is O(1) under one mutex: the idle connections are threaded
// through two intrusive lists in the order they became idle, one of all
// of them and one per address, so the one to close is at the front of a
// list. Reads of a busy connection cost one atomic load. A Limiter is safe
// for concurrent use, and one may count the connections of several
// listeners together.
package connlimit

import (
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Config is what a [Limiter] enforces.
type Config struct {
	// Max is how many connections may be open at once, at least 1.
	Max int
	// MaxPerIP is how many of them may come from one address (an IPv6
	// /64), at least 1.
	MaxPerIP int
	// Exempt are peers not held to MaxPerIP: trusted reverse proxies.
	Exempt []netip.Prefix
	// TooMany is written to a connection refused because Max connections
	// are open and none is idle; TooManyFromIP to one refused because its
	// address has MaxPerIP open, none idle. Each is a whole response (the
	// connection is closed after it); nil writes nothing.
	TooMany, TooManyFromIP []byte
	// Logger, when not nil, gets a warning at most once a minute while
	// connections are refused or idle ones closed to make room, with how
	// many since its last.
	Logger *slog.Logger
	// Now is the clock of those warnings; nil means time.Now.
	Now func() time.Time
}

// Stats are a [Limiter]'s counts.
type Stats struct {
	Open int // connections open now, hijacked ones included
	Idle int // of which idle
	// Connections refused since the Limiter was made: with Max open and
	// none idle, and with their address's MaxPerIP open and none idle.
	RefusedMax, RefusedPerIP uint64
	// IdleClosed is how many idle connections were closed to make room.
	IdleClosed uint64
}

// A Limiter bounds connections; see the package documentation. Make it
// with [New].
type Limiter struct {
	cfg Config
	now func() time.Time

	mu    sync.Mutex
	stats Stats
	idle  idleList // every idle connection, the one idle longest first
	peers map[netip.Addr]*peer
	// The last warning, and the counts it reported up to.
	warned   time.Time
	reported Stats
}

// A peer is an address with connections open.
type peer struct {
	open int
	idle idleList // its idle connections, the one idle longest first
}

// New returns a Limiter enforcing cfg. It panics when Max or MaxPerIP is
// less than 1.
func New(cfg Config) *Limiter {
	if cfg.Max < 1 || cfg.MaxPerIP < 1 {
		panic("connlimit: Max and MaxPerIP must be at least 1")
	}
	l := &Limiter{cfg: cfg, now: cfg.Now, idle: idleList{k: allLink}, peers: map[netip.Addr]*peer{}}
	if l.now == nil {
		l.now = time.Now
	}
	return l
}

// Stats returns the Limiter's counts now.
func (l *Limiter) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stats
}

// Listener returns ln whose Accept admits connections under l's caps, and
// refuses the ones it cannot make room for.
func (l *Limiter) Listener(ln net.Listener) net.Listener { return &listener{Listener: ln, l: l} }

// ConnState is the http.Server's ConnState hook that tells l which
// connections are idle. It takes the connections of l's listeners (or a
// *tls.Conn over one); it ignores others.
func (l *Limiter) ConnState(nc net.Conn, state http.ConnState) {
	c := l.own(nc)
	if c == nil {
		return
	}
	switch state {
	case http.StateIdle:
		l.mu.Lock()
		if c.state == active {
			l.setIdleLocked(c)
		}
		l.mu.Unlock()
	case http.StateActive:
		c.markActive()
	case http.StateHijacked:
		l.mu.Lock()
		if c.state == idle {
			l.unidleLocked(c)
		}
		if c.state == active {
			c.state = hijacked
		}
		l.mu.Unlock()
	case http.StateClosed:
		l.mu.Lock()
		l.releaseLocked(c)
		l.mu.Unlock()
	}
}

// own is nc as one of l's connections, looking through wrappers such as
// *tls.Conn that tell what they wrap (NetConn); nil if it is not one.
func (l *Limiter) own(nc net.Conn) *conn {
	for range 8 { // a wrapper of a wrapper, but never a cycle
		switch v := nc.(type) {
		case *conn:
			if v.l == l {
				return v
			}
			return nil
		case interface{ NetConn() net.Conn }:
			nc = v.NetConn()
		default:
			return nil
		}
	}
	return nil
}

// admit counts nc in, when there is room or an idle connection can make
// it: then victim, when not nil, is that connection, already counted out,
// for the caller to close. Else c is nil and refusal is what to write to
// nc before closing it.
func (l *Limiter) admit(nc net.Conn) (c *conn, victim *conn, refusal []byte) {
	addr, key := peerAddr(nc)
	exempt := !addr.IsValid() || slices.ContainsFunc(l.cfg.Exempt, func(p netip.Prefix) bool { return p.Contains(addr) })
	l.mu.Lock()
	defer l.mu.Unlock()
	var p *peer
	if !exempt {
		p = l.peers[key]
	}
	switch {
	case p != nil && p.open >= l.cfg.MaxPerIP:
		if victim = p.idle.front; victim == nil {
			l.stats.RefusedPerIP++
			return nil, nil, l.cfg.TooManyFromIP
		}
	case l.stats.Open >= l.cfg.Max:
		if victim = l.idle.front; victim == nil {
			l.stats.RefusedMax++
			return nil, nil, l.cfg.TooMany
		}
	}
	if victim != nil {
		l.releaseLocked(victim) // before the peer is looked up again: its last connection may go
		l.stats.IdleClosed++
	}
	c = &conn{Conn: nc, l: l, state: active}
	if !exempt {
		if p = l.peers[key]; p == nil {
			p = &peer{idle: idleList{k: peerLink}}
			l.peers[key] = p
		}
		c.peer, c.key = p, key
		p.open++
	}
	l.stats.Open++
	l.setIdleLocked(c) // nothing read yet
	return c, victim, nil
}

// setIdleLocked marks the active c idle, the newest idle connection.
func (l *Limiter) setIdleLocked(c *conn) {
	c.state = idle
	c.idle.Store(true)
	l.idle.pushBack(c)
	if c.peer != nil {
		c.peer.idle.pushBack(c)
	}
	l.stats.Idle++
}

// unidleLocked marks the idle c active.
func (l *Limiter) unidleLocked(c *conn) {
	c.state = active
	c.idle.Store(false)
	l.idle.remove(c)
	if c.peer != nil {
		c.peer.idle.remove(c)
	}
	l.stats.Idle--
}

// releaseLocked counts c out, once.
func (l *Limiter) releaseLocked(c *conn) {
	if c.state == released {
		return
	}
	if c.state == idle {
		l.unidleLocked(c)
	}
	c.state = released
	l.stats.Open--
	if p := c.peer; p != nil {
		if p.open--; p.open == 0 {
			delete(l.peers, c.key)
		}
	}
}

// warn logs, at most once a minute, how many connections were refused
// and idle ones closed since the last warning.
func (l *Limiter) warn() {
	if l.cfg.Logger == nil {
		return
	}
	now := l.now()
	l.mu.Lock()
	if !l.warned.IsZero() && now.Sub(l.warned) < time.Minute {
		l.mu.Unlock()
		return
	}
	s, last := l.stats, l.reported
	l.warned, l.reported = now, s
	l.mu.Unlock()
	l.cfg.Logger.Warn("connection caps reached: idle connections closed to make room, busy ones refused new ones",
		"refused_max", s.RefusedMax-last.RefusedMax, "refused_per_ip", s.RefusedPerIP-last.RefusedPerIP,
		"idle_closed", s.IdleClosed-last.IdleClosed, "open", s.Open, "max", l.cfg.Max, "max_per_ip", l.cfg.MaxPerIP)
}

// peerAddr is nc's peer address, and the key it counts by: the address,
// or for IPv6 its /64. The address is not valid when nc's peer has none
// (a Unix socket).
func peerAddr(nc net.Conn) (addr, key netip.Addr) {
	var ap netip.AddrPort
	switch a := nc.RemoteAddr().(type) {
	case *net.TCPAddr:
		ap = a.AddrPort()
	case nil:
	default:
		ap, _ = netip.ParseAddrPort(a.String())
	}
	addr = ap.Addr().Unmap().WithZone("")
	key = addr
	if addr.Is6() {
		key = netip.PrefixFrom(addr, 64).Masked().Addr()
	}
	return addr, key
}

// A listener admits the connections of the listener it wraps.
type listener struct {
	net.Listener
	l *Limiter
}

// refuseWriteTimeout bounds the write of a refusal. A new connection's
// send buffer is empty, so the kernel takes a short response at once;
// the deadline is there for the case it would not.
const refuseWriteTimeout = 10 * time.Millisecond

// Accept returns the next connection there is room for. It closes the
// idle connections that made room, and answers and closes the ones
// refused, without returning.
func (ln *listener) Accept() (net.Conn, error) {
	for {
		nc, err := ln.Listener.Accept()
		if err != nil {
			return nil, err
		}
		c, victim, refusal := ln.l.admit(nc)
		if c == nil || victim != nil {
			ln.l.warn() // first: when a client sees what happened, the warning has been decided
		}
		if victim != nil {
			victim.Conn.Close() // its reader sees the close and calls Close: counted out already
		}
		if c != nil {
			return c, nil
		}
		if len(refusal) > 0 {
			_ = nc.SetWriteDeadline(time.Now().Add(refuseWriteTimeout))
			_, _ = nc.Write(refusal)
		}
		nc.Close()
	}
}

// The states of a connection; guarded by the Limiter's mutex.
type connState uint8

const (
	active   connState = iota // reading or serving a request
	idle                      // in the idle lists
	hijacked                  // taken over from net/http: never idle again
	released                  // counted out
)

// Which of a connection's links an idleList threads through.
const (
	allLink = iota
	peerLink
)

// A conn is an admitted connection.
type conn struct {
	net.Conn
	l     *Limiter
	peer  *peer // nil when exempt from MaxPerIP
	key   netip.Addr
	state connState
	idle  atomic.Bool // state == idle, for Read to check without the mutex
	links [2]struct{ prev, next *conn }
}

// Read reads from the connection; the first byte read makes an idle
// connection active.
func (c *conn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.markActive()
	}
	return n, err
}

// markActive makes c active if it is idle.
func (c *conn) markActive() {
	if !c.idle.Load() {
		return
	}
	c.l.mu.Lock()
	if c.state == idle {
		c.l.unidleLocked(c)
	}
	c.l.mu.Unlock()
}

// Close counts the connection out and closes it.
func (c *conn) Close() error {
	c.l.mu.Lock()
	c.l.releaseLocked(c)
	c.l.mu.Unlock()
	return c.Conn.Close()
}

// NetConn is the connection c wraps, as crypto/tls names it: code that
// needs the socket itself (its file descriptor) unwraps through it.
func (c *conn) NetConn() net.Conn { return c.Conn }

// CloseWrite shuts the writing side, where the wrapped connection can:
// net/http does before closing a connection it answered with an error,
// so that the client reads the answer.
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// An idleList is a doubly linked list of idle connections threaded
// through the connections themselves, by their links[k].
type idleList struct {
	front, back *conn
	k           int
}

func (l *idleList) pushBack(c *conn) {
	lk := &c.links[l.k]
	lk.prev, lk.next = l.back, nil
	if l.back != nil {
		l.back.links[l.k].next = c
	} else {
		l.front = c
	}
	l.back = c
}

func (l *idleList) remove(c *conn) {
	lk := &c.links[l.k]
	if lk.prev != nil {
		lk.prev.links[l.k].next = lk.next
	} else {
		l.front = lk.next
	}
	if lk.next != nil {
		lk.next.links[l.k].prev = lk.prev
	} else {
		l.back = lk.prev
	}
	lk.prev, lk.next = nil, nil
}
