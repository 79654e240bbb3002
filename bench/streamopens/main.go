// Command streamopens measures what a client that reopens a stream in a
// loop costs brain: one API key reconnecting GET /api/v1/events with
// Last-Event-ID: 1-1, so that each open the server admits replays every
// event it keeps for the key's user, or GET /api/v1/jobs/{id}/log of a
// job that has ended, so that each admitted open reads the job from the
// database and answers 204 — as fast as it can, for -d.
//
// For each binary (-bin name=path, repeatable; by default this
// repository's brain, built) and each path, it starts the binary on a
// free loopback port with a temporary SQLite data dir, metrics off and
// the session budget out of the way (the stream plane keeps its
// defaults); logs in as admin; gives admin -events events (API keys
// created and deleted, with the session) and one ingested batch (with the
// key), whose job it waits for. Then -c clients open the path with the
// key, one request at a time each, for -d: an open the server admits is
// read to its end (the events: to the last event kept; the job log: its
// 204), a refused one (429) is read, and each is closed before the next.
// Runs interleave the binaries, -rounds times, so they share the
// machine's load alike.
//
//	go build -o /tmp/brain-after ./cmd/brain   # and the same of the base, as /tmp/brain-before
//	cd bench && go run ./streamopens -bin before=/tmp/brain-before -bin after=/tmp/brain-after -d 10s -rounds 2
//
// Each run prints the opens admitted and refused a second, the bytes the
// admitted opens carried a second (the replays), and the server's CPU a
// second, per open (admitted or refused) and per admitted open (from
// /proc/PID/stat). An admitted open of
// the job log reads the job once (nothing else of it reaches the
// database: its credentials are cached), so its opens a second are its
// database reads a second.
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
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/brain-template/brain/bench/internal/loadtool"
)

// adminPassword is the password of the admin user the server creates.
const adminPassword = "streamopens admin password"

// The paths measured.
const (
	eventsPath = "/api/v1/events"
	jobLogPath = "/api/v1/jobs/{id}/log"
)

// settings are streamopens' flags.
type settings struct {
	bins              loadtool.EnvList
	d                 time.Duration
	c, events, rounds int
	paths             []string
}

