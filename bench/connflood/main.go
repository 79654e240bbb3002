// Command connflood measures what a flood of connections does to brain,
// in one of three modes (-mode):
//
//   - idle, the attack of issue 16: connections from many loopback
//     addresses each send one GET /api/v1/health and then idle, kept
//     alive, until they hold every file descriptor the server may open;
//   - headers: each connection sends a request's first line and one
//     header, then nothing, and dials again once the server closes it;
//   - trickle: each sends GET /api/v1/health with Content-Length: 100000
//     and then its body a byte a second, and dials again once closed.
//
// For each -bin (name=path, repeatable: the build before a change and
// the one after), in turn, -runs times, it starts the binary on a free
// loopback port with a temporary SQLite data dir, metrics off, and
// RLIMIT_NOFILE set to -limit (soft and hard, through sh's ulimit), logs
// in three times to warm the login's memory, and times a health check
// and a login from 127.0.0.1, each on a new connection, and reads the
// server's VmRSS: at rest. Then -conns connections from -addrs addresses
// (127.0.1.1, 127.0.1.2, ...) are opened as the mode says: two child
// processes of this one hold them, since no process may hold more than
// the limit, whatever it is. In idle mode, the server's CPU over the
// flood, divided by the requests answered, is its CPU per request.
//
// For -hold the connections stay open (the slow modes keep -conns open,
// dialling again -redial after each is closed or refused) while, from
// 127.0.0.1 on new connections, a health check is timed every -every
// and a login every four -every: in idle mode each is listed, in the
// slow modes the report counts those answered 200 within a second (the
// login is limited to 30 a minute, burst 30, for that address). VmRSS is
// read along. At the end it counts the lines of the server's log that
// say accept4: too many open files. In idle mode each login probe also
// reports what it cost the server: CPU time and minor page faults over
// the request.
//
//	git worktree add /tmp/main main && (cd /tmp/main && go build -o /tmp/brain-before ./cmd/brain)
//	go build -o /tmp/brain-after ./cmd/brain
//	cd bench && go run ./connflood -bin before=/tmp/brain-before -bin after=/tmp/brain-after -runs 2
//	cd bench && go run ./connflood -mode headers -conns 18000 -bin ...
//	cd bench && go run ./connflood -mode trickle -conns 2500 -addrs 20 -env BRAIN_MAX_CONNS=2000 -bin ...
//
// Run it as a user whose hard limit of open files is at least -limit.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/brain-template/brain/bench/internal/loadtool"
)

// adminPassword is the password of the admin user the server creates.
const adminPassword = "connflood admin password"

// probeTimeout is how long a probe waits for its answer.
const probeTimeout = 5 * time.Second

// floodFlag makes this program one of the processes that hold the
// connections (see flood).
const floodFlag = "flood"

// settings are connflood's flags.
type settings struct {
	bins         loadtool.Binaries
	runs, limit  int
	conns, addrs int
	hold, every  time.Duration
	redial       time.Duration
	mode         string
	env          loadtool.EnvList
	floodSpec    string
}

// The connections are held by floodProcs processes, each opening them
// with dialers goroutines.
const (
	floodProcs = 2
	dialers    = 32
)

func main() {
	var s settings
	flag.Var(&s.bins, "bin", "name=path of a brain binary to measure (repeatable; the binaries take turns)")
	flag.IntVar(&s.runs, "runs", 1, "turns of every binary")
	flag.IntVar(&s.limit, "limit", 20000, "the server's RLIMIT_NOFILE")
	flag.IntVar(&s.conns, "conns", 20000, "idle connections to open")
	flag.IntVar(&s.addrs, "addrs", 200, "loopback addresses they come from, 127.0.1.1 on (at most 254)")
	flag.DurationVar(&s.hold, "hold", 30*time.Second, "how long the connections are held")
	flag.DurationVar(&s.every, "every", 5*time.Second, "how often health is timed during the hold (login every four)")
	flag.StringVar(&s.mode, "mode", "idle", "idle, headers or trickle")
	flag.DurationVar(&s.redial, "redial", 50*time.Millisecond, "slow modes: how long a flood connection waits to dial again once closed")
	flag.Var(&s.env, "env", "KEY=VALUE added to the servers' environment (repeatable)")
	flag.StringVar(&s.floodSpec, floodFlag, "", "internal: hold connections (host first addrs conns)")
	flag.Parse()
	if s.floodSpec != "" {
		flood(s.floodSpec)
		return
	}
	if len(s.bins) == 0 || s.runs < 1 || s.conns < 1 || s.addrs < floodProcs || s.addrs > 254 || s.every <= 0 || floodRequests[s.mode] == "" {
		flag.Usage()
		os.Exit(2)
	}
	fmt.Printf("== connflood %s\ncommand:  %s\nmachine:  %d CPUs, client and server together; load %s\n",
		time.Now().UTC().Format(time.RFC3339), loadtool.Command("connflood"), loadtool.NumCPU(), loadtool.LoadAvg())
	fmt.Printf("attack:   %d connections from %d addresses, mode %s (%s); server RLIMIT_NOFILE %d; env %v; held %v, probed every %v\n\n",
		s.conns, s.addrs, s.mode, modeText[s.mode], s.limit, s.env, s.hold, s.every)
	for run := 1; run <= s.runs; run++ {
		for _, b := range s.bins {
			if err := measure(s, b, run); err != nil {
				log.Fatal(err)
			}
		}
	}
	fmt.Printf("machine load at the end: %s\n", loadtool.LoadAvg())
}

