// Command ingestflood measures how fast brain accepts memory batches
// (POST /api/v1/memory/ingest): first ingests, each a new batch that the
// server stores and enqueues, and replays, the same batches sent again,
// which the server answers from the idempotency key without enqueuing
// anything.
//
// It builds brain (or takes -bin) and starts it on a free loopback port,
// on SQLite in a temporary data dir or, with -database-url, on a new
// PostgreSQL database it creates on that server and drops at the end. It
// logs in as admin, creates an API key and sends every request with it
// (X-API-Key); the ingest and projects budgets and the session budget are
// raised out of the way. Then -c clients each send distinct batches of
// -items items, one request at a time, for -d: every 202 with replayed
// false is a first ingest. Unless -drain=false it waits until the
// server's workers have stored every accepted item (River workers in the
// same process, which compete with the accept path for the CPU while
// they run), so that the replays meet an idle queue. Then the same
// clients send the same bodies again, in the same order, cycling, for
// -d: every 202 with replayed true and the first job's id is a replay.
// Anything else (another status, a transport error, a replay that names
// another job or says replayed false) is an error, counted by kind.
//
//	cd bench && go run ./ingestflood -c 32 -d 10s
//	cd bench && go run ./ingestflood -database-url 'postgres://postgres@127.0.0.1:5432/test?sslmode=disable'
//
// It prints the date, the command, the settings, each phase's rate,
// latency (p50, p99, max of the 202s), errors and CPU, and the ratio of
// replays to first ingests a second against the target of 10. -pprof DIR
// builds brain with net/http/pprof added (a file laid over cmd/brain with
// go build -overlay; the tree is not touched) and writes a CPU profile of
// the server during each phase to DIR.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/brain-template/brain/bench/internal/loadtool"
)

// targetRatio is the least ratio of replays to first ingests a second.
const targetRatio = 10

// adminPassword is the password of the admin user the server creates.
const adminPassword = "ingestflood admin password"

// settings are ingestflood's flags.
type settings struct {
	bin, databaseURL, pprofDir string
	clients, items, textBytes  int
	d, drainTimeout            time.Duration
	drain, withID              bool
	env                        loadtool.EnvList
}

func main() {
	var s settings
	flag.StringVar(&s.bin, "bin", "", "the brain binary to start; empty builds ./cmd/brain of the repository around the working directory")
	flag.StringVar(&s.databaseURL, "database-url", "", "empty for SQLite; a postgres:// URL of a server where ingestflood creates, and at the end drops, a database of its own")
	flag.IntVar(&s.clients, "c", 32, "concurrent clients, each one request at a time")
	flag.DurationVar(&s.d, "d", 10*time.Second, "how long each phase (first ingests, then replays) sends")
	flag.IntVar(&s.items, "items", 10, "items per batch")
	flag.IntVar(&s.textBytes, "text", 200, "bytes of text per item, about")
	flag.BoolVar(&s.withID, "ingest-id", false, "send an ingest_id in each body; by default the server derives the key from the body")
	flag.BoolVar(&s.drain, "drain", true, "between the phases, wait until the workers have stored every accepted item")
	flag.DurationVar(&s.drainTimeout, "drain-timeout", 10*time.Minute, "how long to wait for the workers at most")
	flag.StringVar(&s.pprofDir, "pprof", "", "build brain with net/http/pprof and write the server's CPU profile of each phase to this directory")
	flag.Var(&s.env, "env", "KEY=VALUE added to the server's environment (repeatable): GOGC, GOMAXPROCS, another setting")
	flag.Parse()
	if s.clients < 1 || s.items < 1 || s.items > 1000 || s.textBytes < 1 || s.textBytes > 60000 || s.d <= 0 {
		log.Fatal("ingestflood: -c must be at least 1, -items 1 to 1000, -text 1 to 60000, -d positive")
	}
	if s.pprofDir != "" && s.bin != "" {
		log.Fatal("ingestflood: -pprof builds its own binary; leave -bin out")
	}
	if err := run(s); err != nil {
		log.Fatal(err)
	}
}

