package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestMain makes the program under test refuse to listen on a default
// port (BRAIN_ADDR's or BRAIN_METRICS_ADDR's): a test that left one would
// fail while a brain runs on this machine, or break that brain. Tests
// bind port 0; serveEnv sets it. With execMainEnv set, the binary is
// brain, started by a test as a process of its own (see startProc), with
// the descriptor limit fileLimitEnv gives it, if any; with floodEnv, it
// is a client that holds connections to one (see startFlood).
func TestMain(m *testing.M) {
	d := defaultConfig()
	defaults := map[string]bool{port(d.Addr): true, port(d.MetricsAddr): true}
	listen = func(network, addr string) (net.Listener, error) {
		if defaults[port(addr)] {
			panic("a test listens on " + addr + ", a default port: give it serveEnv's BRAIN_ADDR and BRAIN_METRICS_ADDR (port 0)")
		}
		return net.Listen(network, addr)
	}
	if os.Getenv(execMainEnv) == "1" {
		applyFileLimit()
		dumpGoroutinesOnSignal()
		main()
		os.Exit(0)
	}
	if spec := os.Getenv(floodEnv); spec != "" {
		flood(spec)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func port(hostport string) string {
	_, p, _ := net.SplitHostPort(hostport)
	return p
}

// serveEnv is kv completed for a server under test: port 0 for both
// listeners and a fresh data dir, where kv does not say otherwise.
func serveEnv(tb testing.TB, kv map[string]string) map[string]string {
	tb.Helper()
	if kv == nil {
		kv = map[string]string{}
	}
	for k, v := range map[string]string{"BRAIN_ADDR": "127.0.0.1:0", "BRAIN_METRICS_ADDR": "127.0.0.1:0"} {
		if kv[k] == "" {
			kv[k] = v
		}
	}
	if kv["BRAIN_DATA_DIR"] == "" {
		kv["BRAIN_DATA_DIR"] = tb.TempDir()
	}
	return kv
}

// env returns a getenv over a fixed map.
func env(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

func TestOpenAPIUpToDate(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"openapi"}, env(nil), nil, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	committed, err := os.ReadFile("../../openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), committed) {
		t.Fatal("openapi.json is stale: it differs from `brain openapi`. Run `make openapi` and commit the result.")
	}
}

func TestOpenAPIIgnoresEnvironment(t *testing.T) {
	var plain, configured bytes.Buffer
	if err := run(context.Background(), []string{"openapi"}, env(nil), nil, &plain, io.Discard); err != nil {
		t.Fatal(err)
	}
	odd := env(map[string]string{"BRAIN_RATE_LIMIT_SESSION": "1/h", "BRAIN_MAX_API_KEYS": "2", "BRAIN_ADDR": "nonsense", "BRAIN_HASH_WAIT": "x"})
	if err := run(context.Background(), []string{"openapi"}, odd, nil, &configured, io.Discard); err != nil {
		t.Fatalf("brain openapi must not read the environment: %v", err)
	}
	if !bytes.Equal(plain.Bytes(), configured.Bytes()) {
		t.Fatal("brain openapi changed with the environment")
	}
}

func TestUnknownCommand(t *testing.T) {
	var stderr bytes.Buffer
	err := run(context.Background(), []string{"frobnicate"}, env(nil), nil, io.Discard, &stderr)
	if err == nil || !strings.Contains(err.Error(), "frobnicate") || !strings.Contains(stderr.String(), "usage:") {
		t.Fatalf("err = %v, stderr %q; want an error naming the command and the usage", err, stderr.String())
	}
}

// brain -h, brain serve -h and brain help list the commands first, then the
// settings.
func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"serve", "-h"}, {"help"}} {
		var stdout, stderr bytes.Buffer
		if err := run(context.Background(), args, env(nil), nil, &stdout, &stderr); err != nil {
			t.Fatalf("brain %s: %v", strings.Join(args, " "), err)
		}
		help := stderr.String() // -h writes to stderr, as flag does
		if args[0] == "help" {
			help = stdout.String()
		}
		commands, settings := strings.Index(help, "\n  user passwd --username NAME"), strings.Index(help, "\n  -metrics-addr")
		if !strings.HasPrefix(help, "usage: brain") || commands < 0 || settings < commands ||
			!strings.Contains(help, "\n  migrate ") || !strings.Contains(help, "BRAIN_METRICS_ADDR") {
			t.Errorf("brain %s printed:\n%s\nwant the usage with the commands, then the settings", strings.Join(args, " "), help)
		}
	}
}