// measure runs the attack once against b and prints what it saw.
func measure(s settings, b loadtool.Binary, run int) error {
	dir, err := os.MkdirTemp("", "connflood")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	// sh sets the limit, then becomes brain: the pid stays the server's.
	script := filepath.Join(dir, "brain.sh")
	if err := os.WriteFile(script, fmt.Appendf(nil, "#!/bin/sh\nulimit -n %d || exit 1\nexec %q\n", s.limit, b.Path), 0o700); err != nil {
		return err
	}
	env := append([]string{"BRAIN_ADDR=127.0.0.1:0", "BRAIN_DATA_DIR=" + filepath.Join(dir, "data"), "BRAIN_METRICS_ADDR=off",
		"BRAIN_ADMIN_PASSWORD=" + adminPassword, "BRAIN_COOKIE_SECURE=false"}, s.env...)
	srv, err := loadtool.Start("connflood", script, dir, env)
	if err != nil {
		return err
	}
	defer srv.Stop()
	pid := srv.Cmd.Process.Pid
	base := "http://" + srv.Addr
	for range 3 {
		if _, err := probe(base, "/api/v1/auth/login"); err != nil {
			return fmt.Errorf("connflood: %s: login at rest: %w", b.Name, err)
		}
	}
	health, herr := probe(base, "/api/v1/health")
	login, lcost, lerr := probeLogin(base, pid)
	fmt.Printf("%s, run %d (%s): at rest health %s, login %s (%s); VmRSS %.1f MiB\n", b.Name, run, b.Path, show(health, herr), show(login, lerr), lcost, mib(status(pid, "VmRSS")))

	cpu0, start := loadtool.ProcCPU(pid), time.Now()
	var answered, failed int
	var floods []*exec.Cmd
	defer func() {
		for _, f := range floods {
			f.Process.Kill()
			f.Wait()
		}
	}()
	for i := range floodProcs {
		f, a, n, err := startFlood(srv.Addr, s.mode, s.redial, i*s.addrs/floodProcs, s.addrs/floodProcs, s.conns/floodProcs)
		if err != nil {
			return err
		}
		floods = append(floods, f)
		answered, failed = answered+a, failed+n
	}
	took, cpu := time.Since(start), loadtool.ProcCPU(pid)-cpu0
	if s.mode != "idle" {
		fmt.Printf("  flood:  %d connections open in %.1f s (%d dials failed meanwhile)\n", answered, took.Seconds(), failed)
		return holdSlow(s, base, pid, dir)
	}
	perRequest := "-"
	if answered > 0 {
		perRequest = fmt.Sprintf("%.0f µs", float64(cpu.Microseconds())/float64(answered))
	}
	fmt.Printf("  flood:  %d connections in %.1f s: %d answered 200, %d failed or cut; server CPU %.1f s, %s a request answered\n",
		s.conns, took.Seconds(), answered, failed, cpu.Seconds(), perRequest)

	var healths, logins, costs []string
	var rss []float64
	for end := time.Now().Add(s.hold); time.Now().Before(end); {
		next := time.Now().Add(s.every)
		h, herr := probe(base, "/api/v1/health")
		l, lcost, lerr := probeLogin(base, pid)
		healths, logins, costs = append(healths, show(h, herr)), append(logins, show(l, lerr)), append(costs, lcost)
		rss = append(rss, mib(status(pid, "VmRSS")))
		time.Sleep(time.Until(next))
	}
	fmt.Printf("  hold:   health %s\n          login  %s\n          (login: %s)\n          VmRSS %.1f to %.1f MiB, %d files open\n",
		strings.Join(healths, ", "), strings.Join(logins, ", "), strings.Join(costs, "; "), slices.Min(rss), slices.Max(rss), openFiles(pid))
	return report(dir)
}