func main() {
	s := parseFlags()
	dir, err := os.MkdirTemp("", "streamopens")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if len(s.bins) == 0 {
		bin, err := loadtool.Build("streamopens", dir)
		if err != nil {
			log.Fatal(err)
		}
		s.bins = append(s.bins, "this="+bin)
	}
	fmt.Printf("== streamopens %s\n", time.Now().UTC().Format(time.RFC3339))
	fmt.Printf("command:  %s\n", loadtool.Command("streamopens"))
	fmt.Printf("machine:  %d CPUs, client and server together; load average %s at the start\n", loadtool.NumCPU(), loadtool.LoadAvg())
	fmt.Printf("%-8s %-22s %5s %11s %11s %12s %8s %9s %12s  %s\n", "binary", "path", "round", "admitted/s", "refused/s", "replayed/s", "CPU s/s", "CPU/open", "CPU/admitted", "refusals")
	for r := 1; r <= s.rounds; r++ {
		if err := round(s, dir, r); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Printf("machine:  load average %s at the end\n", loadtool.LoadAvg())
}

// parseFlags reads and checks the flags; it exits on a bad one.
func parseFlags() settings {
	var s settings
	flag.Var(&s.bins, "bin", "name=path of a brain binary to measure (repeatable); none builds ./cmd/brain of the repository around the working directory, as \"this\"")
	flag.DurationVar(&s.d, "d", 10*time.Second, "how long each run opens streams")
	flag.IntVar(&s.c, "c", 8, "clients opening streams at once, one request at a time each (the cap is 16 a key)")
	flag.IntVar(&s.events, "events", 1000, "events given to admin before the runs (an API key created, then deleted, is two)")
	flag.IntVar(&s.rounds, "rounds", 2, "runs of each binary and path, interleaved")
	paths := flag.String("paths", "events,joblog", "what to open: events, joblog, or both")
	flag.Parse()
	if s.c < 1 || s.c > 16 || s.rounds < 1 || s.events < 2 || s.d <= 0 {
		log.Fatal("streamopens: -c 1 to 16, -rounds and -d positive, -events at least 2")
	}
	var err error
	if s.paths, err = parsePaths(*paths); err != nil {
		log.Fatal(err)
	}
	return s
}

// parsePaths turns -paths into the paths to open.
func parsePaths(list string) ([]string, error) {
	var which []string
	for _, p := range strings.Split(list, ",") {
		switch strings.TrimSpace(p) {
		case "events":
			which = append(which, eventsPath)
		case "joblog":
			which = append(which, jobLogPath)
		default:
			return nil, fmt.Errorf("streamopens: -paths: %q is neither events nor joblog", p)
		}
	}
	return which, nil
}

// round is round r: a run of each binary on each path, printed as it
// ends.
func round(s settings, dir string, r int) error {
	for _, path := range s.paths {
		for _, b := range s.bins {
			name, bin, _ := strings.Cut(b, "=")
			res, err := measure(bin, filepath.Join(dir, fmt.Sprint(name, r, filepath.Base(path))), path, s.c, s.events, s.d)
			if err != nil {
				return fmt.Errorf("streamopens: %s: %v", name, err)
			}
			fmt.Printf("%-8s %-22s %5d %11.1f %11.1f %9.1f KB %8.2f %6.0f µs %9.2f ms  %s\n", name, path, r,
				res.per(res.admitted), res.per(res.refused), res.per(res.bytes)/1000, res.cpu.Seconds()/res.took.Seconds(),
				float64(res.cpu)/float64(time.Microsecond)/float64(max(res.admitted+res.refused, 1)),
				float64(res.cpu)/float64(time.Millisecond)/float64(max(res.admitted, 1)), res.policies())
		}
	}
	return nil
}

// A result is one run's counts.
type result struct {
	admitted, refused, bytes int64
	byPolicy                 map[string]int64 // refusals, by the policy named
	cpu, took                time.Duration
}

func (r *result) per(n int64) float64 { return float64(n) / r.took.Seconds() }

func (r *result) policies() string {
	var out []string
	for p, n := range r.byPolicy {
		out = append(out, fmt.Sprintf("%s %d", p, n))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// measure starts bin with its data in dir, prepares admin's events and
// job, and opens path as fast as c clients can for d.
func measure(bin, dir, path string, c, events int, d time.Duration) (*result, error) {
	srv, err := startServer(bin, dir)
	if err != nil {
		return nil, err
	}
	defer srv.Stop()
	cl := &client{base: "http://" + srv.Addr, http: &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 32}}}
	key, job, last, err := cl.prepare(events)
	if err != nil {
		return nil, err
	}
	target := strings.ReplaceAll(path, "{id}", job)
	return openLoop(cl, srv.Cmd.Process.Pid, target, key, last, c, d)
}

// startServer starts bin with its data in dir.
func startServer(bin, dir string) (*loadtool.Server, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return loadtool.Start("streamopens", bin, dir, []string{
		"BRAIN_ADDR=127.0.0.1:0",
		"BRAIN_DATA_DIR=" + filepath.Join(dir, "data"),
		"BRAIN_ADMIN_PASSWORD=" + adminPassword,
		"BRAIN_METRICS_ADDR=off",
		"BRAIN_COOKIE_SECURE=false",
		"BRAIN_RATE_LIMIT_SESSION=100000/min,burst=100000",
	})
}

// prepare logs in as admin, creates the API key the clients use, gives
// admin events (API keys created and deleted) and one ended job, and
// returns the key, the job's id and the id of the newest event kept.
func (c *client) prepare(events int) (key, job, last string, err error) {
	if err := c.login(); err != nil {
		return "", "", "", err
	}
	if key, err = c.newKey("streamopens"); err != nil {
		return "", "", "", err
	}
	for i := range events / 2 {
		id, err := c.newKey(fmt.Sprint("e", i))
		if err != nil {
			return "", "", "", err
		}
		if err := c.do("DELETE", "/api/v1/apikeys/"+id, nil, "", http.StatusNoContent, nil); err != nil {
			return "", "", "", err
		}
	}
	if job, err = c.ingest(key); err != nil {
		return "", "", "", err
	}
	if last, err = c.lastEvent(); err != nil {
		return "", "", "", err
	}
	return key, job, last, nil
}

// openLoop has c clients open target with key, one request at a time
// each, until d has passed, and counts the answers and the CPU of the
// server (process pid). The first error or unexpected status ends it.
func openLoop(cl *client, pid int, target, key, last string, c int, d time.Duration) (*result, error) {
	res := &result{byPolicy: map[string]int64{}}
	var mu sync.Mutex
	var failed atomic.Pointer[error] // the first failure; a Value would panic on a second of another type
	cpu0, start := loadtool.ProcCPU(pid), time.Now()
	end := start.Add(d)
	var wg sync.WaitGroup
	for range c {
		wg.Go(func() {
			for time.Now().Before(end) {
				status, n, policy, err := cl.open(target, key, last)
				mu.Lock()
				if err := res.count(target, status, n, policy, err); err != nil {
					failed.CompareAndSwap(nil, &err)
				}
				mu.Unlock()
				if failed.Load() != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	res.took, res.cpu = time.Since(start), loadtool.ProcCPU(pid)-cpu0
	if p := failed.Load(); p != nil {
		return nil, *p
	}
	return res, nil
}

// count adds one open's answer to r: admitted (200, or 204 for an ended
// job's log) or refused (429). It returns the open's error, or one for
// any other status.
func (r *result) count(target string, status int, n int64, policy string, err error) error {
	switch {
	case err != nil:
		return err
	case status == http.StatusOK || status == http.StatusNoContent:
		r.admitted++
		r.bytes += n
	case status == http.StatusTooManyRequests:
		r.refused++
		r.byPolicy[policy]++
	default:
		return fmt.Errorf("GET %s answered %d", target, status)
	}
	return nil
}

// A client calls one server, as admin's session (after login) or with an
// API key.
type client struct {
	base   string
	http   *http.Client
	cookie string
}

// do sends method path with body as JSON and the session's cookie (or
// key, when not ""), wants status, and decodes the answer into out.
func (c *client) do(method, path string, body any, key string, status int, out any) error {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, c.base+path, rd)
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("X-API-Key", key)
	} else {
		req.Header.Set("Cookie", c.cookie)
	}
	res, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != status {
		return fmt.Errorf("%s %s answered %d: %s", method, path, res.StatusCode, b)
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

func (c *client) login() error {
	res, err := c.http.Post(c.base+"/api/v1/auth/login", "application/json", strings.NewReader(`{"username":"admin","password":"`+adminPassword+`"}`))
	if err != nil {
		return err
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	for _, ck := range res.Cookies() {
		if ck.Name == "brain_session" {
			c.cookie = ck.Name + "=" + ck.Value
			return nil
		}
	}
	return fmt.Errorf("login answered %s without a session cookie", res.Status)
}

// newKey creates an API key of admin's and returns its id, or, for the
// first, its secret.
func (c *client) newKey(name string) (string, error) {
	var k struct{ ID, Key string }
	if err := c.do("POST", "/api/v1/apikeys", map[string]string{"name": name}, "", http.StatusCreated, &k); err != nil {
		return "", err
	}
	if name == "streamopens" {
		return k.Key, nil
	}
	return k.ID, nil
}

// ingest sends one batch with key and waits until its job has ended.
func (c *client) ingest(key string) (string, error) {
	var a struct {
		JobID string `json:"job_id"`
	}
	batch := map[string]any{"project": "streamopens", "items": []map[string]string{{"text": "a note"}}}
	if err := c.do("POST", "/api/v1/memory/ingest", batch, key, http.StatusAccepted, &a); err != nil {
		return "", err
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var j struct{ Status string }
		if err := c.do("GET", "/api/v1/jobs/"+a.JobID, nil, key, http.StatusOK, &j); err != nil {
			return "", err
		}
		if j.Status == "succeeded" || j.Status == "failed" {
			return a.JobID, nil
		}
	}
	return "", errors.New("the batch's job did not end within 30 s")
}

// lastEvent is the id of the newest event the server keeps for admin,
// read with the session (so the key's budgets are untouched): a replay
// from 1-1 ends with it.
func (c *client) lastEvent() (string, error) {
	req, _ := http.NewRequest("GET", c.base+eventsPath, nil)
	req.Header.Set("Cookie", c.cookie)
	req.Header.Set("Last-Event-ID", "1-1")
	res, err := c.http.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s answered %s", eventsPath, res.Status)
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		for sc := bufio.NewScanner(res.Body); sc.Scan(); {
			lines <- sc.Text()
		}
	}()
	last := ""
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				return "", errors.New("the event stream ended")
			}
			if id, ok := strings.CutPrefix(l, "id: "); ok {
				last = id
			}
		case <-time.After(500 * time.Millisecond): // the replay is over
			if last == "" {
				return "", errors.New("no event in the replay")
			}
			return last, nil
		}
	}
}

// open opens path with key once: an admitted stream is read to the event
// last, whose id ends the replay, and closed. It returns the status, the
// bytes of an admitted answer's body, and a refusal's policy.
func (c *client) open(path, key, last string) (status int, n int64, policy string, err error) {
	req, _ := http.NewRequest("GET", c.base+path, nil)
	req.Header.Set("X-API-Key", key)
	if path == eventsPath {
		req.Header.Set("Last-Event-ID", "1-1")
	}
	res, err := c.http.Do(req)
	if err != nil {
		return 0, 0, "", err
	}
	defer res.Body.Close()
	switch res.StatusCode {
	case http.StatusOK:
		rd := bufio.NewReader(res.Body)
		want := "id: " + last + "\n"
		for {
			line, err := rd.ReadString('\n')
			n += int64(len(line))
			if err != nil {
				return 0, n, "", fmt.Errorf("the replay ended before event %s: %w", last, err)
			}
			if line == want {
				return res.StatusCode, n, "", nil
			}
		}
	case http.StatusTooManyRequests:
		var env struct{ Details struct{ Policy string } }
		b, _ := io.ReadAll(res.Body)
		_ = json.Unmarshal(b, &env)
		return res.StatusCode, 0, env.Details.Policy, nil
	}
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, int64(len(b)), "", nil
}
