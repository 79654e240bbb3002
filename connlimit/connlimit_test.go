package connlimit_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/brain-template/brain/connlimit"
	"github.com/brain-template/brain/internal/testclock"
)

// t0 is where the tests' fake clocks start.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// The refusals the tests' servers write: the shape brain's are (its api
// package builds them; here they are written out to be read back).
var (
	tooMany       = refusal("the server has too many connections open; retry in a second")
	tooManyFromIP = refusal("too many connections from your address; retry in a second")
)

func refusal(msg string) []byte {
	body := `{"code":"unavailable","message":"` + msg + `","details":{}}` + "\n"
	return []byte("HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: " + fmt.Sprint(len(body)) +
		"\r\nContent-Type: application/json\r\nRetry-After: 1\r\nX-Content-Type-Options: nosniff\r\n\r\n" + body)
}

// A server is a real http.Server on 127.0.0.1, behind a Limiter.
type server struct {
	lim  *connlimit.Limiter
	addr string
	// release unblocks the requests to /block; blocked counts them in.
	release chan struct{}
	blocked chan struct{}
	// hijacked receives the connections that /hijack takes over.
	hijacked chan net.Conn
	// wrote gets a value for each MiB /big writes.
	wrote chan struct{}
}

// startServer serves, under cfg's caps (and its refusals when it has
// none), /ok (200 "ok"), /block (200 once release is closed), /hijack
// (takes the connection over), /big (256 MiB) and /read (reads the body,
// 200 with its length, or 408 when its read times out) until the test
// ends; opts change the http.Server first.
func startServer(t *testing.T, cfg connlimit.Config, opts ...func(*http.Server)) *server {
	t.Helper()
	if cfg.TooMany == nil {
		cfg.TooMany, cfg.TooManyFromIP = tooMany, tooManyFromIP
	}
	s := &server{lim: connlimit.New(cfg), release: make(chan struct{}), blocked: make(chan struct{}, 100), hijacked: make(chan net.Conn, 100), wrote: make(chan struct{}, 1024)}
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	mux.HandleFunc("/block", func(w http.ResponseWriter, r *http.Request) {
		s.blocked <- struct{}{}
		<-s.release
		io.WriteString(w, "ok")
	})
	mux.HandleFunc("/hijack", func(w http.ResponseWriter, r *http.Request) {
		c, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		s.hijacked <- c
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		for range 256 {
			if _, err := w.Write(make([]byte, 1<<20)); err != nil {
				return
			}
			s.wrote <- struct{}{}
		}
	})
	mux.HandleFunc("/read", func(w http.ResponseWriter, r *http.Request) {
		n, err := io.Copy(io.Discard, r.Body)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			w.WriteHeader(http.StatusRequestTimeout)
			return
		}
		fmt.Fprint(w, n)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = ln.Addr().String()
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	for _, o := range opts {
		o(srv)
	}
	done := make(chan error, 1)
	go func() { done <- s.lim.Serve(srv, ln) }()
	t.Cleanup(func() {
		select {
		case <-s.release:
		default:
			close(s.release)
		}
		srv.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
	})
	return s
}

// A client is one TCP connection to the server from a loopback address of
// its own choosing, such as 127.0.0.2.
type client struct {
	t    *testing.T
	conn net.Conn
	rd   *bufio.Reader
}

// dial connects to s from the loopback address from.
func (s *server) dial(t *testing.T, from string) *client {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &client{t: t, conn: c, rd: bufio.NewReader(c)}
}

// get sends a request for path and keeps the connection open.
func (c *client) send(path string) {
	c.t.Helper()
	if _, err := fmt.Fprintf(c.conn, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path); err != nil {
		c.t.Fatalf("send %s: %v", path, err)
	}
}

// response reads a response, with its body, within 5 s.
func (c *client) response() (*http.Response, string, error) {
	c.t.Helper()
	c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	res, err := http.ReadResponse(c.rd, nil)
	if err != nil {
		return nil, "", err
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	return res, string(body), err
}

// get sends a request for path and reads its answer, which must be 200:
// the connection then idles, kept alive.
func (c *client) get(path string) {
	c.t.Helper()
	c.send(path)
	res, body, err := c.response()
	if err != nil || res.StatusCode != 200 {
		c.t.Fatalf("GET %s from %s: %v %q", path, c.conn.LocalAddr(), err, body)
	}
}

// closedByServer says whether the server has closed the connection (a
// read finds its end) rather than keeping it (a read waits).
func (c *client) closedByServer() bool {
	c.t.Helper()
	c.conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	_, err := c.rd.ReadByte()
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return true
}

// wantClosed and wantOpen check which connections the server closed.
func wantClosed(t *testing.T, what string, cs ...*client) {
	t.Helper()
	for _, c := range cs {
		if !c.closedByServer() {
			t.Errorf("%s: the connection from %s is still open, want it closed", what, c.conn.LocalAddr())
		}
	}
}

func wantOpen(t *testing.T, what string, cs ...*client) {
	t.Helper()
	for _, c := range cs {
		if c.closedByServer() {
			t.Errorf("%s: the connection from %s was closed, want it kept", what, c.conn.LocalAddr())
		}
	}
}

// wantRefused reads the refusal c must get: the 503 envelope, then the
// connection's end.
func wantRefused(t *testing.T, c *client, msg string) {
	t.Helper()
	res, body, err := c.response()
	if err != nil {
		t.Fatalf("want a 503 refusal, got %v", err)
	}
	var env struct {
		Code, Message string
		Details       map[string]any
	}
	if err := json.Unmarshal([]byte(body), &env); err != nil || res.StatusCode != 503 || env.Code != "unavailable" ||
		env.Message != msg || env.Details == nil || len(env.Details) != 0 {
		t.Fatalf("refusal = %d %q (%v), want 503 with the envelope saying %q", res.StatusCode, body, err, msg)
	}
	for k, v := range map[string]string{"Retry-After": "1", "Connection": "close", "Content-Type": "application/json", "X-Content-Type-Options": "nosniff"} {
		if got := res.Header.Get(k); got != v && !(k == "Connection" && res.Close) {
			t.Errorf("refusal's %s = %q, want %q", k, got, v)
		}
	}
	if !c.closedByServer() {
		t.Error("the refused connection was left open")
	}
}

// eventually waits up to 5 s for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after 5 s: want %s", what)
		}
	}
}

