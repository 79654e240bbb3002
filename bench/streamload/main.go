// Command streamload measures brain's stream plane under load: what each
// open stream costs the server in memory, and how long one event takes to
// reach every stream.
//
// It builds brain (or takes -bin) and starts it on a free loopback port
// with a temporary SQLite data dir, stream caps (per caller, per user) and
// an open budget (its burst) above n, so that one session may open them
// all at once, a per-address connection cap above n (every stream comes
// from 127.0.0.1), metrics off, the default heartbeat (-heartbeat) and
// its log in a file.
// It logs in as admin, sends health checks until the server has collected
// the login's garbage, and reads the server's RSS. Then it opens n streams
// of GET /api/v1/events as that one session, each over its own TCP
// connection read by one small goroutine, and once every stream has its
// 200 reads the RSS again: (after - before) / n is the memory per stream.
// Each round then creates an API key (POST /api/v1/apikeys), which
// publishes one apikey.created event to all n streams, and times, for
// every stream, from just before the POST to that event's arrival:
//
//	cd bench && go run ./streamload -n 10000 -rounds 5
//
// Then (unless -peer=false) it runs the same load against a plain net/http
// SSE server (this program again, as a child: a handler per stream, one
// write and a flush per event) and prints brain's figures beside it, so a
// busy machine moves both and the ratio stays readable.
//
// The access log writes a line when a request ends: the open streams log
// nothing until the server is killed at the end, and the rounds' POSTs log
// one line each, inside the measurement. Client and server share the
// machine's cores, as the targets intend.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/brain-template/brain/bench/internal/loadtool"
	"github.com/brain-template/brain/connlimit"
)

// The targets streamload judges against.
const (
	targetKiBPerStream = 32
	targetP99          = 250 * time.Millisecond
)

// adminPassword is the password of the admin user the server creates.
const adminPassword = "streamload admin password"

func main() {
	if os.Getenv(plainEnv) != "" {
		servePlain()
		return
	}
	bin := flag.String("bin", "", "the brain binary to start; empty builds ./cmd/brain of the repository around the working directory")
	n := flag.Int("n", 10000, "streams to open")
	rounds := flag.Int("rounds", 5, "events to publish, one per round")
	every := flag.Duration("every", time.Second, "pause between rounds")
	dialers := flag.Int("dialers", 64, "streams being opened at once")
	settle := flag.Duration("settle", 2*time.Second, "wait between the last stream's 200 and the RSS reading")
	heartbeat := flag.String("heartbeat", "15s", "the server's BRAIN_STREAM_HEARTBEAT")
	hold := flag.Duration("hold", 0, "keep the server and its streams this long after the summary, to profile the server")
	cpuprofile := flag.String("cpuprofile", "", "write this process's CPU profile of the rounds to this file")
	peer := flag.Bool("peer", true, "then run the same load against a plain net/http SSE server (this program, as a child) and report brain's figures beside it")
	var extra loadtool.EnvList
	flag.Var(&extra, "env", "KEY=VALUE added to the server's environment (repeatable): GODEBUG, GOGC, another setting")
	flag.Parse()
	if *n < 1 || *rounds < 1 || *rounds > 99 || *dialers < 1 {
		log.Fatal("streamload: -n and -dialers must be at least 1, -rounds 1 to 99 (a user holds at most 100 API keys)")
	}
	err := func() error {
		// The server inherits the limit and keeps part of it for its own
		// files (BRAIN_MAX_CONNS=auto): what is left must hold the n
		// streams and the requests beside them.
		want := *n + 256
		for connlimit.Auto(want) < *n+connSlack {
			want += 256
		}
		if err := raiseFileLimit(*n, want); err != nil {
			return err
		}
		dir, err := os.MkdirTemp("", "streamload")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		if *bin == "" {
			if *bin, err = loadtool.Build("streamload", dir); err != nil {
				return err
			}
		}
		srv, err := start(*bin, dir, *n, *heartbeat, extra)
		if err != nil {
			return err
		}
		defer srv.Stop()
		ours, err := run(srv, *n, *rounds, *every, *dialers, *settle, *cpuprofile)
		if err != nil {
			return err
		}
		if *hold > 0 {
			fmt.Printf("holding the server (pid %d, %s) and its streams for %s\n", srv.Cmd.Process.Pid, srv.Addr, *hold)
			time.Sleep(*hold)
		}
		srv.Stop()
		if !*peer {
			return nil
		}
		self, err := os.Executable()
		if err != nil {
			return err
		}
		env := []string{plainEnv + "=1", "BRAIN_STREAM_HEARTBEAT=" + *heartbeat}
		ps, err := loadtool.Start("streamload", self, dir, env)
		if err != nil {
			return err
		}
		plain := &server{Server: ps, env: append([]string{"", "", ""}, env...), peer: true}
		defer plain.Stop()
		theirs, err := run(plain, *n, *rounds, *every, *dialers, *settle, "")
		if err != nil {
			return err
		}
		compare(ours, theirs)
		return nil
	}()
	if err != nil {
		log.Fatal(err)
	}
}

