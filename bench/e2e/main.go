// Command e2e measures what brain costs per request, end to end, beside a
// bare huma v2 + chi v5 server that answers the same paths with the same
// bytes and does nothing else: no limits, no auth, no access log, no
// middleware. The difference is what brain's protections cost a request.
//
// It starts brain (the -bin given, or one it builds from the repository)
// with budgets raised so that nothing is refused, its log (info, the
// access log included) in a file; logs in as admin and creates an API
// key; copies brain's answer to each path into the bare server (this same
// program, run again as a child with -bare, so that each server is a
// process of its own whose CPU /proc reports); then, for each path, runs
// -pairs interleaved pairs of -d of load from -c keep-alive connections:
// brain, bare, brain, bare. For each run it reports requests/s, the
// server's CPU per request (user + system, from /proc/PID/stat, the
// stable figure: requests/s moves with whatever else the machine does),
// and the p50 and p99 latency; then the ratio of brain to bare per pair.
//
//	cd bench && go run ./e2e                      # in-memory limits, SQLite
//	cd bench && go run ./e2e -redis redis://127.0.0.1:6379/0 \
//		-database-url 'postgres://postgres@127.0.0.1:5432/test?sslmode=disable'
//
// The load generator runs on the same machine (2 cores here), so both
// servers share the cores with it alike.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/brain-template/brain/bench/internal/loadtool"
)

const tool = "e2e"

// adminPassword is the password of the admin user brain creates.
const adminPassword = "e2e admin password 123"

// A target is one request measured: a path and what authenticates it.
type target struct {
	name   string
	path   string
	header func(h http.Header) // the credentials; nil for none
}

func main() {
	bare := flag.String("bare", "", "serve the bare server on this address, answering with the JSON file -answers (internal: the tool runs itself so)")
	answers := flag.String("answers", "", "with -bare: the file of paths and their answers")
	bin := flag.String("bin", "", "the brain binary (default: build ./cmd/brain)")
	conns := flag.Int("c", 64, "concurrent keep-alive connections")
	dur := flag.Duration("d", 8*time.Second, "load per run")
	pairs := flag.Int("pairs", 2, "interleaved pairs per target: brain, then the bare server")
	redisURL := flag.String("redis", "", "BRAIN_REDIS_URL: rate limits in Redis")
	dbURL := flag.String("database-url", "", "a PostgreSQL server's URL: brain gets a database of its own on it (dropped after)")
	only := flag.String("only", "", "measure only the targets whose name contains this")
	flag.Parse()
	if *bare != "" {
		serveBare(*bare, *answers)
		return
	}
	dir, err := os.MkdirTemp("", "e2e")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if *bin == "" {
		if *bin, err = loadtool.Build(tool, dir); err != nil {
			log.Fatal(err)
		}
	}
	env := []string{"BRAIN_ADDR=127.0.0.1:0", "BRAIN_DATA_DIR=" + dir, "BRAIN_METRICS_ADDR=off", "BRAIN_LOG_LEVEL=info",
		"BRAIN_ADMIN_PASSWORD=" + adminPassword, "BRAIN_COOKIE_SECURE=false",
		"BRAIN_RATE_LIMIT_SESSION=1000000/s,burst=1000000", "BRAIN_RATE_LIMIT_APIKEY=1000000/s,burst=1000000", "BRAIN_RATE_LIMIT_IP=1000000/s,burst=1000000"}
	backend := "in-memory limits, SQLite"
	if *redisURL != "" {
		env = append(env, "BRAIN_REDIS_URL="+*redisURL)
		backend = "Redis limits"
	}
	if *dbURL != "" {
		u, _, drop, err := loadtool.CreateDatabase(tool, *dbURL)
		if err != nil {
			log.Fatal(err)
		}
		defer drop()
		env = append(env, "BRAIN_DATABASE_URL="+u)
		backend = strings.Replace(backend, "SQLite", "PostgreSQL", 1)
		if *redisURL != "" {
			backend += ", PostgreSQL"
		}
	}
	srv, err := loadtool.Start(tool, *bin, dir, env)
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Stop()
	base := "http://" + srv.Addr
	cookie, key := credentials(base)
	targets := []target{
		{"GET /api/v1/health", "/api/v1/health", nil},
		{"GET /api/v1/auth/me, API key", "/api/v1/auth/me", func(h http.Header) { h.Set("Authorization", "Bearer "+key) }},
		{"GET /api/v1/auth/me, session", "/api/v1/auth/me", func(h http.Header) { h.Set("Cookie", cookie) }},
	}
	targets = slices.DeleteFunc(targets, func(t target) bool { return !strings.Contains(t.name, *only) })
	bareAddr, bareCmd := startBare(dir, base, targets)
	defer func() { _ = bareCmd.Process.Kill(); _ = bareCmd.Wait() }()

	fmt.Printf("# %s\n# %s; %d connections, %s a run, %d interleaved pairs; %d CPUs; load %s\n\n",
		loadtool.Command(tool), backend, *conns, *dur, *pairs, loadtool.NumCPU(), loadtool.LoadAvg())
	fmt.Println("| request | server | req/s | µs CPU/req | p50 ms | p99 ms |")
	fmt.Println("|---|---|---|---|---|---|")
	ratios := map[string][][2]float64{}
	for _, t := range targets {
		for range *pairs {
			var r [2]result
			for i, s := range []struct {
				name string
				pid  int
				base string
			}{{"brain", srv.Cmd.Process.Pid, base}, {"bare", bareCmd.Process.Pid, "http://" + bareAddr}} {
				r[i] = load(s.base+t.path, t.header, s.pid, *conns, *dur)
				fmt.Printf("| %s | %s | %.0f | %.1f | %.2f | %.2f |\n", t.name, s.name, r[i].rps, r[i].cpuPerReq, r[i].p50, r[i].p99)
			}
			ratios[t.name] = append(ratios[t.name], [2]float64{r[0].cpuPerReq / r[1].cpuPerReq, r[0].p99 / r[1].p99})
		}
	}
	fmt.Println("\n| request | CPU/req brain ÷ bare, per pair | p99 brain ÷ bare, per pair |")
	fmt.Println("|---|---|---|")
	for _, t := range targets {
		var cpu, p99 []string
		for _, r := range ratios[t.name] {
			cpu, p99 = append(cpu, fmt.Sprintf("%.2f", r[0])), append(p99, fmt.Sprintf("%.2f", r[1]))
		}
		fmt.Printf("| %s | %s | %s |\n", t.name, strings.Join(cpu, ", "), strings.Join(p99, ", "))
	}
}