// waitIdle waits until s has n idle connections. A client has its
// answer a moment before net/http says the connection is idle: the tests
// that depend on which connection has been idle longest wait for it.
func (s *server) waitIdle(t *testing.T, n int) {
	t.Helper()
	eventually(t, fmt.Sprintf("%d idle connections", n), func() bool { return s.lim.Stats().Idle == n })
}

// waitBlocked waits up to 5 s for a request to reach /block.
func (s *server) waitBlocked(t *testing.T) {
	t.Helper()
	select {
	case <-s.blocked:
	case <-time.After(5 * time.Second):
		t.Fatal("after 5 s, no request reached /block: its connection was refused or closed")
	}
}

// wantStats waits until s's counts are want.
func (s *server) wantStats(t *testing.T, want connlimit.Stats) {
	t.Helper()
	var got connlimit.Stats
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if got = s.lim.Stats(); got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("stats = %+v, want %+v", got, want)
		}
	}
}

// With Max open, a new connection closes the one idle the longest, of
// any address, kept alive after its request; busy ones and newer idle
// ones stay.
func TestMaxClosesTheOldestIdle(t *testing.T) {
	s := startServer(t, connlimit.Config{Max: 4, MaxPerIP: 10})
	older := s.dial(t, "127.0.0.2")
	older.get("/ok")
	s.waitIdle(t, 1)
	kept := s.dial(t, "127.0.0.3")
	kept.get("/ok") // kept alive: idle since its answer
	s.waitIdle(t, 2)
	busy := s.dial(t, "127.0.0.4")
	busy.send("/block")
	<-s.blocked
	newer := s.dial(t, "127.0.0.5")
	newer.get("/ok")
	s.wantStats(t, connlimit.Stats{Open: 4, Idle: 3})

	first := s.dial(t, "127.0.0.6")
	first.get("/ok")
	wantClosed(t, "the first connection over Max", older)
	s.waitIdle(t, 3)
	second := s.dial(t, "127.0.0.6")
	second.get("/ok")
	wantClosed(t, "the second connection over Max", kept)
	wantOpen(t, "busy and newer idle connections", newer)
	s.wantStats(t, connlimit.Stats{Open: 4, Idle: 3, IdleClosed: 2})

	// A keep-alive request moves newer to the back of the line: the next
	// to go is first, then second.
	newer.get("/ok")
	s.waitIdle(t, 3)
	third := s.dial(t, "127.0.0.7")
	third.get("/ok")
	wantClosed(t, "the third connection over Max", first)
	wantOpen(t, "the connections idle for less time", newer, second)
	close(s.release)
	if res, body, err := busy.response(); err != nil || res.StatusCode != 200 || body != "ok" {
		t.Fatalf("the busy request: %v %q, want 200 ok", err, body)
	}
}

