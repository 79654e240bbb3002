package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/brain-template/brain/connlimit"
)

// fileLimitEnv, in the environment of brain started by startProc, is the
// RLIMIT_NOFILE it runs under (soft and hard), set by TestMain before
// main runs.
const fileLimitEnv = "BRAIN_TEST_RLIMIT_NOFILE"

// applyFileLimit sets the process's RLIMIT_NOFILE to fileLimitEnv's
// value, when set.
func applyFileLimit() {
	v := os.Getenv(fileLimitEnv)
	if v == "" {
		return
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err == nil {
		err = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: n, Max: n})
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s=%s: %v\n", fileLimitEnv, v, err)
		os.Exit(2)
	}
}

// vmRSS is the resident memory of process pid, in KiB.
func vmRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`VmRSS:\s+(\d+) kB`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no VmRSS in /proc/%d/status", pid)
	}
	n, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return n
}

// connKiB is what brain's memory may grow by per idle connection: VmRSS
// grew by 17.4 to 18.3 KiB a connection over 17,500 idle keep-alive
// connections answered once each (a goroutine's 8 KiB stack, net/http's
// connection with its 4 KiB read and write buffers, the socket's
// bookkeeping), measured without the race detector; with some room.
const connKiB = 24

// The attack of issue 16: 20,000 connections from 200 addresses, each
// sending one GET /api/v1/health and then idling, against brain limited to
// 20,000 file descriptors. Before the connection caps they took every
// descriptor, and while they were held nobody else got an answer
// (accept4: too many open files). Now brain holds at most its cap, the
// descriptor limit less a reserve (BRAIN_MAX_CONNS=auto), and the oldest
// idle connections are closed to make room: health and a login from
// another address are answered, and brain's memory stays within what the
// cap allows.
func TestIdleConnectionFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 20,000 connections")
	}
	if raceEnabled {
		// Each goroutine costs the race detector some 100 KiB and each
		// request ten times the time: the figures would be its own.
		t.Skip("measures brain's memory and latency, which the race detector multiplies; make test runs it without -race")
	}
	const limit, conns, addrs, floodProcs = 20000, 20000, 200, 2
	p := startProc(t, map[string]string{fileLimitEnv: strconv.Itoa(limit), "BRAIN_ADMIN_PASSWORD": adminPassword, "BRAIN_COOKIE_SECURE": "false"})
	pid := p.cmd.Process.Pid
	capLine := regexp.MustCompile(`msg="connection caps" max_conns=(\d+) max_conns_per_ip=256 min_receive_rate=64KiB/s descriptor_limit=(\d+)`).FindStringSubmatch(p.logs.String())
	if capLine == nil || capLine[2] != strconv.Itoa(limit) {
		t.Fatalf("no start-up line stating the connection caps and the descriptor limit %d:\n%s", limit, p.logs)
	}
	maxConns, _ := strconv.Atoi(capLine[1])
	if want := connlimit.Auto(limit); maxConns != want {
		t.Fatalf("max_conns=%d with BRAIN_MAX_CONNS=auto and a descriptor limit of %d, want %d", maxConns, limit, want)
	}

	// A new client each time: a new connection, as after the flood only
	// a new one shows whether brain accepts.
	fresh := func(path, body string) (int, time.Duration, error) {
		c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		start := time.Now()
		var res *http.Response
		var err error
		if body == "" {
			res, err = c.Get(p.base + path)
		} else {
			res, err = c.Post(p.base+path, "application/json", strings.NewReader(body))
		}
		if err != nil {
			return 0, time.Since(start), err
		}
		defer res.Body.Close()
		_, err = io.Copy(io.Discard, res.Body)
		return res.StatusCode, time.Since(start), err
	}
	// A login costs an argon2id hash of 19 MiB. At rest the garbage
	// collector runs about once a login and the next reuses those pages.
	// While the heap holds the connections it runs seldom, and each
	// login's 19 MiB lands on fresh pages: some 4,900 page faults, 100 to
	// 300 ms of CPU instead of 30 to 40 on the 2-core VM these figures
	// come from (bench/connflood prints both). That is the hash's cost,
	// not the connections'; its time on a shared machine varies too.
	loginBody := `{"username":"admin","password":"` + adminPassword + `"}`
	bestLogin := func() (time.Duration, error) {
		best := time.Hour
		for range 3 {
			status, took, err := fresh("/api/v1/auth/login", loginBody)
			if err == nil && status != 200 {
				err = fmt.Errorf("status %d", status)
			}
			if err != nil {
				return took, err
			}
			best = min(best, took)
		}
		return best, nil
	}
	fresh("/api/v1/auth/login", loginBody) // the first allocates what the next reuse
	restLogin, err := bestLogin()
	if err != nil {
		t.Fatalf("login at rest: %v", err)
	}
	rest := vmRSS(t, pid)

	// The flood, from processes of their own: no process may hold more
	// than 20,000 descriptors (raising the hard limit takes a privilege
	// root may lack in a container).
	host := strings.TrimPrefix(p.base, "http://")
	start := time.Now()
	var answered, failed int
	for i := range floodProcs {
		a, f := startFlood(t, host, "idle", i*addrs/floodProcs, addrs/floodProcs, conns/floodProcs)
		answered, failed = answered+a, failed+f
	}
	t.Logf("%d connections from %d addresses in %v: %d answered, %d failed", conns, addrs, time.Since(start).Round(time.Millisecond), answered, failed)
	held := vmRSS(t, pid)

	// What the caps buy is an answer at all (before them, none came within
	// 5 s; the client waits 30, which a loaded machine meets). How fast it
	// comes is the machine's: it is logged, not asserted.
	status, took, err := fresh("/api/v1/health", "")
	if err != nil || status != 200 {
		t.Errorf("health from another address while the connections are held: %d %v after %v, want 200", status, err, took)
	}
	login, err := bestLogin()
	if err != nil {
		t.Errorf("login from another address while the connections are held: %v after %v (best of 3; %v at rest), want 200", err, login, restLogin)
	}
	t.Logf("health answered in %v, login in %v (%v at rest)", took.Round(time.Millisecond), login.Round(time.Millisecond), restLogin.Round(time.Millisecond))

	metrics := metricsOf(t, p.logs)
	if open := metrics["brain_connections_open"]; open > float64(maxConns) {
		t.Errorf("brain_connections_open = %v, more than the cap of %d", open, maxConns)
	}
	if closed := metrics["brain_connections_idle_closed_total"]; closed < conns-float64(maxConns) {
		t.Errorf("brain_connections_idle_closed_total = %v, want at least %d (%d connections, a cap of %d)", closed, conns-maxConns, conns, maxConns)
	}
	bound := 2*rest + int64(maxConns)*connKiB
	t.Logf("brain: VmRSS %d KiB at rest, %d KiB holding %v connections with %d descriptors open (%.1f KiB a connection over the cap of %d); bound %d KiB",
		rest, held, metrics["brain_connections_open"], countOpen(t, pid), float64(held-rest)/float64(maxConns), maxConns, bound)
	if held > bound {
		t.Errorf("brain's VmRSS is %d KiB holding the connections, want at most %d (2 × %d at rest + %d connections × %d KiB)", held, bound, rest, maxConns, connKiB)
	}
	if n := strings.Count(p.logs.String(), "too many open files"); n > 0 {
		t.Errorf("brain ran out of file descriptors %d times", n)
	}
}