// raiseFileLimit raises the soft limit of open files to at least want,
// within the hard limit, for n streams. The server, a child, inherits it.
func raiseFileLimit(n, want int) error {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return err
	}
	if l.Cur >= uint64(want) {
		return nil
	}
	if l.Max < uint64(want) {
		return fmt.Errorf("streamload: %d streams need %d open files, the hard limit is %d: lower -n or raise the limit (ulimit -Hn)", n, want, l.Max)
	}
	l.Cur = l.Max
	return syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l)
}

// A server is the brain child process, and the settings it was given.
type server struct {
	*loadtool.Server
	env  []string
	peer bool // the plain net/http server, which the targets do not judge
}

// connSlack is what the server's caps allow beyond the n streams: the
// login, the rounds' requests, the health checks.
const connSlack = 64

// start starts bin, for n streams, with its data and log in dir and
// waits until it listens. Every stream and request comes from 127.0.0.1:
// the address's connection cap (BRAIN_MAX_CONNS_PER_IP) is raised above
// them, as are the stream caps and the open budget.
func start(bin, dir string, n int, heartbeat string, extra []string) (*server, error) {
	streams := strconv.Itoa(n + 16)
	env := []string{
		"BRAIN_ADDR=127.0.0.1:0",
		"BRAIN_DATA_DIR=" + filepath.Join(dir, "data"),
		"BRAIN_ADMIN_PASSWORD=" + adminPassword,
		"BRAIN_METRICS_ADDR=off",
		"BRAIN_COOKIE_SECURE=false",
		"BRAIN_STREAM_CAP=" + streams,
		"BRAIN_STREAM_USER_CAP=" + streams,
		"BRAIN_STREAM_OPENS=" + streams + "/s,burst=" + streams,
		"BRAIN_MAX_CONNS_PER_IP=" + strconv.Itoa(n+connSlack),
		"BRAIN_STREAM_HEARTBEAT=" + heartbeat,
		"BRAIN_RATE_LIMIT_SESSION=6000/min,burst=1000",
	}
	env = append(env, extra...)
	srv, err := loadtool.Start("streamload", bin, dir, env)
	if err != nil {
		return nil, err
	}
	return &server{Server: srv, env: env}, nil
}

// status reads a field of the server's /proc status, in KiB.
func (s *server) status(field string) int64 {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.Cmd.Process.Pid))
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, field+":"); ok {
			v, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return v
		}
	}
	return -1
}

// cpu is the server's user and system CPU time so far.
func (s *server) cpu() time.Duration {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.Cmd.Process.Pid))
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:])) // after the command name, which may hold spaces
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	k, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+k) * 10 * time.Millisecond // USER_HZ is 100 on Linux
}

// selfCPU is this process's user and system CPU time so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// A load is n streams of one session, and the arrival of each round's
// event on each stream.
type load struct {
	srv    *server
	cookie string
	n      int
	base   time.Time      // arrivals are nanoseconds after base
	arrive []atomic.Int64 // round r's event on stream i: arrive[(r-1)*n+i]
	got    []atomic.Int32 // streams that received round r's event
	done   []chan struct{}
	ended  atomic.Int32 // streams the server ended
	closed atomic.Int32 // streams that received stream.closing
	stop   atomic.Bool  // the measurement is over: ends are expected
}