// sendBody sends the headers of a POST to /read whose body is length
// bytes, and n bytes of it.
func (c *client) sendBody(length, n int) {
	c.t.Helper()
	if _, err := fmt.Fprintf(c.conn, "POST /read HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", length, strings.Repeat("b", n)); err != nil {
		c.t.Fatal(err)
	}
}

// With no idle connection, a new one closes the receiving one furthest
// behind the minimum rate: one that sent a request's first bytes and
// stopped, before one that began later or sent more; never one sending
// faster than the minimum rate, nor one being served.
func TestSlowConnectionsMakeRoom(t *testing.T) {
	clock := testclock.New(t0)
	s := startServer(t, connlimit.Config{Max: 4, MaxPerIP: 10, MinRate: 1000, Now: clock.Now})
	stalled := s.dial(t, "127.0.0.2")
	fmt.Fprint(stalled.conn, "GET /ok HTTP/1.1\r\nHost: x\r\n") // headers begun, never ended
	s.wantStats(t, connlimit.Stats{Open: 1, Receiving: 1})
	clock.Advance(100 * time.Millisecond)
	trickling := s.dial(t, "127.0.0.3")
	trickling.sendBody(100000, 10)
	fast := s.dial(t, "127.0.0.4")
	fast.sendBody(100000, 50000) // 50 KB before a second passes: 50 times the minimum rate
	s.dial(t, "127.0.0.5").send("/block")
	s.waitBlocked(t)
	eventually(t, "the fast body read", func() bool { return s.lim.Stats().Receiving == 3 })
	clock.Advance(time.Second)

	admitted := func(from string) {
		s.dial(t, from).send("/block") // busy from now on: it never makes room
		s.waitBlocked(t)
	}
	admitted("127.0.0.6")
	wantClosed(t, "the first connection over Max", stalled)
	wantOpen(t, "the later, faster ones", trickling, fast)
	admitted("127.0.0.6")
	wantClosed(t, "the second connection over Max", trickling)
	wantOpen(t, "the one sending faster than the minimum rate", fast)
	wantRefused(t, s.dial(t, "127.0.0.7"), "the server has too many connections open; retry in a second")
	s.wantStats(t, connlimit.Stats{Open: 4, Receiving: 1, SlowClosed: 2, RefusedMax: 1})

	fmt.Fprint(fast.conn, strings.Repeat("b", 50000))
	if res, body, err := fast.response(); err != nil || res.StatusCode != 200 || body != "100000" {
		t.Fatalf("the fast body: %v %q, want 200 100000", err, body)
	}
}

// An address at MaxPerIP makes room with its idle connections only: a
// new connection from it is refused rather than close its slow ones
// (cut soon enough), whatever their rate.
func TestMaxPerIPClosesIdleOnly(t *testing.T) {
	clock := testclock.New(t0)
	s := startServer(t, connlimit.Config{Max: 10, MaxPerIP: 2, MinRate: 1000, Now: clock.Now})
	stalled := s.dial(t, "127.0.0.2")
	fmt.Fprint(stalled.conn, "GET /ok HTTP/1.1\r\n")
	s.dial(t, "127.0.0.2").send("/block")
	s.waitBlocked(t)
	clock.Advance(time.Second)
	wantRefused(t, s.dial(t, "127.0.0.2"), "too many connections from your address; retry in a second")
	wantOpen(t, "the address's slow connection", stalled)
	s.wantStats(t, connlimit.Stats{Open: 2, Receiving: 1, RefusedPerIP: 1})
}

