// Package connlimit bounds the connections an HTTP server holds open, in
// total and from any one client address, and how slowly a request may
// arrive on them, so that idle or slow connections use up neither file
// descriptors nor memory.
//
//	lim := connlimit.New(connlimit.Config{Max: 10000, MaxPerIP: 256})
//	err := lim.Serve(&http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}, ln)
//
// A request (headers and body) must arrive at MinRate bytes a second on
// average after a Grace, and never go a Grace without a byte, or its reads
// are cut. When a new connection would pass Max, the one idle longest makes
// room; else the receiving one furthest behind, if no faster than MinRate;
// else the one whose client has taken nothing of its answer for longest,
// at least a second. Otherwise, and when its address (an IPv6 /64) has
// MaxPerIP open and none idle, the new connection is refused.
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
	// MaxPerIP is how many may come from one address, at least 1.
	MaxPerIP int
	// Exempt are peers not held to MaxPerIP: trusted reverse proxies.
	Exempt []netip.Prefix
	// MinRate is the slowest a request may arrive, in bytes a second, once
	// Grace has passed; Grace is also the longest it may go without a byte.
	MinRate int64
	Grace   time.Duration
	// TooMany and TooManyFromIP are the whole responses written to a
	// connection refused for Max or MaxPerIP; nil writes nothing.
	TooMany, TooManyFromIP []byte
	// Logger, when not nil, gets a warning at most once a minute while
	// connections are refused, closed to make room or cut.
	Logger *slog.Logger
	Now    func() time.Time // the limiter's clock; nil means time.Now
}

// The defaults of MinRate and Grace.
const (
	DefaultMinRate = 64 << 10
	DefaultGrace   = 5 * time.Second
)

// Auto is the Max a process whose descriptor limit is limit can afford:
// the limit less [Reserve]; 10,000 when the limit is unknown (0).
func Auto(limit int) int {
	if limit <= 0 {
		return 10000
	}
	return max(limit-Reserve(limit), 0)
}

// Reserve is how many of limit descriptors Auto keeps for the process's
// other files: an eighth, at least 256.
func Reserve(limit int) int { return max(256, limit/8) }

// Stats are a [Limiter]'s counts.
type Stats struct {
	Open                     int    // connections open now, hijacked ones included
	Idle                     int    // of which idle
	Receiving                int    // of which receiving a request, or accepted with nothing read yet
	RefusedMax, RefusedPerIP uint64 // connections refused for Max and for MaxPerIP
	IdleClosed, SlowClosed   uint64 // connections closed to make room
	TooSlow                  uint64 // connections whose reads were cut
}

// A Limiter bounds connections; it is safe for concurrent use. Make it
// with [New].
type Limiter struct {
	cfg          Config
	now          func() time.Time
	writeTimeout time.Duration // the server's, which Serve sets

	mu       sync.Mutex
	stats    Stats
	idle     connList // every idle connection, the one idle longest first
	conns    connList // every connection
	byRate   dueHeap  // every receiving connection, by when it falls behind MinRate
	byQuiet  dueHeap  // and by when it will have gone a Grace without a byte
	peers    map[netip.Addr]*peer
	warned   time.Time // the last warning
	reported Stats     // the counts it reported
}

type peer struct {
	open int
	idle connList // its idle connections, the one idle longest first
}

// New returns a Limiter enforcing cfg; it panics when Max or MaxPerIP is below 1.
func New(cfg Config) *Limiter {
	if cfg.Max < 1 || cfg.MaxPerIP < 1 || cfg.MinRate < 0 || cfg.Grace < 0 {
		panic("connlimit: Max and MaxPerIP must be at least 1, MinRate and Grace not negative")
	}
	if cfg.MinRate == 0 {
		cfg.MinRate = DefaultMinRate
	}
	if cfg.Grace == 0 {
		cfg.Grace = DefaultGrace
	}
	l := &Limiter{cfg: cfg, now: cfg.Now, idle: connList{k: allIdle}, conns: connList{k: allConns}, peers: map[netip.Addr]*peer{}}
	l.byRate, l.byQuiet = dueHeap{k: byRate, due: l.rateDue}, dueHeap{k: byQuiet, due: l.quietDue}
	if l.now == nil {
		l.now = time.Now
	}
	return l
}

// Stats returns the Limiter's counts.
func (l *Limiter) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.stats
}

