// Command fairjobs measures whether brain's job queue is fair between
// users: how long one user's batch of one item takes, from its POST to its
// job succeeded, while another user's flood of large batches fills the
// queue.
//
// For each run, and in it each binary in turn (runs interleave the
// binaries), it starts the binary on a fresh database (SQLite in a
// temporary data dir or, with -database-url, a new PostgreSQL database on
// that server, dropped at the end), and logs in as two users: admin (A)
// and b (B, made with `brain user add`). A posts -batches distinct
// batches of -items items of about -text bytes each, -clients at a time.
// Once all are accepted, B posts a batch of one item every -every, -tries
// times, and follows each job (GET /api/v1/jobs/{id}, every 10 ms) until
// it succeeds: B's latency is from the POST to the first answer that says
// succeeded. Then, with -wait, it waits until every job of A's is final.
// A post answered 503 is sent again 5 s later (up to 5 times), as a
// client would, and counted.
//
//	cd bench && go run ./fairjobs -bin before=/tmp/brain-main -bin after=/tmp/brain-new -runs 3
//	cd bench && go run ./fairjobs -bin ... -database-url 'postgres://postgres@127.0.0.1:5432/test?sslmode=disable'
//
// Without -bin it builds ./cmd/brain of the repository around the working
// directory. It prints the date, the command, the machine's load, one line
// a run and binary (B's latencies, how many of A's jobs were final when
// B's last job succeeded, how long A's posts and A's jobs took), and for
// each binary B's p50 and max over every try of every run, against the
// target: every B job done within -target.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/brain-template/brain/bench/internal/loadtool"
)

// The passwords of the two users.
const (
	adminPassword = "fairjobs admin password"
	bPassword     = "fairjobs b's password"
)

// settings are fairjobs' flags.
type settings struct {
	bins                 loadtool.Binaries
	databaseURL          string
	runs, batches, items int
	text, clients, tries int
	every, target        time.Duration
	wait, keep           bool
	env                  loadtool.EnvList
}

func main() {
	var s settings
	flag.Var(&s.bins, "bin", "NAME=PATH of a brain binary to measure (repeatable; the runs interleave them); none builds ./cmd/brain of the repository as \"this\"")
	flag.StringVar(&s.databaseURL, "database-url", "", "empty for SQLite; a postgres:// URL of a server where fairjobs creates, and drops, a database for each run")
	flag.IntVar(&s.runs, "runs", 3, "runs of each binary")
	flag.IntVar(&s.batches, "batches", 60, "A's batches")
	flag.IntVar(&s.items, "items", 1000, "items in each of A's batches")
	flag.IntVar(&s.text, "text", 8000, "bytes of text in each of A's items, about (1000 items of 8000 bytes are an 8 MiB body, the most brain takes)")
	flag.IntVar(&s.clients, "clients", 4, "A's batches posted at once")
	flag.IntVar(&s.tries, "tries", 5, "B's batches, each of one item")
	flag.DurationVar(&s.every, "every", time.Second, "the time between two of B's batches")
	flag.DurationVar(&s.target, "target", 2*time.Second, "the most a B job may take for a PASS")
	flag.BoolVar(&s.wait, "wait", true, "after B's jobs, wait until every job of A's is final, and report when")
	flag.BoolVar(&s.keep, "keep", false, "keep the temporary directory, with each server's log (brain.log) and SQLite database, and say where")
	flag.Var(&s.env, "env", "KEY=VALUE added to the server's environment (repeatable)")
	flag.Parse()
	if s.runs < 1 || s.batches < 1 || s.batches > 100 || s.items < 1 || s.items > 1000 || s.text < 1 || s.clients < 1 || s.tries < 1 {
		log.Fatal("fairjobs: -runs, -batches (at most 100: A's jobs are read in one page), -items (at most 1000), -text, -clients and -tries must be at least 1")
	}
	if err := run(s); err != nil {
		log.Fatal(err)
	}
}

// A result is what one run of one binary measured.
type result struct {
	b          []time.Duration // B's latencies, in the order posted
	aFinal     int             // A's jobs final when B's last job succeeded
	aPosted    time.Duration   // from A's first post to the last 202
	aDone      time.Duration   // from A's first post until all of A's jobs were final; 0 without -wait
	aSucceeded int             // A's jobs that succeeded, with -wait
	retries    int             // 503s retried, A's and B's
}