// A connection that falls behind the minimum rate after its grace, or
// goes its grace without a byte, has its reads cut: one whose headers
// stalled is dropped, and a handler reading a trickled body, or one that
// came fast and stopped, gets a timeout (here answered 408). A connection
// that keeps up, and one idle between requests, are not cut.
func TestSlowConnectionsAreCut(t *testing.T) {
	clock := testclock.New(t0)
	s := startServer(t, connlimit.Config{Max: 10, MaxPerIP: 10, MinRate: 1000, Grace: 2 * time.Second, Now: clock.Now})
	stalled := s.dial(t, "127.0.0.2")
	fmt.Fprint(stalled.conn, "GET /ok HTTP/1.1\r\nHost: x\r\n")
	trickling := s.dial(t, "127.0.0.3")
	trickling.sendBody(100000, 10)
	burst := s.dial(t, "127.0.0.6")
	burst.sendBody(100000, 50000) // far ahead of the rate, then nothing
	keeping := s.dial(t, "127.0.0.4")
	keeping.sendBody(10000, 3000)
	kept := s.dial(t, "127.0.0.5")
	kept.get("/ok")
	eventually(t, "the bodies begun", func() bool { return s.lim.Stats().Receiving == 4 })
	time.Sleep(100 * time.Millisecond) // what came read at 0 s
	clock.Advance(1500 * time.Millisecond)
	fmt.Fprint(keeping.conn, strings.Repeat("b", 3000))
	time.Sleep(100 * time.Millisecond) // read at 1.5 s

	// At 2.5 s, stalled is due at 2.03 s, trickling at about 2.06, burst
	// at 2 (its last byte, 2 s before); keeping (6,000 bytes at 1,000 a
	// second, the last at 1.5 s) at 3.5 s.
	clock.Advance(time.Second)
	eventually(t, "three cut", func() bool { return s.lim.Stats().TooSlow == 3 })
	wantClosed(t, "the stalled headers", stalled)
	for what, c := range map[string]*client{"the trickled body": trickling, "the body that stopped": burst} {
		if res, _, err := c.response(); err != nil || res.StatusCode != http.StatusRequestTimeout || !res.Close {
			t.Fatalf("%s: %v %v, want 408 and the connection closed", what, res, err)
		}
	}
	wantOpen(t, "the connection idle between requests", kept)
	fmt.Fprint(keeping.conn, strings.Repeat("b", 4000))
	if res, body, err := keeping.response(); err != nil || res.StatusCode != 200 || body != "10000" {
		t.Fatalf("the body that kept up: %v %q, want 200 10000", err, body)
	}
	s.wantStats(t, connlimit.Stats{Open: 2, Idle: 2, TooSlow: 3})
}

// The server's WriteTimeout counts from the end of a request's body, not
// from its headers: a body that takes longer than it to arrive still gets
// its answer.
func TestWriteTimeoutCountsFromTheBody(t *testing.T) {
	s := startServer(t, connlimit.Config{Max: 10, MaxPerIP: 10}, func(srv *http.Server) { srv.WriteTimeout = 300 * time.Millisecond })
	c := s.dial(t, "127.0.0.2")
	c.sendBody(2000, 1000)
	time.Sleep(600 * time.Millisecond) // twice the WriteTimeout, on the kernel's clock
	fmt.Fprint(c.conn, strings.Repeat("b", 1000))
	if res, body, err := c.response(); err != nil || res.StatusCode != 200 || body != "2000" {
		t.Fatalf("a body slower than the WriteTimeout: %v %q, want 200 2000", err, body)
	}
}