// holdSlow probes the server while a slow flood holds its connections:
// health every s.every, a login every four, each counted answered 200
// within a second or not.
func holdSlow(s settings, base string, pid int, dir string) error {
	var health, login []time.Duration // within a second
	var healthN, loginN int
	failures := map[string]int{}
	var rss []float64
	for i, end := 0, time.Now().Add(s.hold); time.Now().Before(end); i++ {
		next := time.Now().Add(s.every)
		paths := []string{"/api/v1/health"}
		if i%4 == 0 {
			paths = append(paths, "/api/v1/auth/login")
		}
		for _, path := range paths {
			d, err := probe(base, path)
			if err == nil && d > time.Second {
				err = errors.New("answered after more than 1 s")
			}
			if err != nil {
				failures[failure(err)]++
			}
			if strings.HasSuffix(path, "/login") {
				loginN++
				if err == nil {
					login = append(login, d)
				}
			} else {
				healthN++
				if err == nil {
					health = append(health, d)
				}
			}
		}
		rss = append(rss, mib(status(pid, "VmRSS")))
		time.Sleep(time.Until(next))
	}
	fmt.Printf("  hold:   health %s\n          login  %s\n          failures: %v\n          VmRSS %.1f to %.1f MiB, %d files open\n",
		within(health, healthN), within(login, loginN), failures, slices.Min(rss), slices.Max(rss), openFiles(pid))
	return report(dir)
}

// failure is the kind of a probe's failure, for the report.
func failure(err error) string {
	msg := err.Error()
	for _, kind := range []string{"status 503", "status 429", "more than 1 s", "reset by peer", "EOF", "Timeout", "timeout"} {
		if strings.Contains(msg, kind) {
			return kind
		}
	}
	return msg
}

// within says how many of n probes answered 200 within a second, and the
// median and worst of those.
func within(ok []time.Duration, n int) string {
	if len(ok) == 0 {
		return fmt.Sprintf("0 of %d within 1 s", n)
	}
	slices.Sort(ok)
	return fmt.Sprintf("%d of %d within 1 s (%.1f %%; p50 %s, max %s)", len(ok), n, 100*float64(len(ok))/float64(n), show(ok[len(ok)/2], nil), show(ok[len(ok)-1], nil))
}

// report prints what the server's log says of the flood.
func report(dir string) error {
	logText, _ := os.ReadFile(filepath.Join(dir, "brain.log"))
	fmt.Printf("  log:    %d lines with accept4: too many open files", bytes.Count(logText, []byte("accept4: too many open files")))
	if m := regexp.MustCompile(`msg="connection caps" (.*)`).FindSubmatch(logText); m != nil {
		fmt.Printf("; %s", m[1])
	}
	fmt.Print("\n\n")
	return nil
}

// probe times one request to path on a new connection from 127.0.0.1: a
// GET, or for the login a POST of the admin's credentials. It must
// answer 200 within probeTimeout.
func probe(base, path string) (time.Duration, error) {
	c := &http.Client{Timeout: probeTimeout, Transport: &http.Transport{DisableKeepAlives: true}}
	start := time.Now()
	var res *http.Response
	var err error
	if strings.HasSuffix(path, "/login") {
		res, err = c.Post(base+path, "application/json", strings.NewReader(`{"username":"admin","password":"`+adminPassword+`"}`))
	} else {
		res, err = c.Get(base + path)
	}
	if err != nil {
		return time.Since(start), err
	}
	defer res.Body.Close()
	_, err = io.Copy(io.Discard, res.Body)
	if err == nil && res.StatusCode != 200 {
		err = fmt.Errorf("status %d", res.StatusCode)
	}
	return time.Since(start), err
}

// probeLogin is probe of the login, with what it cost the server: its
// CPU time and minor page faults over the request (the server does
// little else meanwhile).
func probeLogin(base string, pid int) (d time.Duration, cost string, err error) {
	cpu0, faults0 := loadtool.ProcCPU(pid), procFaults(pid)
	d, err = probe(base, "/api/v1/auth/login")
	return d, fmt.Sprintf("%d ms CPU, %d faults", (loadtool.ProcCPU(pid) - cpu0).Milliseconds(), procFaults(pid)-faults0), err
}

// show is a probe's result for the report.
func show(d time.Duration, err error) string {
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return "no answer within 5 s"
	case err != nil:
		return err.Error()
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000)
	}
	return fmt.Sprintf("%d ms", d.Milliseconds())
}

// startFlood starts a process of this program that holds conns
// connections to host, from addrs addresses starting at 127.0.1.(first+1),
// and returns once they are open, with how many were answered and how
// many failed.
func startFlood(host, mode string, redial time.Duration, first, addrs, conns int) (cmd *exec.Cmd, answered, failed int, err error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, 0, 0, err
	}
	cmd = exec.Command(exe, "-"+floodFlag, fmt.Sprintf("%s %s %s %d %d %d", host, mode, redial, first, addrs, conns))
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, 0, 0, err
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if _, serr := fmt.Sscanf(line, "answered %d failed %d", &answered, &failed); err != nil || serr != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, 0, 0, fmt.Errorf("connflood: the flood process said %q: %v %v", line, err, serr)
	}
	return cmd, answered, failed, nil
}