func run(s settings) error {
	dir, err := os.MkdirTemp("", "fairjobs")
	if err != nil {
		return err
	}
	if s.keep {
		defer fmt.Fprintf(os.Stderr, "fairjobs: kept %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	if len(s.bins) == 0 {
		bin, err := loadtool.Build("fairjobs", dir)
		if err != nil {
			return err
		}
		s.bins.Set("this=" + bin)
	}
	load0 := loadtool.LoadAvg()
	results := make(map[string][]result)
	for r := range s.runs {
		for _, b := range s.bins {
			res, err := measure(s, b.Path, filepath.Join(dir, fmt.Sprintf("%s-%d", b.Name, r)))
			if err != nil {
				return fmt.Errorf("run %d of %s: %w", r+1, b.Name, err)
			}
			results[b.Name] = append(results[b.Name], res)
			fmt.Fprintf(os.Stderr, "fairjobs: run %d of %s: B %v; %d of A's %d jobs final then\n", r+1, b.Name, ms(res.b...), res.aFinal, s.batches)
		}
	}
	report(s, results, load0)
	return nil
}

// report prints the header, a line a run and binary, and each binary's
// verdict over every try of every run.
func report(s settings, results map[string][]result, load0 string) {
	dialect := "sqlite"
	if s.databaseURL != "" {
		dialect = "postgres"
	}
	fmt.Printf("\n== fairjobs %s\n", time.Now().UTC().Format(time.RFC3339))
	fmt.Printf("command:  %s\n", loadtool.Command("fairjobs"))
	fmt.Printf("machine:  %d CPUs shared by this tool, brain and the database; load average %s at start, %s at end\n", loadtool.NumCPU(), load0, loadtool.LoadAvg())
	fmt.Printf("load:     %s; A posts %d batches of %d items of about %d bytes, %d at a time; then B posts %d batches of 1 item, %s apart\n",
		dialect, s.batches, s.items, s.text, s.clients, s.tries, s.every)
	for _, b := range s.bins {
		var all []time.Duration
		for r, res := range results[b.Name] {
			line := fmt.Sprintf("%-8s run %d: B %s; A: %d of %d jobs final at B's last; posted in %s", b.Name, r+1, ms(res.b...), res.aFinal, s.batches, ms(res.aPosted))
			if res.aDone > 0 {
				line += fmt.Sprintf(", all final after %s (%d succeeded)", ms(res.aDone), res.aSucceeded)
			}
			if res.retries > 0 {
				line += fmt.Sprintf("; %d posts answered 503 and were sent again", res.retries)
			}
			fmt.Println(line)
			all = append(all, res.b...)
		}
		slices.Sort(all)
		ok := all[len(all)-1] <= s.target
		fmt.Printf("%-8s B over %d tries: p50 %s, max %s; target every B job within %s: %s\n", b.Name, len(all), ms(all[(len(all)-1)/2]), ms(all[len(all)-1]), s.target, loadtool.Verdict(ok))
	}
}

// measure is one run of bin: a fresh server and database, A's flood, B's
// tries, then (with -wait) A's jobs until all are final.
func measure(s settings, bin, dir string) (result, error) {
	var res result
	env, drop, err := serverEnv(s, dir)
	if err != nil {
		return res, err
	}
	defer drop()
	srv, err := startServer(bin, dir, env)
	if err != nil {
		return res, err
	}
	defer srv.Stop()
	a, b, err := loginBoth(s, srv.Addr)
	if err != nil {
		return res, err
	}
	t0 := time.Now()
	if err := floodA(s, a); err != nil {
		return res, err
	}
	res.aPosted = time.Since(t0)
	if res.b, err = triesB(s, b); err != nil {
		return res, err
	}
	res.retries = int(a.retries.Load() + b.retries.Load())
	jobs, err := a.jobs()
	if err != nil {
		return res, err
	}
	res.aFinal, _ = countFinal(jobs)
	if !s.wait {
		return res, nil
	}
	res.aDone, res.aSucceeded, err = waitAllFinal(s, a, t0)
	return res, err
}

// serverEnv is the environment of one run's server, with (given
// -database-url) a database of its own, and the function that drops it.
func serverEnv(s settings, dir string) ([]string, func(), error) {
	env := []string{
		"BRAIN_ADDR=127.0.0.1:0",
		"BRAIN_DATA_DIR=" + filepath.Join(dir, "data"),
		"BRAIN_ADMIN_PASSWORD=" + adminPassword,
		"BRAIN_METRICS_ADDR=off",
		"BRAIN_COOKIE_SECURE=false",
		"BRAIN_RATE_LIMIT_SESSION=1000000/min,burst=100000",
	}
	drop := func() {}
	if s.databaseURL != "" {
		dbURL, _, d, err := loadtool.CreateDatabase("fairjobs", s.databaseURL)
		if err != nil {
			return nil, nil, err
		}
		drop = d
		env = append(env, "BRAIN_DATABASE_URL="+dbURL)
	}
	return append(env, s.env...), drop, nil
}

// startServer starts bin in dir with env, then adds user B with `brain
// user add`.
func startServer(bin, dir string, env []string) (*loadtool.Server, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	srv, err := loadtool.Start("fairjobs", bin, dir, env)
	if err != nil {
		return nil, err
	}
	add := exec.Command(bin, "user", "add", "--username", "b")
	add.Env, add.Stdin = append(os.Environ(), env...), strings.NewReader(bPassword+"\n")
	if out, err := add.CombinedOutput(); err != nil {
		srv.Stop()
		return nil, fmt.Errorf("brain user add: %v: %s", err, out)
	}
	return srv, nil
}

// loginBoth logs in as A and as B, on one HTTP client.
func loginBoth(s settings, addr string) (a, b *user, err error) {
	c := &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: s.clients + s.tries}}
	if a, err = login(c, addr, "admin", adminPassword); err != nil {
		return nil, nil, err
	}
	if b, err = login(c, addr, "b", bPassword); err != nil {
		return nil, nil, err
	}
	return a, b, nil
}