// countOpen is how many files process pid has open.
func countOpen(t *testing.T, pid int) int {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(fds)
}

// floodEnv, in the environment of this test binary, makes it a flood
// instead of the tests: "host:port mode first addresses connections"
// opens that many connections to host:port, from the loopback addresses
// 127.0.1.(first+1) on, spread over addresses of them. In mode idle each
// sends one GET /api/v1/health and reads its answer; it writes "answered
// N failed M" and holds them until its standard input closes. In the
// slow modes (slowRequests) each sends its mode's request and keeps the
// connection until the server closes it, then dials again (50 ms later,
// or a second for trickle), until standard input closes: headers sends nothing more, trickle a
// byte of its body a second; it writes "answered N failed M" once each
// connection was dialled once (N opened, M failed).
const floodEnv = "BRAIN_TEST_FLOOD"

// slowRequests are what a slow flood's connections send when they open:
// headers never ends its header block, trickle declares a body it sends
// a byte a second.
var slowRequests = map[string]string{
	"headers": "GET /api/v1/health HTTP/1.1\r\nHost: %s\r\n",
	"trickle": "GET /api/v1/health HTTP/1.1\r\nHost: %s\r\nContent-Length: 100000\r\n\r\n",
}

// startFlood runs a flood process (floodEnv) until the test ends, and
// returns once its connections are open: how many were answered and how
// many failed (or were closed by the server since).
func startFlood(t *testing.T, host, mode string, first, addrs, conns int) (answered, failed int) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = []string{fmt.Sprintf("%s=%s %s %d %d %d", floodEnv, host, mode, first, addrs, conns)}
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if _, serr := fmt.Sscanf(line, "answered %d failed %d", &answered, &failed); err != nil || serr != nil {
		t.Fatalf("the flood process: %q %v %v", line, err, serr)
	}
	return answered, failed
}