// run warms the server up and reads its memory, opens the n streams and
// reads it again, publishes one event a round, and reports.
func run(srv *server, n, rounds int, every time.Duration, dialers int, settle time.Duration, cpuprofile string) (measurement, error) {
	client := &http.Client{Timeout: 30 * time.Second}
	cookie, err := login(client, srv.Addr)
	if err != nil {
		return measurement{}, err
	}
	l := newLoad(srv, cookie, n, rounds)
	var m measurement
	if m.liveBefore, m.rssBefore, err = l.warmUp(client, settle); err != nil {
		return m, err
	}
	if m.openTook, m.rssAfter, m.liveAfter, err = l.openAll(dialers, settle); err != nil {
		return m, err
	}
	if m.rounds, err = l.runRounds(client, rounds, every, cpuprofile); err != nil {
		return m, err
	}
	m.rssEnd = srv.status("VmRSS")
	m.n = n
	report(l, m)
	return m, nil
}

// compare prints brain's figures beside the plain server's, from the same
// run: memory per stream, and delivery p50, p99 and the worst round's p99,
// with brain's as a multiple of the plain server's.
func compare(ours, plain measurement) {
	fmt.Printf("\n== brain beside a plain net/http SSE server, the same load, the same run\n")
	fmt.Printf("| figure | brain | plain net/http | brain ÷ plain |\n|---|---|---|---|\n")
	row := func(name string, a, b float64, unit string) {
		fmt.Printf("| %s | %.1f %s | %.1f %s | %.2f |\n", name, a, unit, b, unit, a/b)
	}
	row("memory per stream", ours.perStream(), plain.perStream(), "KiB")
	oa, pa := ours.pooled(), plain.pooled()
	toMS := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	row("delivery p50, rounds pooled", toMS(pct(oa, .5)), toMS(pct(pa, .5)), "ms")
	row("delivery p99, rounds pooled", toMS(pct(oa, .99)), toMS(pct(pa, .99)), "ms")
	row("worst round's p99", toMS(ours.worst()), toMS(plain.worst()), "ms")
}

// perStream is the server's memory per stream, in KiB.
func (m measurement) perStream() float64 { return float64(m.rssAfter-m.rssBefore) / float64(m.n) }

// pooled is every round's delivery times, sorted.
func (m measurement) pooled() []time.Duration {
	var all []time.Duration
	for _, r := range m.rounds {
		all = append(all, r.lat...)
	}
	slices.Sort(all)
	return all
}

// worst is the largest of the rounds' p99s.
func (m measurement) worst() time.Duration {
	var w time.Duration
	for _, r := range m.rounds {
		w = max(w, r.pct(.99))
	}
	return w
}

// newLoad is the load of n streams of the session cookie, for rounds
// events.
func newLoad(srv *server, cookie string, n, rounds int) *load {
	l := &load{srv: srv, cookie: cookie, n: n, base: time.Now(), arrive: make([]atomic.Int64, rounds*n), got: make([]atomic.Int32, rounds+1)}
	for range rounds + 1 {
		l.done = append(l.done, make(chan struct{}))
	}
	return l
}

// A measurement is what one run read: the server's memory before and
// after the streams opened and after the rounds, and each round.
type measurement struct {
	n                           int           // streams
	openTook                    time.Duration // until every stream had its 200
	rssBefore, rssAfter, rssEnd int64         // VmRSS, KiB
	liveBefore, liveAfter       snapshot
	rounds                      []round
}

// warmUp runs the key path (round 0, no stream open) and the stream path,
// has the server collect the warm-up's garbage, waits settle, and reads
// the server's heap and RSS.
func (l *load) warmUp(client *http.Client, settle time.Duration) (snapshot, int64, error) {
	if _, err := l.createKey(client, 0); err != nil {
		return snapshot{}, 0, err
	}
	live, err := l.collect()
	if err != nil {
		return snapshot{}, 0, err
	}
	time.Sleep(settle) // the scavenger returns freed memory to the system
	return live, l.srv.status("VmRSS"), nil
}