// The modes' requests: what a connection sends when it opens.
var floodRequests = map[string]string{
	"idle":    "GET /api/v1/health HTTP/1.1\r\nHost: %s\r\n\r\n",
	"headers": "GET /api/v1/health HTTP/1.1\r\nHost: %s\r\n",
	"trickle": "GET /api/v1/health HTTP/1.1\r\nHost: %s\r\nContent-Length: 100000\r\n\r\n",
}

var modeText = map[string]string{
	"idle":    "each one GET /api/v1/health, then idle",
	"headers": "each a request line and a header, then nothing; dialled again once closed",
	"trickle": "each GET /api/v1/health with Content-Length: 100000, then a byte a second; dialled again once closed",
}

// flood is the work of a flood process: spec is "host mode redial first
// addrs conns" (see startFlood). In idle mode it writes "answered N
// failed M" once every connection has its answer or has failed, and holds
// them until killed. In the slow modes it writes "answered N failed M"
// once it has opened a connection for each (N: connections open; M:
// dials that failed), and keeps them open, each dialled again redial
// after it closes, until killed.
func flood(spec string) {
	var host, mode, wait string
	var first, addrs, conns int
	_, err := fmt.Sscanf(spec, "%s %s %s %d %d %d", &host, &mode, &wait, &first, &addrs, &conns)
	redial, derr := time.ParseDuration(wait)
	if err != nil || derr != nil {
		log.Fatalf("connflood -%s %q: %v %v", floodFlag, spec, err, derr)
	}
	request := fmt.Sprintf(floodRequests[mode], host)
	held := make([]net.Conn, conns)
	var answered, failed, next atomic.Int64
	var wg sync.WaitGroup
	dial := func(i int) (net.Conn, error) {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 1, byte(first+1+i%addrs))}, Timeout: probeTimeout}
		c, err := d.Dial("tcp", host)
		if err == nil {
			_, err = io.WriteString(c, request)
		}
		return c, err
	}
	if mode != "idle" {
		var opened sync.WaitGroup
		opened.Add(conns)
		for i := range conns {
			go func() {
				once := sync.OnceFunc(opened.Done)
				for {
					c, err := dial(i)
					if err != nil {
						failed.Add(1)
					} else {
						answered.Add(1)
					}
					once()
					if err == nil {
						slow(c, mode)
						answered.Add(-1)
					}
					time.Sleep(redial)
				}
			}()
		}
		opened.Wait()
		fmt.Printf("answered %d failed %d\n", answered.Load(), failed.Load())
		select {}
	}
	for range dialers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < conns; i = int(next.Add(1) - 1) {
				c, err := dial(i)
				if err != nil {
					failed.Add(1)
					continue
				}
				held[i] = c
				c.SetDeadline(time.Now().Add(probeTimeout))
				res, err := http.ReadResponse(bufio.NewReaderSize(c, 512), nil)
				if err == nil {
					_, err = io.Copy(io.Discard, res.Body)
				}
				if err != nil || res.StatusCode != 200 {
					failed.Add(1)
					continue
				}
				c.SetDeadline(time.Time{})
				answered.Add(1)
			}
		})
	}
	wg.Wait()
	fmt.Printf("answered %d failed %d\n", answered.Load(), failed.Load())
	select {} // hold them until killed
}

// slow holds c, open in a slow mode, until the server closes it (or
// answers: it is closed then): headers sends nothing more, trickle a
// byte of its body a second.
func slow(c net.Conn, mode string) {
	defer c.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		io.Copy(io.Discard, c) // until the server closes it
	}()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			if mode == "trickle" {
				if _, err := c.Write([]byte("x")); err != nil {
					return
				}
			}
		}
	}
}

// status reads a field of process pid's /proc status, in KiB.
func status(pid int, field string) int64 {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, field+":"); ok {
			v, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return v
		}
	}
	return -1
}

func mib(kib int64) float64 { return float64(kib) / 1024 }

// openFiles is how many files process pid has open.
func openFiles(pid int) int {
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return len(fds)
}

// procFaults is how many minor page faults process pid has taken.
func procFaults(pid int) int64 {
	f := procStat(pid)
	if len(f) < 8 {
		return 0
	}
	n, _ := strconv.ParseInt(f[7], 10, 64)
	return n
}

// procStat is the fields of /proc/pid/stat after the command name, which
// may hold spaces: state first.
func procStat(pid int) []string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(b[i+1:]))
}
