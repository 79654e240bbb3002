// Package testproxy is a TCP proxy a test puts before a real server (Redis,
// PostgreSQL) to cut, slow or stall the connection, never the shared server.
package testproxy

import (
	"net"
	"sync"
	"testing"
	"time"
)

// Proxy forwards every connection made to Addr to the target. It is safe for concurrent use.
type Proxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	resumed *sync.Cond // broadcast when a stall ends
	cut     bool
	stalled bool
	delay   time.Duration
	conns   map[net.Conn]bool
}

// New starts a proxy to target on a free loopback port, closed when the test ends.
func New(tb testing.TB, target string) *Proxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	p.resumed = sync.NewCond(&p.mu)
	go p.accept()
	tb.Cleanup(func() { ln.Close(); p.Cut() })
	return p
}

// Addr is the host:port clients dial instead of the target.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut closes every connection and refuses new ones until Restore.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut, p.stalled = true, false
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
	p.resumed.Broadcast()
}

// Delay holds every read for d before forwarding it.
func (p *Proxy) Delay(d time.Duration) {
	p.mu.Lock()
	p.delay = d
	p.mu.Unlock()
}

// Stall keeps connections open but forwards nothing until Restore or Cut: a
// network that black-holes traffic.
func (p *Proxy) Stall() {
	p.mu.Lock()
	p.stalled = true
	p.mu.Unlock()
}

// Restore accepts connections and forwards promptly again, what a stall held back too.
func (p *Proxy) Restore() {
	p.mu.Lock()
	p.cut, p.stalled, p.delay = false, false, 0
	p.resumed.Broadcast()
	p.mu.Unlock()
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if p.track(c) {
			go p.serve(c)
		}
	}
}

func (p *Proxy) serve(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil || !p.track(up) { // or cut while dialing
		c.Close()
		return
	}
	go p.pipe(up, c)
	p.pipe(c, up)
}

// track keeps c for Cut to close, or closes it if the proxy is cut.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		c.Close()
		return false
	}
	p.conns[c] = true
	return true
}

// pipe copies src to dst, holding each read while the proxy is delayed or stalled.
func (p *Proxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.hold() {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// hold waits out a delay or a stall; false when the proxy was cut meanwhile.
func (p *Proxy) hold() bool {
	p.mu.Lock()
	for p.stalled {
		p.resumed.Wait()
	}
	d, cut := p.delay, p.cut
	p.mu.Unlock()
	if d > 0 {
		time.Sleep(d)
	}
	return !cut
}