// openAll opens the n streams, waits settle, and reads the server's RSS
// and heap; it returns how long the opening took.
func (l *load) openAll(dialers int, settle time.Duration) (time.Duration, int64, snapshot, error) {
	t := time.Now()
	if err := l.open(dialers); err != nil {
		return 0, 0, snapshot{}, err
	}
	took := time.Since(t)
	log.Printf("streamload: %d streams open in %s; server pid %d", l.n, took.Round(time.Millisecond), l.srv.Cmd.Process.Pid)
	time.Sleep(settle)
	rss := l.srv.status("VmRSS")
	live, err := l.live(func(snapshot) bool { return true })
	if err != nil {
		return 0, 0, snapshot{}, err
	}
	return took, rss, live, nil
}

// runRounds publishes one event a round, every apart, with this
// process's CPU profiled to cpuprofile (if not ""), and marks the
// measurement over.
func (l *load) runRounds(client *http.Client, rounds int, every time.Duration, cpuprofile string) ([]round, error) {
	var res []round
	if cpuprofile != "" {
		f, err := os.Create(cpuprofile)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return nil, err
		}
	}
	for r := 1; r <= rounds; r++ {
		time.Sleep(every)
		rd, err := l.round(client, r)
		if err != nil {
			return nil, err
		}
		res = append(res, rd)
	}
	l.stop.Store(true)
	pprof.StopCPUProfile()
	return res, nil
}

// report prints the run: the streams, the server's memory, each round,
// the rounds pooled, and the verdicts against the targets.
func report(l *load, m measurement) {
	srv, n := l.srv, l.n
	perStream := float64(m.rssAfter-m.rssBefore) / float64(n)
	var all []time.Duration
	worst, received := time.Duration(0), true
	for _, r := range m.rounds {
		all = append(all, r.lat...)
		worst = max(worst, r.pct(.99))
		received = received && len(r.lat) == n
	}
	slices.Sort(all)
	memOK, latOK := perStream <= targetKiBPerStream, worst < targetP99 && received

	fmt.Printf("\n== streamload %s\n", time.Now().UTC().Format(time.RFC3339))
	fmt.Printf("command:  %s\n", loadtool.Command("streamload"))
	fmt.Printf("server:   %s with %s (its log in a file, deleted at exit)\n", srv.Cmd.Path, strings.Join(srv.env[3:], " "))
	fmt.Printf("machine:  %d CPUs, client and server together\n", loadtool.NumCPU())
	fmt.Printf("streams:  %d open as one session, all 200 in %s; ended by the server during the run: %d (stream.closing: %d)\n",
		n, m.openTook.Round(time.Millisecond), l.ended.Load(), l.closed.Load())
	fmt.Printf("server:   VmRSS before %s, after %s, after the rounds %s; VmHWM %s\n", mib(m.rssBefore), mib(m.rssAfter), mib(m.rssEnd), mib(srv.status("VmHWM")))
	fmt.Printf("          heap objects %s -> %s, goroutines %d -> %d (system.live)\n",
		mib(int64(m.liveBefore.HeapBytes>>10)), mib(int64(m.liveAfter.HeapBytes>>10)), m.liveBefore.Goroutines, m.liveAfter.Goroutines)
	fmt.Printf("memory:   %.1f KiB per stream (RSS delta / n); heap %.1f KiB, goroutines %.2f per stream\n", perStream,
		float64(int64(m.liveAfter.HeapBytes)-int64(m.liveBefore.HeapBytes))/1024/float64(n), float64(m.liveAfter.Goroutines-m.liveBefore.Goroutines)/float64(n))
	for i, r := range m.rounds {
		fmt.Printf("round %d:  received %d/%d  p50 %s  p99 %s  max %s  (POST answered in %s; CPU server %s, client %s)\n",
			i+1, len(r.lat), n, ms(r.pct(.5)), ms(r.pct(.99)), ms(r.pct(1)), ms(r.post), ms(r.srvCPU), ms(r.selfCPU))
	}
	fmt.Printf("rounds:   pooled p50 %s  p99 %s  max %s; worst round's p99 %s\n", ms(pct(all, .5)), ms(pct(all, .99)), ms(pct(all, 1)), ms(worst))
	if srv.peer {
		return
	}
	fmt.Printf("target:   memory <= %d KiB/stream: %s (%.1f); delivery p99 < %s to all %d, every round: %s (%s)\n",
		targetKiBPerStream, loadtool.Verdict(memOK), perStream, ms(targetP99), n, loadtool.Verdict(latOK), ms(worst))
	fmt.Printf("result:   %s\n", loadtool.Verdict(memOK && latOK))
}