// logPipe collects a running server's log lines and reports the address
// it listens on.
type logPipe struct {
	mu    sync.Mutex
	lines []string
	addr  chan string
	w     *io.PipeWriter
	read  chan struct{} // closed when every line written is in lines
}

func newLogPipe() *logPipe {
	r, w := io.Pipe()
	p := &logPipe{addr: make(chan string, 1), w: w, read: make(chan struct{})}
	re := regexp.MustCompile(`msg="brain listening" addr=(\S+)`)
	go func() {
		defer close(p.read)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			p.mu.Unlock()
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				p.addr <- m[1]
			}
		}
	}()
	return p
}

// close ends the log once its writer is done, and returns when every
// line is in: what a failed start-up wrote is then all there to show.
func (p *logPipe) close() {
	p.w.Close()
	<-p.read
}

func (p *logPipe) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines, "\n")
}

// MustRunServer runs the whole program on a free port with the given
// environment and returns its base URL. The server stops, and run must have
// returned nil, when the test ends.
func MustRunServer(tb testing.TB, kv map[string]string) (string, *logPipe) {
	tb.Helper()
	base, logs, _ := runServer(tb, kv)
	return base, logs
}

// serverStart and serverStop bound a test server's start-up and shut-down:
// far beyond what they take on an idle machine (well under a second), so
// that a loaded one, with the race detector on, meets them too.
const (
	serverStart = 2 * time.Minute
	serverStop  = 2 * time.Minute
)

// serverWork bounds a test's wait for what a running server does in the
// background (a job run, an event relayed to a stream or another replica),
// likewise sized for a loaded machine.
const serverWork = time.Minute

// runServer is MustRunServer that also returns a stop function, which
// shuts the server down and waits for run to return (also on cleanup).
func runServer(tb testing.TB, kv map[string]string) (string, *logPipe, func()) {
	tb.Helper()
	kv = serveEnv(tb, kv)
	logs := newLogPipe()
	ctx, cancel := context.WithCancel(context.Background())
	var runErr error
	done := make(chan struct{}) // closed when run has returned runErr
	go func() {
		runErr = run(ctx, nil, env(kv), nil, io.Discard, logs.w)
		logs.close()
		close(done)
	}()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case <-done:
				if runErr != nil {
					tb.Errorf("run returned %v after shutdown, want nil", runErr)
				}
			case <-time.After(serverStop):
				tb.Errorf("run did not return within %v of its context's cancelling "+
					"(the listeners closed, the requests drained, the storage closed)", serverStop)
			}
		})
	}
	tb.Cleanup(stop)
	select {
	case addr := <-logs.addr:
		return "http://" + addr, logs, stop
	case <-done:
		once.Do(func() {}) // reported here: stop has nothing to add
		tb.Fatalf("run returned before listening: %v\n%s", runErr, logs)
	case <-time.After(serverStart):
		tb.Fatalf("the server did not log that it listens within %v (settings read, storage opened and migrated, "+
			"the admin's password hashed, the listeners bound):\n%s", serverStart, logs)
	}
	return "", nil, nil
}

func TestServeEndToEnd(t *testing.T) {
	base, logs := MustRunServer(t, nil)

	res, err := http.Get(base + "/api/v1/health")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(body), `"status":"ok"`) {
		t.Fatalf("health = %d %s", res.StatusCode, body)
	}

	res, err = http.Get(base + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	served, _ := io.ReadAll(res.Body)
	res.Body.Close()
	committed, _ := os.ReadFile("../../openapi.json")
	if !bytes.Equal(served, committed) {
		t.Fatal("the running server's /openapi.json differs from the committed openapi.json (run `make openapi`?)")
	}
	if !strings.Contains(logs.String(), "route=/api/v1/health status=200") {
		t.Errorf("no access log line for the health check:\n%s", logs)
	}
}