// floodA posts A's -batches batches, -clients at a time, and returns the
// first error.
func floodA(s settings, a *user) error {
	next := make(chan int)
	go func() {
		for i := range s.batches {
			next <- i
		}
		close(next)
	}()
	var wg sync.WaitGroup
	errs := make(chan error, s.clients)
	for range s.clients {
		wg.Go(func() {
			for i := range next {
				if _, err := a.ingest(largeBatch(i, s.items, s.text)); err != nil {
					errs <- fmt.Errorf("user A's batch %d: %w", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// triesB posts B's -tries batches of one item, -every apart, follows each
// job on its own until it succeeds, and returns B's latencies in the
// order posted.
func triesB(s settings, b *user) ([]time.Duration, error) {
	lat := make([]time.Duration, s.tries)
	var wg sync.WaitGroup
	errs := make(chan error, s.tries)
	for i := range s.tries {
		time.Sleep(s.every * time.Duration(min(i, 1)))
		wg.Go(func() {
			start := time.Now()
			id, err := b.ingest(fmt.Appendf(nil, `{"project":"light","items":[{"text":"B's note number %d"}]}`, i))
			if err == nil {
				err = b.waitJob(id, 3*time.Minute)
			}
			lat[i] = time.Since(start)
			if err != nil {
				errs <- fmt.Errorf("user B's try %d: %w", i, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, err
	}
	return lat, nil
}

// countFinal counts the jobs that are final (succeeded or failed), and
// those that succeeded.
func countFinal(jobs []job) (final, succeeded int) {
	for _, j := range jobs {
		if j.Status == "succeeded" || j.Status == "failed" {
			final++
		}
		if j.Status == "succeeded" {
			succeeded++
		}
	}
	return final, succeeded
}

// waitAllFinal polls A's jobs every 200 ms, up to 15 minutes, until all
// -batches are final, and returns the time since t0 and how many
// succeeded.
func waitAllFinal(s settings, a *user, t0 time.Time) (time.Duration, int, error) {
	for deadline := time.Now().Add(15 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		jobs, err := a.jobs()
		if err != nil {
			return 0, 0, err
		}
		final, succeeded := countFinal(jobs)
		if final == s.batches {
			return time.Since(t0), succeeded, nil
		}
		if time.Now().After(deadline) {
			return 0, 0, fmt.Errorf("only %d of A's %d jobs final after 15 minutes", final, s.batches)
		}
	}
}

// words make up the text of A's items.
var words = strings.Fields(`the build failed on the release branch because the migration ran twice;
retry with a fresh cache and check the logs of the worker pool before merging. deploy notes: rotate
the api key, restart the queue, watch latency and error rates for an hour.`)

// largeBatch is A's batch i: items items of about text bytes, distinct
// from every other batch.
func largeBatch(i, items, text int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"project":"flood","items":[`)
	for n := range items {
		if n > 0 {
			b.WriteByte(',')
		}
		start := b.Len()
		fmt.Fprintf(&b, `{"text":"batch %d item %d`, i, n)
		for w := i + n; b.Len()-start < text; w++ {
			b.WriteByte(' ')
			b.WriteString(words[w%len(words)])
		}
		b.WriteString(`"}`)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// A user is a logged-in session of one server.
type user struct {
	c            *http.Client
	addr, cookie string
	retries      atomic.Int32 // 503s retried
}

func login(c *http.Client, addr, name, password string) (*user, error) {
	body, _ := json.Marshal(map[string]string{"username": name, "password": password})
	res, err := c.Post("http://"+addr+"/api/v1/auth/login", "application/json", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	for _, ck := range res.Cookies() {
		if ck.Name == "brain_session" {
			return &user{c: c, addr: addr, cookie: ck.Name + "=" + ck.Value}, nil
		}
	}
	return nil, fmt.Errorf("login as %s answered %s without a session cookie", name, res.Status)
}

// do sends a request with the session's cookie and returns the status and
// the body.
func (u *user) do(method, path string, body []byte) (int, []byte, error) {
	req, _ := http.NewRequest(method, "http://"+u.addr+path, bytes.NewReader(body))
	req.Header.Set("Cookie", u.cookie)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := u.c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, b, err
}

// ingest posts a batch and returns its job's id. A 503 (the database
// too slow for BRAIN_STORE_TIMEOUT, on a loaded machine) is retried after
// its Retry-After, up to 5 times, as a client should; retries counts them.
func (u *user) ingest(body []byte) (string, error) {
	status, b, err := u.do("POST", "/api/v1/memory/ingest", body)
	for try := 0; err == nil && status == http.StatusServiceUnavailable && try < 5; try++ {
		u.retries.Add(1)
		time.Sleep(5 * time.Second)
		status, b, err = u.do("POST", "/api/v1/memory/ingest", body)
	}
	if err != nil {
		return "", err
	}
	var a struct {
		JobID string `json:"job_id"`
	}
	if status != http.StatusAccepted || json.Unmarshal(b, &a) != nil || a.JobID == "" {
		return "", fmt.Errorf("ingest answered %d: %.300s", status, b)
	}
	return a.JobID, nil
}

// A job is what fairjobs reads of one.
type job struct {
	Status string `json:"status"`
}

// waitJob polls job id every 10 ms until it succeeds.
func (u *user) waitJob(id string, within time.Duration) error {
	for deadline := time.Now().Add(within); ; time.Sleep(10 * time.Millisecond) {
		status, b, err := u.do("GET", "/api/v1/jobs/"+id, nil)
		if err != nil {
			return err
		}
		var j job
		if status != http.StatusOK || json.Unmarshal(b, &j) != nil {
			return fmt.Errorf("GET job %s answered %d: %.300s", id, status, b)
		}
		switch {
		case j.Status == "succeeded":
			return nil
		case j.Status == "failed":
			return fmt.Errorf("job %s failed: %s", id, b)
		case time.Now().After(deadline):
			return fmt.Errorf("job %s still %s after %s", id, j.Status, within)
		}
	}
}

// jobs returns the user's newest 100 jobs.
func (u *user) jobs() ([]job, error) {
	status, b, err := u.do("GET", "/api/v1/jobs?limit=100", nil)
	if err != nil {
		return nil, err
	}
	var page struct {
		Jobs []job `json:"jobs"`
	}
	if status != http.StatusOK || json.Unmarshal(b, &page) != nil {
		return nil, fmt.Errorf("GET jobs answered %d: %.300s", status, b)
	}
	return page.Jobs, nil
}

// ms formats durations as milliseconds, joined by commas.
func ms(ds ...time.Duration) string {
	s := make([]string, len(ds))
	for i, d := range ds {
		s[i] = strconv.FormatInt(d.Milliseconds(), 10) + " ms"
	}
	return strings.Join(s, ", ")
}