// With no idle or slow receiving connection, a new one closes the one
// whose client has taken nothing of its answer for longest, a second at
// least; one being served whose client takes its answer stays.
func TestStalledWritersMakeRoom(t *testing.T) {
	clock := testclock.New(t0)
	s := startServer(t, connlimit.Config{Max: 2, MaxPerIP: 10, Now: clock.Now})
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}, Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	nc, err := d.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	fmt.Fprint(nc, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n") // and read none of it
	// Wait until its writes wait for the client.
	for quiet := false; !quiet; {
		select {
		case <-s.wrote:
		case <-time.After(300 * time.Millisecond):
			quiet = true
		}
	}
	s.dial(t, "127.0.0.3").send("/block")
	s.waitBlocked(t)
	wantRefused(t, s.dial(t, "127.0.0.4"), "the server has too many connections open; retry in a second") // the write has waited no time yet
	clock.Advance(2 * time.Second)
	s.dial(t, "127.0.0.4").send("/block")
	s.waitBlocked(t)
	s.wantStats(t, connlimit.Stats{Open: 2, SlowClosed: 1, RefusedMax: 1})
}

// The rest of a body its handler left unread, which net/http reads to
// keep the connection, arrives at the minimum rate too: a body sent whole
// is read and the connection kept; one that stalls is cut, and the answer
// goes out then, closing the connection.
func TestUnreadBodiesArriveAtTheMinimumRate(t *testing.T) {
	clock := testclock.New(t0)
	s := startServer(t, connlimit.Config{Max: 10, MaxPerIP: 10, MinRate: 1000, Grace: 2 * time.Second, Now: clock.Now})
	whole := s.dial(t, "127.0.0.2")
	fmt.Fprint(whole.conn, "GET /ok HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n0123456789")
	if res, body, err := whole.response(); err != nil || res.StatusCode != 200 || body != "ok" || res.Close {
		t.Fatalf("GET /ok with a body of 10 bytes it never reads: %v %q, want 200 ok, kept alive", err, body)
	}
	stalled := s.dial(t, "127.0.0.3")
	fmt.Fprint(stalled.conn, "GET /ok HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\nabc")
	wantOpen(t, "the connection whose unread body is being read", stalled)
	clock.Advance(2500 * time.Millisecond)
	if res, body, err := stalled.response(); err != nil || res.StatusCode != 200 || body != "ok" || !res.Close {
		t.Fatalf("GET /ok with a body that stalled: %v %q, want 200 ok and Connection: close once cut", err, body)
	}
	wantClosed(t, "the connection cut", stalled)
	wantOpen(t, "the connection whose body came whole", whole)
	s.wantStats(t, connlimit.Stats{Open: 1, Idle: 1, TooSlow: 1})
}

// net/http's answers to a body left unread are kept: one the client was
// never asked for (Expect: 100-continue) and one of 256 KiB or more are
// not read at all; the answer comes at once and the connection closes.
// (The clock stands still: were the body read, it would never arrive.)
func TestUnreadBodiesNetHTTPSkips(t *testing.T) {
	s := startServer(t, connlimit.Config{Max: 10, MaxPerIP: 10, Now: testclock.New(t0).Now})
	for what, head := range map[string]string{
		"Expect: 100-continue": "Content-Length: 1000\r\nExpect: 100-continue\r\n\r\n",
		"1 MB, 10 bytes sent":  "Content-Length: 1000000\r\n\r\n0123456789",
	} {
		c := s.dial(t, "127.0.0.2")
		fmt.Fprint(c.conn, "GET /ok HTTP/1.1\r\nHost: x\r\n"+head)
		if res, body, err := c.response(); err != nil || res.StatusCode != 200 || body != "ok" || !res.Close {
			t.Fatalf("%s, unread: %v %q, want 200 ok at once, closing", what, err, body)
		}
	}
}

// With its address at MaxPerIP, a new connection closes that address's
// connection idle the longest, even when another address's has been
// idle longer.
func TestMaxPerIPClosesThatAddressesOldestIdle(t *testing.T) {
	s := startServer(t, connlimit.Config{Max: 10, MaxPerIP: 2})
	other := s.dial(t, "127.0.0.3")
	other.get("/ok") // idle the longest of all
	s.waitIdle(t, 1)
	a1, a2 := s.dial(t, "127.0.0.2"), s.dial(t, "127.0.0.2")
	a1.get("/ok")
	s.waitIdle(t, 2)
	a2.get("/ok")
	s.waitIdle(t, 3)
	a3 := s.dial(t, "127.0.0.2")
	a3.get("/ok")
	wantClosed(t, "the address's oldest idle", a1)
	wantOpen(t, "another address's, and the address's newer", other, a2)
	s.wantStats(t, connlimit.Stats{Open: 3, Idle: 3, IdleClosed: 1})
}

