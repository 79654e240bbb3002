// Package testproxy is a TCP proxy that a test controls, to make a store
// (PostgreSQL, Redis) fail for one test without touching the server other
// tests share: cut every connection, delay traffic, restore.
package testproxy

import (
	"net"
	"sync"
	"testing"
	"time"
)

// A Proxy forwards TCP connections to a target address until the test
// cuts or delays them. It is safe for concurrent use.
type Proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	delay  time.Duration
	conns  map[net.Conn]bool
}

// New starts a proxy to target on a free port of 127.0.0.1. It stops, and
// cuts what it forwards, when the test ends.
func New(tb testing.TB, target string) *Proxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	go p.accept()
	tb.Cleanup(func() { ln.Close(); p.Cut() })
	return p
}

// Addr is the host:port to connect to instead of the target.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		cut := p.cut
		if !cut {
			p.conns[c] = true
		}
		p.mu.Unlock()
		if cut {
			c.Close()
			continue
		}
		go p.serve(c)
	}
}

func (p *Proxy) serve(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns[up] = true
	p.mu.Unlock()
	pipe := func(dst, src net.Conn) {
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				p.mu.Lock()
				d := p.delay
				p.mu.Unlock()
				if d > 0 {
					time.Sleep(d)
				}
				if _, werr := dst.Write(buf[:n]); werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		dst.Close()
		src.Close()
	}
	go pipe(up, c)
	pipe(c, up)
}

// Cut closes every connection and refuses new ones until Restore.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// Delay holds every read for d (Restore clears it).
func (p *Proxy) Delay(d time.Duration) {
	p.mu.Lock()
	p.delay = d
	p.mu.Unlock()
}

// Restore accepts connections and forwards promptly again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	p.cut, p.delay = false, 0
	p.mu.Unlock()
}