// A round is one event's delivery: when it reached each stream, how long
// the POST that published it took, and the CPU time each process spent
// meanwhile.
type round struct {
	lat             []time.Duration // sorted; one per stream that received it
	post            time.Duration
	srvCPU, selfCPU time.Duration
}

func (r round) pct(p float64) time.Duration { return pct(r.lat, p) }

// round publishes round r's event and waits until every stream has it,
// or 10 s.
func (l *load) round(client *http.Client, r int) (round, error) {
	srvCPU, myCPU := l.srv.cpu(), selfCPU()
	t0 := time.Now()
	post, err := l.createKey(client, r)
	if err != nil {
		return round{}, err
	}
	select {
	case <-l.done[r]:
	case <-time.After(10 * time.Second):
	}
	time.Sleep(50 * time.Millisecond) // the last deliveries' CPU lands in the counters
	from := t0.Sub(l.base).Nanoseconds()
	lat := make([]time.Duration, 0, l.n)
	for i := range l.n {
		if a := l.arrive[(r-1)*l.n+i].Load(); a != 0 {
			lat = append(lat, time.Duration(a-from))
		}
	}
	slices.Sort(lat)
	return round{lat: lat, post: post, srvCPU: l.srv.cpu() - srvCPU, selfCPU: selfCPU() - myCPU}, nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }

func mib(kib int64) string { return fmt.Sprintf("%.1f MiB", float64(kib)/1024) }