// When every connection is busy, a new one is refused with the 503
// envelope and closed, and no request in progress is dropped: not one
// being served, not one whose first bytes have arrived faster than the
// minimum rate (the clock stands still: every byte is).
func TestBusyConnectionsAreNeverClosed(t *testing.T) {
	for _, tc := range []struct {
		name          string
		cfg           connlimit.Config
		reading, from string // the addresses of the connection that has begun a request, and of the refused one
		msg           string
		refusals      connlimit.Stats
	}{
		{"Max", connlimit.Config{Max: 2, MaxPerIP: 10}, "127.0.0.3", "127.0.0.4", "the server has too many connections open; retry in a second", connlimit.Stats{RefusedMax: 1}},
		{"MaxPerIP", connlimit.Config{Max: 10, MaxPerIP: 2}, "127.0.0.2", "127.0.0.2", "too many connections from your address; retry in a second", connlimit.Stats{RefusedPerIP: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Now = testclock.New(t0).Now
			s := startServer(t, tc.cfg)
			serving := s.dial(t, "127.0.0.2")
			serving.send("/block")
			<-s.blocked
			// A request's first bytes make a connection busy, before
			// net/http has a whole request (and says it is active).
			reading := s.dial(t, tc.reading)
			fmt.Fprint(reading.conn, "GET /ok HTT")
			eventually(t, "the connection accepted", func() bool { return s.lim.Stats().Receiving == 1 })
			time.Sleep(100 * time.Millisecond) // its first bytes read (a connection with none read is as new)

			refused := s.dial(t, tc.from)
			refused.send("/ok")
			time.Sleep(50 * time.Millisecond) // the refusal, and the close, come before the client reads
			wantRefused(t, refused, tc.msg)
			tc.refusals.Open, tc.refusals.Receiving = 2, 1
			s.wantStats(t, tc.refusals)

			fmt.Fprint(reading.conn, "P/1.1\r\nHost: x\r\n\r\n")
			if res, body, err := reading.response(); err != nil || res.StatusCode != 200 || body != "ok" {
				t.Fatalf("the request that had begun: %v %q, want 200 ok", err, body)
			}
			close(s.release)
			if res, body, err := serving.response(); err != nil || res.StatusCode != 200 || body != "ok" {
				t.Fatalf("the request being served: %v %q, want 200 ok", err, body)
			}
			// Both idle now: a new connection is admitted by closing one.
			s.waitIdle(t, 2)
			s.dial(t, tc.from).get("/ok")
		})
	}
}

// A trusted proxy's address is held to Max only: it carries many
// clients' requests.
func TestExemptAddressesPassMaxPerIP(t *testing.T) {
	s := startServer(t, connlimit.Config{Max: 10, MaxPerIP: 1, Exempt: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}})
	for range 3 {
		s.dial(t, "127.0.0.2").send("/block")
		<-s.blocked
	}
	s.dial(t, "127.0.0.3").send("/block")
	<-s.blocked
	wantRefused(t, s.dial(t, "127.0.0.3"), "too many connections from your address; retry in a second")
	s.wantStats(t, connlimit.Stats{Open: 4, RefusedPerIP: 1})
}

// The counts go back to zero when the clients leave, and when the server
// closes the connections.
func TestCountsReturnToZero(t *testing.T) {
	s := startServer(t, connlimit.Config{Max: 5, MaxPerIP: 2})
	var cs []*client
	for i := range 14 {
		c := s.dial(t, fmt.Sprintf("127.0.0.%d", 2+i%3))
		if i < 12 {
			c.get("/ok")
		} // the last two send nothing
		cs = append(cs, c)
	}
	// Each connection past the caps closed an idle one.
	eventually(t, "5 open, 9 closed to make room", func() bool {
		st := s.lim.Stats()
		return st.Open == 5 && st.Idle+st.Receiving == 5 && st.IdleClosed == 9 && st.RefusedMax+st.RefusedPerIP == 0
	})
	for _, c := range cs {
		c.conn.Close()
	}
	eventually(t, "nothing open", func() bool { st := s.lim.Stats(); return st.Open == 0 && st.Idle == 0 && st.Receiving == 0 })
	// Connections that make room for others are counted out at once;
	// their ends are not counted twice.
	closed := s.lim.Stats()
	s.dial(t, "127.0.0.2").get("/ok")
	closed.Open, closed.Idle = 1, 1
	s.wantStats(t, closed)
}