// run starts the server, measures the first ingests, the wait for the
// workers and the replays, and reports.
func run(s settings) error {
	dir, err := os.MkdirTemp("", "ingestflood")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var pprofAddr string
	if s.bin, pprofAddr, err = binary(s, dir); err != nil {
		return err
	}
	env, dbName, drop, err := serverEnv(s, dir, pprofAddr)
	if err != nil {
		return err
	}
	defer drop()
	srv, err := loadtool.Start("ingestflood", s.bin, dir, env)
	if err != nil {
		return err
	}
	defer srv.Stop()
	key, err := apiKey(srv.Addr)
	if err != nil {
		return err
	}
	l := newLoad(srv, key, dbName, s)
	o := measure(s, l, pprofAddr)
	report(s, srv, env, l, o)
	return nil
}

// binary is -bin or, without it, ./cmd/brain built in dir; with -pprof,
// built to serve net/http/pprof on pprofAddr, a free address.
func binary(s settings, dir string) (bin, pprofAddr string, err error) {
	if s.bin != "" {
		return s.bin, "", nil
	}
	if s.pprofDir != "" {
		if err := os.MkdirAll(s.pprofDir, 0o755); err != nil {
			return "", "", err
		}
		if pprofAddr, err = freeAddr(); err != nil {
			return "", "", err
		}
	}
	if bin, err = build(dir, s.pprofDir != ""); err != nil {
		return "", "", err
	}
	return bin, pprofAddr, nil
}

// serverEnv is the server's environment, with (given -database-url) a
// database of its own, its name, and the function that drops it.
func serverEnv(s settings, dir, pprofAddr string) (env []string, dbName string, drop func(), err error) {
	env = []string{
		"BRAIN_ADDR=127.0.0.1:0",
		"BRAIN_DATA_DIR=" + filepath.Join(dir, "data"),
		"BRAIN_ADMIN_PASSWORD=" + adminPassword,
		"BRAIN_METRICS_ADDR=off",
		"BRAIN_COOKIE_SECURE=false",
		"BRAIN_RATE_LIMIT_SESSION=1000000/min,burst=100000",
		"BRAIN_BUDGETS=ingest=1000000/h;100000/s projects=1000000/h;100000/s",
	}
	drop = func() {}
	if s.databaseURL != "" {
		var dbURL string
		if dbURL, dbName, drop, err = loadtool.CreateDatabase("ingestflood", s.databaseURL); err != nil {
			return nil, "", nil, err
		}
		env = append(env, "BRAIN_DATABASE_URL="+dbURL)
	}
	if pprofAddr != "" {
		env = append(env, pprofEnv+"="+pprofAddr)
	}
	return append(env, s.env...), dbName, drop, nil
}

// An outcome is what one run measured: the two phases, the wait for the
// workers between them, and the machine's load around them.
type outcome struct {
	first, replay phase
	accepted      int // items accepted in the first phase
	drained       time.Duration
	drainErr      error
	load0, load1  string
}

// measure runs the first ingests, waits (with -drain) until the workers
// have stored every accepted item, then runs the replays.
func measure(s settings, l *load, pprofAddr string) outcome {
	var o outcome
	o.load0 = loadtool.LoadAvg()
	o.first = l.firsts(s.d, pprofAddr, s.pprofDir)
	o.accepted = o.first.ok * s.items
	if s.drain {
		o.drained, o.drainErr = l.waitStored(o.accepted, s.drainTimeout)
	}
	o.replay = l.replays(s.d, pprofAddr, s.pprofDir)
	o.load1 = loadtool.LoadAvg()
	return o
}

// report prints the header, each phase, the workers' wait and the
// verdict.
func report(s settings, srv *loadtool.Server, env []string, l *load, o outcome) {
	dialect := "sqlite"
	if s.databaseURL != "" {
		dialect = "postgres"
	}
	ratio := 0.0
	if o.first.rate() > 0 {
		ratio = o.replay.rate() / o.first.rate()
	}
	fmt.Printf("\n== ingestflood %s\n", time.Now().UTC().Format(time.RFC3339))
	fmt.Printf("command:  %s\n", loadtool.Command("ingestflood"))
	fmt.Printf("server:   %s, %s, with %s (its log in a file, deleted at exit)\n", srv.Cmd.Path, dialect, strings.Join(redact(env[3:]), " "))
	fmt.Printf("machine:  %d CPUs shared by client, server (accept path and River workers) and database; load average %s at start, %s at end\n",
		loadtool.NumCPU(), o.load0, o.load1)
	fmt.Printf("load:     %d clients, one request at a time each, API key; batches of %d items of about %d bytes of text (%d bytes of JSON on average); %s each phase; key %s\n",
		s.clients, s.items, s.textBytes, l.meanBody(), s.d, map[bool]string{true: "an ingest_id in the body", false: "derived by the server"}[s.withID])
	o.first.print("first")
	fmt.Printf("workers:  %d of %d accepted items stored by the end of the first phase; %s\n", l.storedAtFirstEnd, o.accepted, drainNote(s, o))
	o.replay.print("replay")
	fmt.Printf("target:   replays/s >= %d x first ingests/s: %.1f x (%.0f / %.0f): %s\n", targetRatio, ratio, o.replay.rate(), o.first.rate(), loadtool.Verdict(ratio >= targetRatio))
	if o.first.errors() > 0 || o.replay.errors() > 0 {
		fmt.Printf("warning:  %d errors; see the phases above and the server's log\n", o.first.errors()+o.replay.errors())
	}
}

