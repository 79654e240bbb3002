package connlimit

import (
	"context"
	"io"
	"net"
	"net/http"
	"time"
)

// Serve serves srv on ln, as srv.Serve(ln) does, under l's caps and
// minimum rate. It wraps srv's Handler, ConnState and ConnContext. Serve
// one server with a Limiter.
func (l *Limiter) Serve(srv *http.Server, ln net.Listener) error {
	l.writeTimeout = srv.WriteTimeout
	state, connCtx := srv.ConnState, srv.ConnContext
	srv.ConnState = func(nc net.Conn, s http.ConnState) {
		l.connState(nc, s)
		if state != nil {
			state(nc, s)
		}
	}
	srv.ConnContext = func(ctx context.Context, nc net.Conn) context.Context {
		if c := l.own(nc); c != nil {
			ctx = context.WithValue(ctx, connKey{}, c)
		}
		if connCtx != nil {
			ctx = connCtx(ctx, nc)
		}
		return ctx
	}
	next := srv.Handler
	if next == nil {
		next = http.DefaultServeMux
	}
	srv.Handler = l.receive(next)
	stop := make(chan struct{})
	defer close(stop)
	go l.sweep(stop)
	return srv.Serve(&listener{Listener: ln, l: l})
}

type connKey struct{}

// receive wraps next to tell l when each request has arrived: at once
// without a body, else when its body is read to the end.
func (l *Limiter) receive(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, _ := r.Context().Value(connKey{}).(*conn); c != nil {
			if r.Body == nil || r.Body == http.NoBody {
				l.arrive(c)
			} else {
				wrapped := *r
				wrapped.Body = &body{ReadCloser: r.Body, c: c, left: r.ContentLength}
				r = &wrapped
			}
		}
		next.ServeHTTP(w, r)
	})
}

func (l *Limiter) arrive(c *conn) {
	l.mu.Lock()
	if c.state == receiving {
		l.activeLocked(c)
	}
	l.mu.Unlock()
}

type body struct {
	io.ReadCloser
	c    *conn
	left int64 // the bytes still to come, when the request said (Content-Length); else -1
	done bool
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if b.left > 0 {
		b.left -= int64(n)
	}
	if (err == io.EOF || b.left == 0) && !b.done {
		b.done = true
		b.c.l.arrive(b.c)
		b.c.renewWrite() // net/http counted it from the headers
	}
	return n, err
}

const sweepEvery = 200 * time.Millisecond

// sweep cuts the reads of the connections that fell behind, until stop.
func (l *Limiter) sweep(stop <-chan struct{}) {
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		var behind []*conn
		now := l.now().UnixNano()
		l.mu.Lock()
		for _, h := range []*dueHeap{&l.byRate, &l.byQuiet} {
			for c, due := h.first(); c != nil && due <= now; c, due = h.first() {
				l.activeLocked(c)
				behind = append(behind, c)
			}
		}
		l.stats.TooSlow += uint64(len(behind))
		l.mu.Unlock()
		for _, c := range behind {
			c.cutReads()
		}
		if len(behind) > 0 {
			l.warn()
		}
	}
}

type listener struct {
	net.Listener
	l *Limiter
}

// refuseWriteTimeout bounds a refusal's write, which a new connection takes at once.
const refuseWriteTimeout = 10 * time.Millisecond

// Accept returns the next connection there is room for, closing those refused.
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