// A hijacked connection counts until whoever took it closes it, and is
// never idle: it is never closed to make room.
func TestHijackedCountsUntilClosed(t *testing.T) {
	s := startServer(t, connlimit.Config{Max: 1, MaxPerIP: 10})
	c := s.dial(t, "127.0.0.2")
	c.send("/hijack")
	taken := <-s.hijacked
	s.wantStats(t, connlimit.Stats{Open: 1})
	wantRefused(t, s.dial(t, "127.0.0.3"), "the server has too many connections open; retry in a second")
	if _, err := taken.Write([]byte("still here")); err != nil {
		t.Fatalf("the hijacked connection: %v", err)
	}
	taken.Close()
	s.wantStats(t, connlimit.Stats{RefusedMax: 1})
	s.dial(t, "127.0.0.3").get("/ok")
}

// Many clients at once, connecting, asking and leaving, against small
// caps: every answer is a 200 or a refusal, and once they have left
// nothing is counted (run with -race).
func TestConcurrentClients(t *testing.T) {
	s := startServer(t, connlimit.Config{Max: 8, MaxPerIP: 3})
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 20 {
				d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+g%5))}}
				nc, err := d.Dial("tcp", s.addr)
				if err != nil {
					t.Error(err)
					return
				}
				rd := bufio.NewReader(nc)
				for range i % 3 {
					fmt.Fprint(nc, "GET /ok HTTP/1.1\r\nHost: x\r\n\r\n")
					res, err := http.ReadResponse(rd, nil)
					if err != nil {
						break // closed to make room, or refused before the request
					}
					io.Copy(io.Discard, res.Body)
					if res.StatusCode != 200 && res.StatusCode != 503 {
						t.Errorf("status %d", res.StatusCode)
					}
				}
				nc.Close()
			}
		})
	}
	wg.Wait()
	eventually(t, "nothing open", func() bool { st := s.lim.Stats(); return st.Open == 0 && st.Idle == 0 })
}

// A warning is logged when connections are refused or idle ones closed,
// at most once a minute, with the counts since the last.
func TestWarnsOnceAMinute(t *testing.T) {
	clock := testclock.New(t0)
	var logs syncBuffer
	s := startServer(t, connlimit.Config{Max: 1, MaxPerIP: 10, Now: clock.Now, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	s.dial(t, "127.0.0.2").get("/ok")
	s.waitIdle(t, 1)
	s.dial(t, "127.0.0.3").get("/ok") // closes the first
	s.waitIdle(t, 1)
	busy := s.dial(t, "127.0.0.3")
	busy.send("/block") // closes the second
	<-s.blocked
	wantRefused(t, s.dial(t, "127.0.0.4"), "the server has too many connections open; retry in a second")
	if n := strings.Count(logs.String(), "connection caps reached"); n != 1 {
		t.Fatalf("%d warnings within a minute, want 1:\n%s", n, logs.String())
	}
	clock.Advance(time.Minute)
	wantRefused(t, s.dial(t, "127.0.0.4"), "the server has too many connections open; retry in a second")
	eventually(t, "a second warning", func() bool { return strings.Count(logs.String(), "connection caps reached") == 2 })
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "refused_max=0 refused_per_ip=0 idle_closed=1") ||
		!strings.Contains(lines[1], "refused_max=2 refused_per_ip=0 idle_closed=1") {
		t.Fatalf("warnings:\n%s\nwant the first at the first event, the next a minute later with what happened since", logs.String())
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func TestMain(m *testing.M) {
	// The tests dial from 127.0.0.2 and on: Linux routes all of
	// 127.0.0.0/8 to the loopback interface, other systems may not.
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err == nil {
		var c net.Conn
		if c, err = d.Dial("tcp", ln.Addr().String()); err == nil {
			c.Close()
		}
		ln.Close()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "connlimit: cannot dial from 127.0.0.2 (Linux routes 127.0.0.0/8 to loopback):", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}