// drainNote says how the wait for the workers went.
func drainNote(s settings, o outcome) string {
	switch {
	case !s.drain:
		return "not waited for (-drain=false)"
	case o.drainErr != nil:
		return o.drainErr.Error()
	}
	return fmt.Sprintf("all %d stored %s after the phase (%.0f items/s over phase and wait)", o.accepted, o.drained.Round(100*time.Millisecond),
		float64(o.accepted)/(o.first.elapsed+o.drained).Seconds())
}

// redact hides the database URL's password, if any, in env.
func redact(env []string) []string {
	out := make([]string, len(env))
	for i, kv := range env {
		if v, ok := strings.CutPrefix(kv, "BRAIN_DATABASE_URL="); ok {
			if u, err := url.Parse(v); err == nil {
				kv = "BRAIN_DATABASE_URL=" + u.Redacted()
			}
		}
		if strings.Contains(kv, " ") {
			k, v, _ := strings.Cut(kv, "=")
			kv = k + "=" + strconv.Quote(v)
		}
		out[i] = kv
	}
	return out
}

// pprofEnv names the address the -pprof build serves net/http/pprof on.
const pprofEnv = "INGESTFLOOD_PPROF_ADDR"

// pprofSource is laid over cmd/brain by a -pprof build.
const pprofSource = `package main

import (
	"net/http"
	_ "net/http/pprof"
	"os"
)

func init() {
	if addr := os.Getenv("` + pprofEnv + `"); addr != "" {
		go func() { _ = http.ListenAndServe(addr, nil) }()
	}
}
`

// build builds cmd/brain of the repository that holds the working
// directory into dir; withPprof lays a file over the package that serves
// net/http/pprof (go build -overlay: the tree is not touched).
func build(dir string, withPprof bool) (string, error) {
	var flags []string
	if withPprof {
		root, err := loadtool.RepoRoot("ingestflood")
		if err != nil {
			return "", err
		}
		src := filepath.Join(dir, "pprof.go")
		if err := os.WriteFile(src, []byte(pprofSource), 0o644); err != nil {
			return "", err
		}
		overlay, _ := json.Marshal(map[string]map[string]string{"Replace": {filepath.Join(root, "cmd", "brain", "zz_ingestflood_pprof.go"): src}})
		ov := filepath.Join(dir, "overlay.json")
		if err := os.WriteFile(ov, overlay, 0o644); err != nil {
			return "", err
		}
		flags = append(flags, "-overlay", ov)
	}
	return loadtool.Build("ingestflood", dir, flags...)
}

// freeAddr returns a loopback address nothing listens on now.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// apiKey logs in as admin and creates an API key with the session.
func apiKey(addr string) (string, error) {
	client := &http.Client{Timeout: 30 * time.Second}
	res, err := client.Post("http://"+addr+"/api/v1/auth/login", "application/json",
		strings.NewReader(`{"username":"admin","password":"`+adminPassword+`"}`))
	if err != nil {
		return "", err
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	var cookie string
	for _, c := range res.Cookies() {
		if c.Name == "brain_session" {
			cookie = c.Name + "=" + c.Value
		}
	}
	if cookie == "" {
		return "", fmt.Errorf("ingestflood: login answered %s without a session cookie", res.Status)
	}
	req, _ := http.NewRequest("POST", "http://"+addr+"/api/v1/apikeys", strings.NewReader(`{"name":"ingestflood"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Cookie", cookie)
	res, err = client.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	var created struct {
		Key string `json:"key"`
	}
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusCreated || json.Unmarshal(b, &created) != nil || created.Key == "" {
		return "", fmt.Errorf("ingestflood: POST /api/v1/apikeys answered %s: %s", res.Status, b)
	}
	return created.Key, nil
}
