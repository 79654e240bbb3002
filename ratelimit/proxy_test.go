package ratelimit_test

import (
	"net"
	"sync"
	"testing"
	"time"
)

// proxy is a TCP proxy to Redis that a test controls: cut every
// connection (and refuse new ones), delay traffic, restore. The outage
// tests break this, never the Redis server other tests share.
type proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	delay  time.Duration
	conns  map[net.Conn]bool
}

func newProxy(tb testing.TB, target string) *proxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &proxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	go p.accept()
	tb.Cleanup(func() { ln.Close(); p.Cut() })
	return p
}

func (p *proxy) Addr() string { return p.ln.Addr().String() }

func (p *proxy) accept() {
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

func (p *proxy) serve(c net.Conn) {
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
func (p *proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// Delay holds every read for d (Restore clears it).
func (p *proxy) Delay(d time.Duration) {
	p.mu.Lock()
	p.delay = d
	p.mu.Unlock()
}

// Restore accepts connections and forwards promptly again.
func (p *proxy) Restore() {
	p.mu.Lock()
	p.cut, p.delay = false, 0
	p.mu.Unlock()
}