// pct is the p-quantile of sorted s (nearest rank), 0 when s is empty.
func pct(s []time.Duration, p float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	i := int(p*float64(len(s))+0.999999) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// login logs in as admin and returns the session cookie.
func login(client *http.Client, addr string) (string, error) {
	res, err := client.Post("http://"+addr+"/api/v1/auth/login", "application/json",
		strings.NewReader(`{"username":"admin","password":"`+adminPassword+`"}`))
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	for _, c := range res.Cookies() {
		if c.Name == "brain_session" {
			return c.Name + "=" + c.Value, nil
		}
	}
	return "", fmt.Errorf("streamload: login answered %s without a session cookie", res.Status)
}

// createKey creates the API key of round r, which publishes its event,
// and returns how long the POST took.
func (l *load) createKey(client *http.Client, r int) (time.Duration, error) {
	req, _ := http.NewRequest("POST", "http://"+l.srv.Addr+"/api/v1/apikeys", strings.NewReader(`{"name":"`+keyName+strconv.Itoa(r)+`"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Cookie", l.cookie)
	t := time.Now()
	res, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	took := time.Since(t)
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusCreated {
		return 0, fmt.Errorf("streamload: POST /api/v1/apikeys answered %s: %s", res.Status, b)
	}
	return took, nil
}

// keyName starts each round's key name; the round's number follows.
const keyName = "streamload-"

// marker precedes a round's number in an apikey.created event.
var marker = []byte(`"name":"` + keyName)

// open opens l.n streams, dialers at a time, and returns once each has
// its 200 and a goroutine reading it.
func (l *load) open(dialers int) error {
	next := make(chan int)
	errs := make(chan error, dialers)
	var wg sync.WaitGroup
	for range dialers {
		wg.Go(func() {
			for i := range next {
				c, rest, err := l.dial("/api/v1/events")
				if err != nil {
					errs <- fmt.Errorf("streamload: stream %d: %w", i, err)
					return
				}
				go l.read(i, c, rest)
			}
		})
	}
	var err error
feed:
	for i := range l.n {
		select {
		case next <- i:
		case err = <-errs:
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	return err
}

// dial opens one stream of path and reads its response's header. rest is
// what was read of its body.
func (l *load) dial(path string) (net.Conn, []byte, error) {
	c, err := net.Dial("tcp", l.srv.Addr)
	if err != nil {
		return nil, nil, err
	}
	req := "GET " + path + " HTTP/1.1\r\nHost: " + l.srv.Addr + "\r\nCookie: " + l.cookie + "\r\nAccept: text/event-stream\r\n\r\n"
	if _, err := io.WriteString(c, req); err != nil {
		c.Close()
		return nil, nil, err
	}
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	buf := make([]byte, 0, 2048)
	for {
		if len(buf) == cap(buf) {
			c.Close()
			return nil, nil, errors.New("a response header over 2 KiB")
		}
		m, err := c.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if end := bytes.Index(buf, []byte("\r\n\r\n")); end >= 0 {
			if !bytes.HasPrefix(buf, []byte("HTTP/1.1 200 ")) {
				c.Close()
				return nil, nil, fmt.Errorf("answered %q", buf)
			}
			_ = c.SetReadDeadline(time.Time{})
			return c, buf[end+4:], nil
		}
		if err != nil {
			c.Close()
			return nil, nil, err
		}
	}
}

// read reads stream i until it ends, noting when each round's event
// arrives. It looks for the marker in the raw bytes, chunk framing
// included: the server writes each event in one chunk.
func (l *load) read(i int, c net.Conn, rest []byte) {
	defer c.Close()
	buf := make([]byte, 1024)
	m := copy(buf, rest)
	for {
		now := time.Since(l.base).Nanoseconds()
		data := buf[:m]
		keep := max(0, m-len(marker)+1) // a marker may be cut at the end of a read
		for pos := 0; ; {
			j := bytes.Index(data[pos:], marker)
			if j < 0 {
				keep = max(keep, pos)
				break
			}
			start := pos + j + len(marker)
			k := bytes.IndexByte(data[start:], '"')
			if k < 0 {
				keep = pos + j // the round's number is cut: read on
				break
			}
			if r, err := strconv.Atoi(string(data[start : start+k])); err == nil && r >= 1 && r < len(l.got) {
				if l.arrive[(r-1)*l.n+i].CompareAndSwap(0, now) && int(l.got[r].Add(1)) == l.n {
					close(l.done[r])
				}
			}
			pos = start + k + 1
		}
		if bytes.Contains(data, []byte("event: stream.closing")) {
			l.closed.Add(1)
		}
		m = copy(buf, data[keep:])
		if m > len(buf)/2 {
			m = 0 // no event is this long: drop it
		}
		n, err := c.Read(buf[m:])
		m += n
		if err != nil {
			if !l.stop.Load() {
				l.ended.Add(1)
			}
			return
		}
	}
}

// A snapshot is what streamload reads of a system.live event.
type snapshot struct {
	Goroutines int    `json:"goroutines"`
	HeapBytes  uint64 `json:"heap_bytes"`
}

// live opens GET /api/v1/system/live and reads its snapshots, one a
// second, until enough returns true; it returns the last.
func (l *load) live(enough func(snapshot) bool) (snapshot, error) {
	var snap snapshot
	c, rest, err := l.dial("/api/v1/system/live")
	if err != nil {
		return snap, fmt.Errorf("streamload: GET /api/v1/system/live: %w", err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(60 * time.Second))
	sc := bufio.NewScanner(io.MultiReader(bytes.NewReader(rest), c))
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			if err := json.Unmarshal([]byte(d), &snap); err != nil {
				return snap, err
			}
			if enough(snap) {
				return snap, nil
			}
		}
	}
	return snap, fmt.Errorf("streamload: the system.live stream ended: %v", sc.Err())
}

// collect makes the server collect the garbage of the warm-up (a login's
// password hash leaves about 19 MiB): it sends health checks until a
// snapshot shows the heap at most half the largest an earlier one showed
// (a collection ran after the checks started), or 20 s passed. Memory the collector has freed would otherwise be reused by the
// streams without showing in the RSS.
func (l *load) collect() (snapshot, error) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			c := &http.Client{Timeout: 10 * time.Second}
			for {
				select {
				case <-stop:
					return
				default:
				}
				res, err := c.Get("http://" + l.srv.Addr + "/api/v1/health")
				if err != nil {
					return
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
			}
		})
	}
	deadline := time.Now().Add(20 * time.Second)
	var peak uint64
	last, err := l.live(func(s snapshot) bool {
		peak = max(peak, s.HeapBytes)
		return s.HeapBytes <= peak/2 || time.Now().After(deadline)
	})
	close(stop)
	wg.Wait()
	return last, err
}