// admit counts nc in when there is room or a victim (counted out, for the
// caller to close) makes it; else c is nil and refusal is what to write.
func (l *Limiter) admit(nc net.Conn) (c *conn, victim *conn, refusal []byte) {
	addr, key := peerAddr(nc)
	exempt := !addr.IsValid() || slices.ContainsFunc(l.cfg.Exempt, func(p netip.Prefix) bool { return p.Contains(addr) })
	now := l.now().UnixNano()
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
		l.stats.IdleClosed++
	case l.stats.Open >= l.cfg.Max:
		if victim = l.victimLocked(now); victim == nil {
			l.stats.RefusedMax++
			return nil, nil, l.cfg.TooMany
		}
	}
	if victim != nil {
		l.releaseLocked(victim) // before the peer is looked up again: its last connection may go
	}
	c = &conn{Conn: nc, l: l, state: active}
	if !exempt {
		if p = l.peers[key]; p == nil {
			p = &peer{idle: connList{k: peerIdle}}
			l.peers[key] = p
		}
		c.peer, c.key = p, key
		p.open++
	}
	l.conns.pushBack(c)
	l.stats.Open++
	l.receiveLocked(c, now, 0) // nothing read yet
	return c, victim, nil
}

// victimLocked is the connection that makes room for a new one at now
// when Max are open, counted in the stats; nil when none may.
func (l *Limiter) victimLocked(now int64) *conn {
	if c := l.idle.front; c != nil {
		l.stats.IdleClosed++
		return c
	}
	// A new connection falls behind at now + Grace: one due sooner is worse.
	if c, due := l.byRate.first(); c != nil && due <= now+int64(l.cfg.Grace) {
		l.stats.SlowClosed++
		return c
	}
	var writer *conn // the one whose client has taken nothing for longest
	since := now - int64(stalledWrite)
	for c := l.conns.front; c != nil; c = c.links[allConns].next {
		if w := c.writing.Load(); c.state == active && w != 0 && w <= since {
			writer, since = c, w
		}
	}
	if writer != nil {
		l.stats.SlowClosed++
	}
	return writer
}

// stalledWrite is how long a write waits before its connection may make room.
const stalledWrite = time.Second

// rateDue is when receiving c falls behind MinRate.
func (l *Limiter) rateDue(c *conn) int64 {
	n := c.got.Load() - c.base
	return c.start + int64(l.cfg.Grace) + int64(float64(n)/float64(l.cfg.MinRate)*1e9)
}

// quietDue is when receiving c will have gone a Grace without a byte.
func (l *Limiter) quietDue(c *conn) int64 { return c.last.Load() + int64(l.cfg.Grace) }

// receiveLocked marks c receiving a request from now, its bytes counted
// from the last n read.
func (l *Limiter) receiveLocked(c *conn, now int64, n int) {
	l.activeLocked(c)
	c.state, c.start, c.base = receiving, now, c.got.Load()-int64(n)
	c.last.Store(now)
	l.byRate.push(c)
	l.byQuiet.push(c)
	l.stats.Receiving++
}

func (l *Limiter) setIdleLocked(c *conn) {
	l.activeLocked(c)
	c.state = idle
	c.idle.Store(true)
	l.idle.pushBack(c)
	if c.peer != nil {
		c.peer.idle.pushBack(c)
	}
	l.stats.Idle++
}

// activeLocked makes idle or receiving c active, out of its lists and heaps.
func (l *Limiter) activeLocked(c *conn) {
	switch c.state {
	case idle:
		c.idle.Store(false)
		l.idle.remove(c)
		if c.peer != nil {
			c.peer.idle.remove(c)
		}
		l.stats.Idle--
	case receiving:
		l.byRate.remove(c)
		l.byQuiet.remove(c)
		l.stats.Receiving--
	default:
		return
	}
	c.state = active
}

// releaseLocked counts c out, once.
func (l *Limiter) releaseLocked(c *conn) {
	if c.state == released {
		return
	}
	l.activeLocked(c)
	c.state = released
	l.stats.Open--
	l.conns.remove(c)
	if p := c.peer; p != nil {
		if p.open--; p.open == 0 {
			delete(l.peers, c.key)
		}
	}
}