// flood is the flood process's work (see floodEnv).
func flood(spec string) {
	var host, mode string
	var first, addrs, conns int
	if _, err := fmt.Sscanf(spec, "%s %s %d %d %d", &host, &mode, &first, &addrs, &conns); err != nil {
		fmt.Fprintln(os.Stderr, floodEnv, err)
		os.Exit(2)
	}
	dial := func(i int) (net.Conn, error) {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 1, byte(first+1+i%addrs))}, Timeout: 5 * time.Second}
		return d.Dial("tcp", host)
	}
	var answered, failed atomic.Int64
	if request, ok := slowRequests[mode]; ok {
		redial := 50 * time.Millisecond // headers: at once, as a slot may be free
		if mode == "trickle" {
			redial = time.Second // at its next byte's time
		}
		stop := make(chan struct{})
		var dialled sync.WaitGroup
		dialled.Add(conns)
		for i := range conns {
			go func() {
				once := sync.OnceFunc(dialled.Done)
				for {
					if c, err := dial(i); err == nil {
						answered.Add(1)
						once()
						holdSlow(c, fmt.Sprintf(request, host), mode == "trickle", stop)
					} else {
						failed.Add(1)
						once()
					}
					select {
					case <-stop:
						return
					case <-time.After(redial):
					}
				}
			}()
		}
		dialled.Wait()
		fmt.Printf("answered %d failed %d\n", answered.Load(), failed.Load())
		io.Copy(io.Discard, os.Stdin)
		close(stop)
		return
	}
	held := make([]net.Conn, conns)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < conns; i = int(next.Add(1) - 1) {
				c, err := dial(i)
				if err != nil {
					failed.Add(1)
					continue
				}
				held[i] = c
				c.SetDeadline(time.Now().Add(5 * time.Second))
				fmt.Fprintf(c, "GET /api/v1/health HTTP/1.1\r\nHost: %s\r\n\r\n", host)
				res, err := http.ReadResponse(bufio.NewReaderSize(c, 512), nil)
				if err == nil {
					_, err = io.Copy(io.Discard, res.Body)
				}
				if err != nil || res.StatusCode != 200 {
					failed.Add(1)
					continue
				}
				answered.Add(1)
			}
		})
	}
	wg.Wait()
	fmt.Printf("answered %d failed %d\n", answered.Load(), failed.Load())
	io.Copy(io.Discard, os.Stdin)
}

// holdSlow sends request on c, then holds c until the server closes it
// (or stop), sending a byte a second when trickle.
func holdSlow(c net.Conn, request string, trickle bool, stop <-chan struct{}) {
	defer c.Close()
	if _, err := io.WriteString(c, request); err != nil {
		return
	}
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		io.Copy(io.Discard, c)
	}()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-closed:
			return
		case <-tick.C:
			if trickle {
				if _, err := c.Write([]byte("x")); err != nil {
					return
				}
			}
		}
	}
}