func TestServeRefusesBadSettings(t *testing.T) {
	err := run(context.Background(), nil, env(serveEnv(t, map[string]string{"BRAIN_RATE_LIMIT_IP": "lots"})), nil, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "BRAIN_RATE_LIMIT_IP") {
		t.Fatalf("err = %v, want one naming BRAIN_RATE_LIMIT_IP", err)
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	err = run(context.Background(), []string{"--addr", taken.Addr().String()}, env(serveEnv(t, nil)), nil, io.Discard, io.Discard)
	want := taken.Addr().String() + " is in use (another brain?); set BRAIN_ADDR to another host:port"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
}

// A second brain on one machine, started with only another BRAIN_ADDR,
// finds the metrics port taken: the error says which setting to change.
// (The port taken here is a free one passed as BRAIN_METRICS_ADDR: a test
// never binds the real default.)
func TestServeExplainsABusyMetricsPort(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	kv := serveEnv(t, map[string]string{"BRAIN_METRICS_ADDR": taken.Addr().String()})
	err = run(context.Background(), nil, env(kv), nil, io.Discard, io.Discard)
	want := "metrics: " + taken.Addr().String() + " is in use (another brain?); set BRAIN_METRICS_ADDR to another host:port, or off"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
	// It stopped before creating the database and its admin, whose
	// random password would have been shown to a run that failed: the
	// corrected start is a first start.
	if entries, _ := os.ReadDir(kv["BRAIN_DATA_DIR"]); len(entries) != 0 {
		t.Fatalf("the failed start left %d file(s) in the data dir, want none", len(entries))
	}
	kv["BRAIN_METRICS_ADDR"] = "127.0.0.1:0"
	_, logs, stop := runServer(t, kv)
	stop()
	if !strings.Contains(logs.String(), "created user admin with a random password") {
		t.Fatalf("the corrected start did not create the admin:\n%s", logs)
	}
}

// A shutdown closes every stream with stream.closing, so it does not wait
// out BRAIN_SHUTDOWN_TIMEOUT for streams that never end by themselves.
func TestShutdownClosesStreams(t *testing.T) {
	base, _, stop := runServer(t, map[string]string{"BRAIN_ADMIN_PASSWORD": "correct horse battery", "BRAIN_COOKIE_SECURE": "false", "BRAIN_SHUTDOWN_TIMEOUT": "5m"})
	res, err := http.Post(base+"/api/v1/auth/login", "application/json", strings.NewReader(`{"username":"admin","password":"correct horse battery"}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	req, _ := http.NewRequest("GET", base+"/api/v1/events", nil)
	for _, c := range res.Cookies() {
		req.AddCookie(c)
	}
	stream, err := http.DefaultClient.Do(req)
	if err != nil || stream.StatusCode != 200 {
		t.Fatalf("open a stream: %v %v", stream, err)
	}
	defer stream.Body.Close()
	start := time.Now()
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	body, _ := io.ReadAll(stream.Body) // to the end: the server closes it
	if !strings.Contains(string(body), "event: stream.closing\ndata: {\"reason\":\"shutdown\"}\n\n") {
		t.Fatalf("the stream ended with %q, want stream.closing (shutdown)", body)
	}
	<-stopped
	if took := time.Since(start); took > serverStop {
		t.Fatalf("the shutdown took %v: it waited for the stream (the shutdown timeout is 5m)", took)
	}
}

// metricsOf reads the /metrics of the server that wrote logs: each
// series by name, with its labels if any, as /metrics writes them.
func metricsOf(t *testing.T, logs *logPipe) map[string]float64 {
	t.Helper()
	m := regexp.MustCompile(`msg="metrics listening" addr=(\S+)`).FindStringSubmatch(logs.String())
	if m == nil {
		t.Fatalf("no metrics listener in the log:\n%s", logs)
	}
	res, err := http.Get("http://" + m[1] + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	out := map[string]float64{}
	for sc := bufio.NewScanner(res.Body); sc.Scan(); {
		if i := strings.LastIndexByte(sc.Text(), ' '); i > 0 && !strings.HasPrefix(sc.Text(), "#") {
			out[sc.Text()[:i]], _ = strconv.ParseFloat(sc.Text()[i+1:], 64)
		}
	}
	return out
}