// credentials logs in as admin and creates an API key: the session
// cookie ("name=value") and the key.
func credentials(base string) (cookie, key string) {
	body, _ := json.Marshal(map[string]string{"username": "admin", "password": adminPassword})
	resp, err := http.Post(base+"/api/v1/auth/login", "application/json", bytes.NewReader(body))
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	for _, c := range resp.Cookies() {
		cookie = c.Name + "=" + c.Value
	}
	if resp.StatusCode != http.StatusOK || cookie == "" {
		log.Fatalf("%s: login: %s", tool, resp.Status)
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/api/v1/apikeys", strings.NewReader(`{"name":"e2e"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Cookie", cookie)
	req.Header.Set("Origin", base)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	var created struct {
		Key string `json:"key"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&created); err != nil || created.Key == "" {
		log.Fatalf("%s: create an API key: %s %v", tool, resp.Status, err)
	}
	return cookie, created.Key
}

// startBare writes brain's answer to each target's path to a file and
// starts this program again as the bare server answering them.
func startBare(dir, base string, targets []target) (string, *exec.Cmd) {
	answers := map[string][]byte{} // exact bytes (base64 in the file): a RawMessage would be compacted
	for _, t := range targets {
		req, _ := http.NewRequest(http.MethodGet, base+t.path, nil)
		if t.header != nil {
			t.header(req.Header)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			log.Fatalf("%s: %s answered %s: %s", tool, t.name, resp.Status, b)
		}
		answers[t.path] = b
	}
	f := dir + "/answers.json"
	b, _ := json.Marshal(answers)
	if err := os.WriteFile(f, b, 0o600); err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0") // a free port, handed over by its number
	if err != nil {
		log.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	self, _ := os.Executable()
	cmd := exec.Command(self, "-bare", addr, "-answers", f)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		log.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return addr, cmd
		}
		if time.Now().After(deadline) {
			log.Fatalf("%s: the bare server did not listen on %s", tool, addr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A result is one run of load against one server.
type result struct {
	rps, cpuPerReq, p50, p99 float64 // requests/s, µs, ms, ms
}

// load sends GET url from conns connections for d and measures the
// server pid's CPU over it.
func load(url string, header func(http.Header), pid, conns int, d time.Duration) result {
	tr := &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	warm := time.Now().Add(500 * time.Millisecond) // connections open and caches warm before the clock starts
	var stop atomic.Bool
	var mu sync.Mutex
	var lat []time.Duration
	var failed, done atomic.Int64
	var wg sync.WaitGroup
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodGet, url, nil)
			if header != nil {
				header(req.Header)
			}
			mine := make([]time.Duration, 0, 1<<14)
			for !stop.Load() {
				t0 := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					failed.Add(1)
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					failed.Add(1)
				}
				done.Add(1)
				if t0.After(warm) {
					mine = append(mine, time.Since(t0))
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	time.Sleep(time.Until(warm))
	cpu0, done0, t0 := loadtool.ProcCPU(pid), done.Load(), time.Now()
	time.Sleep(d)
	cpu, served, elapsed := loadtool.ProcCPU(pid)-cpu0, done.Load()-done0, time.Since(t0)
	stop.Store(true)
	wg.Wait()
	if n := failed.Load(); n > 0 {
		log.Fatalf("%s: %s: %d requests failed or were refused: raise the budgets", tool, url, n)
	}
	if served == 0 || len(lat) == 0 {
		log.Fatalf("%s: %s: no request completed", tool, url)
	}
	slices.Sort(lat)
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))]) / float64(time.Millisecond) }
	return result{rps: float64(served) / elapsed.Seconds(), cpuPerReq: float64(cpu) / float64(time.Microsecond) / float64(served), p50: q(0.5), p99: q(0.99)}
}