// The attack of issue 27: connections that begin a request and never
// finish it fill the connection caps. Before the caps closed slow
// connections first, the caps refused a new client as soon as every
// connection had begun a request: with headers that never end, 46 of 81
// health probes failed (503 too many connections open) at the default
// caps; with bodies trickled a byte a second, 94 of 98 with
// BRAIN_MAX_CONNS=2000. Now a new connection takes the place of the
// slowest: at least 95 % of health checks and logins from a fresh address
// are answered 200. (How fast is BENCHMARKS.md's, from bench/connflood: the
// test asserts answers, not their speed, which is the machine's.)
func TestSlowConnectionFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("opens up to 18,000 connections")
	}
	if raceEnabled {
		t.Skip("floods brain with connections, which the race detector makes ten times slower; make test runs it without -race")
	}
	for _, tc := range []struct {
		mode         string
		conns, addrs int
		maxConns     string
	}{
		{"headers", 18000, 200, "auto"},
		{"trickle", 2500, 20, "2000"},
	} {
		t.Run(fmt.Sprintf("%s_%d_from_%d_max_%s", tc.mode, tc.conns, tc.addrs, tc.maxConns), func(t *testing.T) {
			p := startProc(t, map[string]string{fileLimitEnv: "20000", "BRAIN_MAX_CONNS": tc.maxConns, "BRAIN_ADMIN_PASSWORD": adminPassword, "BRAIN_COOKIE_SECURE": "false"})
			host := strings.TrimPrefix(p.base, "http://")
			for i := range 2 {
				startFlood(t, host, tc.mode, i*tc.addrs/2, tc.addrs/2, tc.conns/2)
			}
			capacity := connlimit.Auto(20000)
			if tc.maxConns != "auto" {
				capacity, _ = strconv.Atoi(tc.maxConns)
			}
			// The flood's processes have dialled; brain may still be accepting.
			for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(time.Second) {
				open := metricsOf(t, p.logs)["brain_connections_open"]
				if open >= 0.9*float64(capacity) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("after 2 min, %v connections open: the flood did not fill the caps (%d)", open, capacity)
				}
			}
			// Without the slow connections' eviction no answer comes at all;
			// 15 s is room for a loaded machine.
			client := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
			var health, login, healthOK, loginOK int
			failures := map[string]int{}
			for i := range 60 {
				req, _ := http.NewRequest(http.MethodGet, p.base+"/api/v1/health", nil)
				if i%4 == 0 {
					req, _ = http.NewRequest(http.MethodPost, p.base+"/api/v1/auth/login", strings.NewReader(`{"username":"admin","password":"`+adminPassword+`"}`))
					req.Header.Set("Content-Type", "application/json")
					login++
				} else {
					health++
				}
				res, err := client.Do(req)
				switch {
				case err != nil:
					failures[err.Error()]++
				case res.StatusCode != 200:
					failures[res.Status]++
				case i%4 == 0:
					loginOK++
				default:
					healthOK++
				}
				if err == nil {
					io.Copy(io.Discard, res.Body)
					res.Body.Close()
				}
				time.Sleep(100 * time.Millisecond)
			}
			t.Logf("health %d of %d, login %d of %d answered 200; failures %v", healthOK, health, loginOK, login, failures)
			if healthOK*100 < 95*health || loginOK*100 < 95*login {
				t.Errorf("health %d of %d, login %d of %d answered 200, want at least 95 %% of each; failures %v", healthOK, health, loginOK, login, failures)
			}
			if m := metricsOf(t, p.logs); m["brain_connections_slow_closed_total"] == 0 {
				t.Error("no slow connection was closed to make room")
			}
		})
	}
}