func (l *Limiter) connState(nc net.Conn, state http.ConnState) {
	c := l.own(nc)
	if c == nil {
		return
	}
	if state == http.StateActive && !c.idle.Load() {
		return // the usual case: the request's first byte made it receiving
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch state {
	case http.StateActive: // a pipelined request, read ahead while the last was served
		if c.state == idle {
			l.receiveLocked(c, l.now().UnixNano(), 0)
		}
	case http.StateIdle:
		if c.state == active || c.state == receiving {
			l.setIdleLocked(c)
		}
	case http.StateHijacked:
		if l.activeLocked(c); c.state == active {
			c.state = hijacked
		}
	case http.StateClosed:
		l.releaseLocked(c)
	}
}

// own is nc as one of l's connections (through wrappers such as *tls.Conn), or nil.
func (l *Limiter) own(nc net.Conn) *conn {
	for range 8 { // a wrapper of a wrapper, but never a cycle
		if c, ok := nc.(*conn); ok && c.l == l {
			return c
		}
		w, ok := nc.(interface{ NetConn() net.Conn })
		if !ok {
			return nil
		}
		nc = w.NetConn()
	}
	return nil
}

// warn logs, at most once a minute, the refusals, closes and cuts since the last.
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
	l.cfg.Logger.Warn("connection caps reached: idle and slow connections closed to make room, or new ones refused",
		"refused_max", s.RefusedMax-last.RefusedMax, "refused_per_ip", s.RefusedPerIP-last.RefusedPerIP,
		"idle_closed", s.IdleClosed-last.IdleClosed, "slow_closed", s.SlowClosed-last.SlowClosed, "too_slow", s.TooSlow-last.TooSlow,
		"open", s.Open, "max", l.cfg.Max, "max_per_ip", l.cfg.MaxPerIP)
}

// peerAddr is nc's peer address (invalid for a Unix socket) and the key it
// counts by (an IPv6 /64).
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

type connState uint8 // guarded by the Limiter's mutex

const (
	active    connState = iota // serving a request that has arrived, or cut
	receiving                  // in the receiving heaps
	idle                       // in the idle lists
	hijacked                   // taken over from net/http: never idle again
	released                   // counted out
)

// A conn is an admitted connection.
type conn struct {
	net.Conn
	l     *Limiter
	peer  *peer // nil when exempt from MaxPerIP
	key   netip.Addr
	state connState
	idle  atomic.Bool  // state == idle, for Read to check without the mutex
	got   atomic.Int64 // bytes read
	// Unix ns: the last byte read, and the start of the write waiting (0: none).
	last, writing atomic.Int64
	start, base   int64 // while receiving: when it began, and got then
	links         [3]struct{ prev, next *conn }
	slots         [2]slot
	dl            sync.Mutex // orders cut with net/http's read deadlines
	cut           bool       // its reads fail
}

func (c *conn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		now := c.l.now().UnixNano()
		c.got.Add(int64(n))
		c.last.Store(now)
		if c.idle.Load() {
			c.l.mu.Lock()
			if c.state == idle {
				c.l.receiveLocked(c, now, n)
			}
			c.l.mu.Unlock()
		}
	}
	return n, err
}

func (c *conn) Write(b []byte) (int, error) {
	c.writing.Store(c.l.now().UnixNano())
	n, err := c.Conn.Write(b)
	c.writing.Store(0)
	return n, err
}

// SetReadDeadline sets the read deadline, unless the reads were cut.
func (c *conn) SetReadDeadline(t time.Time) error {
	c.dl.Lock()
	defer c.dl.Unlock()
	if c.cut {
		return nil
	}
	return c.Conn.SetReadDeadline(t)
}

// cutReads makes c's reads fail, and gives its answer a whole WriteTimeout.
func (c *conn) cutReads() {
	c.dl.Lock()
	defer c.dl.Unlock()
	c.cut = true
	_ = c.Conn.SetReadDeadline(time.Unix(1, 0))
	c.renewWrite()
}

func (c *conn) renewWrite() {
	if d := c.l.writeTimeout; d > 0 {
		_ = c.Conn.SetWriteDeadline(time.Now().Add(d))
	}
}

func (c *conn) Close() error {
	c.l.mu.Lock()
	c.l.releaseLocked(c)
	c.l.mu.Unlock()
	return c.Conn.Close()
}

func (c *conn) NetConn() net.Conn { return c.Conn }

// CloseWrite shuts the writing side where it can, as net/http expects.
func (c *conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