// With auto, brain keeps part of its descriptor limit for its own files:
// a limit that leaves nothing for connections stops start-up, saying so.
func TestTooFewDescriptorsStopStartUp(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	for k, v := range serveEnv(t, map[string]string{execMainEnv: "1", fileLimitEnv: "256"}) {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	want := "brain: the descriptor limit (RLIMIT_NOFILE) is 256, and brain keeps 256 for its own files: none is left for connections (BRAIN_MAX_CONNS=auto); raise it (ulimit -n)"
	if err == nil || !strings.Contains(string(out), want) {
		t.Fatalf("brain with 256 descriptors: %v\n%s\nwant it to stop with %q", err, out, want)
	}
}

// The connection caps reach the server: an address at
// BRAIN_MAX_CONNS_PER_IP with every connection busy (a stream) gets the
// API's 503 envelope on a new one, which never reaches a handler; others
// are served, an idle connection making room for them at
// BRAIN_MAX_CONNS; and /metrics counts both.
func TestConnectionCapsFromSettings(t *testing.T) {
	base, logs := MustRunServer(t, map[string]string{"BRAIN_MAX_CONNS": "2", "BRAIN_MAX_CONNS_PER_IP": "1", "BRAIN_MIN_RECEIVE_RATE": "32KiB",
		"BRAIN_ADMIN_PASSWORD": adminPassword, "BRAIN_COOKIE_SECURE": "false"})
	if !strings.Contains(logs.String(), `msg="connection caps" max_conns=2 max_conns_per_ip=1 min_receive_rate=32KiB/s descriptor_limit=`) {
		t.Fatalf("no start-up line stating the caps:\n%s", logs)
	}
	host := strings.TrimPrefix(base, "http://")
	dial := func(from string) net.Conn {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
		c, err := d.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetDeadline(time.Now().Add(5 * time.Second))
		return c
	}
	get := func(c net.Conn) (*http.Response, string) {
		fmt.Fprintf(c, "GET /api/v1/health HTTP/1.1\r\nHost: %s\r\n\r\n", host)
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		return res, string(body)
	}
	// waitConns waits until brain has open connections, idle of them.
	waitConns := func(open, idle float64) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
			m := metricsOf(t, logs)
			if m["brain_connections_open"] == open && m["brain_connections_idle"] == idle {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("after a minute, %v connections open and %v idle, want %v and %v", m["brain_connections_open"], m["brain_connections_idle"], open, idle)
			}
		}
	}
	cookie, _ := sessionCookieOf(t, login(client{t, base}, "admin", adminPassword).want(t, 200, "login"))
	http.DefaultClient.CloseIdleConnections()
	waitConns(0, 0)
	busy := dial("127.0.0.2")
	fmt.Fprintf(busy, "GET /api/v1/events HTTP/1.1\r\nHost: %s\r\n%s\r\n\r\n", host, cookie) // a stream: busy while it lasts
	if status, err := bufio.NewReader(busy).ReadString('\n'); err != nil || !strings.HasPrefix(status, "HTTP/1.1 200") {
		t.Fatalf("the stream: %q %v", status, err)
	}
	waitConns(1, 0)
	res, body := get(dial("127.0.0.2"))
	if res.StatusCode != 503 || res.Header.Get("Retry-After") != "1" || !res.Close || res.Header.Get("X-Content-Type-Options") != "nosniff" ||
		body != `{"code":"unavailable","message":"too many connections from your address; retry in a second","details":{}}`+"\n" {
		t.Fatalf("a second connection from an address with one busy: %d %v %q, want the 503 envelope", res.StatusCode, res.Header, body)
	}
	if res, _ := get(dial("127.0.0.3")); res.StatusCode != 200 {
		t.Fatalf("another address: %d", res.StatusCode)
	}
	waitConns(2, 1)
	if res, _ := get(dial("127.0.0.4")); res.StatusCode != 200 {
		t.Fatalf("a third address with two connections open, one idle: %d", res.StatusCode)
	}
	m := metricsOf(t, logs)
	for k, want := range map[string]float64{`brain_connections_refused_total{cap="per_ip"}`: 1, `brain_connections_refused_total{cap="max"}`: 0, "brain_connections_idle_closed_total": 1} {
		if m[k] != want {
			t.Errorf("%s = %v, want %v", k, m[k], want)
		}
	}
}
