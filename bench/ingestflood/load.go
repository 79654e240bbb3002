package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/brain-template/brain/bench/internal/loadtool"
)

// A load is the clients of one run and the batches the server accepted
// from each.
type load struct {
	srv     *loadtool.Server
	key     string
	dbName  string // the PostgreSQL database, "" on SQLite
	clients int
	http    *http.Client
	batch   []*batcher
	// sent[c] are client c's accepted bodies, in order, and jobs[c] the
	// job each was given.
	sent [][][]byte
	jobs [][]string

	storedAtFirstEnd int
}

func newLoad(srv *loadtool.Server, key, dbName string, s settings) *load {
	tr := &http.Transport{MaxIdleConnsPerHost: s.clients, MaxConnsPerHost: s.clients}
	l := &load{srv: srv, key: key, dbName: dbName, clients: s.clients, http: &http.Client{Transport: tr, Timeout: 60 * time.Second},
		sent: make([][][]byte, s.clients), jobs: make([][]string, s.clients)}
	at := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	for c := range s.clients {
		l.batch = append(l.batch, &batcher{client: c, items: s.items, textBytes: s.textBytes, withID: s.withID, at: at})
	}
	return l
}

// A phase is what one phase's clients got.
type phase struct {
	ok      int
	lat     []time.Duration // of the 202s counted in ok, sorted
	errs    map[string]int  // by kind
	elapsed time.Duration   // from the start until the last client's last answer
	cpu     cpuReading      // spent during the phase
}

func (p phase) rate() float64 {
	if p.elapsed <= 0 {
		return 0
	}
	return float64(p.ok) / p.elapsed.Seconds()
}

func (p phase) errors() int {
	n := 0
	for _, v := range p.errs {
		n += v
	}
	return n
}

func (p phase) print(name string) {
	per := func(d time.Duration) string {
		if p.ok == 0 {
			return "-"
		}
		return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond)/float64(p.ok))
	}
	fmt.Printf("%-9s %d accepted in %s: %.0f/s; latency p50 %s p99 %s max %s; errors %d %v\n", name+":", p.ok, p.elapsed.Round(time.Millisecond),
		p.rate(), ms(pct(p.lat, .5)), ms(pct(p.lat, .99)), ms(pct(p.lat, 1)), p.errors(), p.errs)
	share := func(d time.Duration) float64 {
		return 100 * d.Seconds() / p.elapsed.Seconds() / float64(loadtool.NumCPU())
	}
	fmt.Printf("          CPU a request: server %s, client %s", per(p.cpu.server), per(p.cpu.self))
	if p.cpu.db > 0 {
		fmt.Printf(", PostgreSQL backends %s", per(p.cpu.db))
	}
	fmt.Printf("; share of the machine: server %.0f%%, client %.0f%%", share(p.cpu.server), share(p.cpu.self))
	if p.cpu.db > 0 {
		fmt.Printf(", backends %.0f%%", share(p.cpu.db))
	}
	if p.cpu.total > 0 {
		fmt.Printf(", everything %.0f%%", 100*float64(p.cpu.busy)/float64(p.cpu.total))
	}
	fmt.Println()
}

// answer is what ingestflood reads of a 202.
type answer struct {
	JobID    string `json:"job_id"`
	Replayed bool   `json:"replayed"`
}

// post sends one body and returns the answer, or the kind of error.
func (l *load) post(raw []byte) (answer, string) {
	req, _ := http.NewRequest("POST", "http://"+l.srv.Addr+"/api/v1/memory/ingest", bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-API-Key", l.key)
	res, err := l.http.Do(req)
	if err != nil {
		return answer{}, "transport"
	}
	b, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		return answer{}, "transport"
	}
	if res.StatusCode != http.StatusAccepted {
		return answer{}, strconv.Itoa(res.StatusCode)
	}
	var a answer
	if err := json.Unmarshal(b, &a); err != nil || a.JobID == "" {
		return answer{}, "202 unreadable"
	}
	return a, ""
}

// run runs one phase: each client calls send until d has passed, and the
// phase ends when the last one returns. send returns the kind of error,
// "" for a success. With pprofAddr it writes the server's CPU profile of
// the phase to pprofDir/name.pprof.
func (l *load) run(name string, d time.Duration, pprofAddr, pprofDir string, send func(c, i int) string) phase {
	var profiled sync.WaitGroup
	if pprofAddr != "" {
		profiled.Go(func() { profile(pprofAddr, filepath.Join(pprofDir, name+".pprof"), d) })
	}
	var mu sync.Mutex
	p := phase{errs: map[string]int{}}
	cpu0 := readCPU(l.srv.Cmd.Process.Pid, l.dbName)
	t0 := time.Now()
	deadline := t0.Add(d)
	var wg sync.WaitGroup
	for c := range l.clients {
		wg.Go(func() {
			var lat []time.Duration
			errs := map[string]int{}
			for i := 0; time.Now().Before(deadline); i++ {
				t := time.Now()
				if kind := send(c, i); kind != "" {
					errs[kind]++
					continue
				}
				lat = append(lat, time.Since(t))
			}
			mu.Lock()
			p.lat = append(p.lat, lat...)
			for k, v := range errs {
				p.errs[k] += v
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	p.elapsed = time.Since(t0)
	cpu1 := readCPU(l.srv.Cmd.Process.Pid, l.dbName)
	p.cpu = cpuReading{server: cpu1.server - cpu0.server, self: cpu1.self - cpu0.self, db: cpu1.db - cpu0.db,
		busy: cpu1.busy - cpu0.busy, total: cpu1.total - cpu0.total}
	p.ok = len(p.lat)
	slices.Sort(p.lat)
	profiled.Wait()
	return p
}

// firsts sends distinct batches for d.
func (l *load) firsts(d time.Duration, pprofAddr, pprofDir string) phase {
	p := l.run("first", d, pprofAddr, pprofDir, func(c, _ int) string {
		raw := l.batch[c].next()
		a, kind := l.post(raw)
		switch {
		case kind != "":
			return kind
		case a.Replayed:
			return "202 replayed on a first ingest"
		}
		l.sent[c] = append(l.sent[c], raw)
		l.jobs[c] = append(l.jobs[c], a.JobID)
		return ""
	})
	l.storedAtFirstEnd, _ = l.storedItems()
	return p
}

// replays sends each client's accepted bodies again, cycling, for d.
func (l *load) replays(d time.Duration, pprofAddr, pprofDir string) phase {
	return l.run("replay", d, pprofAddr, pprofDir, func(c, i int) string {
		if len(l.sent[c]) == 0 {
			time.Sleep(time.Millisecond)
			return "no accepted body to replay"
		}
		j := i % len(l.sent[c])
		a, kind := l.post(l.sent[c][j])
		switch {
		case kind != "":
			return kind
		case !a.Replayed:
			return "202 not replayed"
		case a.JobID != l.jobs[c][j]:
			return "202 replayed with another job"
		}
		return ""
	})
}

// meanBody is the mean size of the accepted bodies.
func (l *load) meanBody() int {
	n, size := 0, 0
	for _, bodies := range l.sent {
		for _, b := range bodies {
			n, size = n+1, size+len(b)
		}
	}
	if n == 0 {
		return 0
	}
	return size / n
}

// storedItems is how many items the server has stored, summed over the
// projects (GET /api/v1/memory/projects).
func (l *load) storedItems() (int, error) {
	req, _ := http.NewRequest("GET", "http://"+l.srv.Addr+"/api/v1/memory/projects", nil)
	req.Header.Set("X-API-Key", l.key)
	res, err := l.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	var out struct {
		Projects []struct {
			Items int `json:"items"`
		} `json:"projects"`
	}
	if res.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET /api/v1/memory/projects answered %s", res.Status)
	}
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		return 0, err
	}
	n := 0
	for _, p := range out.Projects {
		n += p.Items
	}
	return n, nil
}

// waitStored waits until the server has stored want items, or timeout.
func (l *load) waitStored(want int, timeout time.Duration) (time.Duration, error) {
	t0 := time.Now()
	for {
		n, err := l.storedItems()
		if err == nil && n >= want {
			return time.Since(t0), nil
		}
		if time.Since(t0) > timeout {
			return time.Since(t0), fmt.Errorf("only %d of %d accepted items stored after %s (%v); the replays ran beside the workers", n, want, timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// profile writes the CPU profile of the server at addr, over d, to path.
func profile(addr, path string, d time.Duration) {
	secs := max(1, int(d/time.Second))
	res, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, secs))
	if err == nil && res.StatusCode != http.StatusOK {
		err = errors.New(res.Status)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "ingestflood: profile %s: %v\n", path, err)
		return
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "ingestflood: profile %s: %v\n", path, err)
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }

// pct is the p-quantile of sorted s (nearest rank), 0 when s is empty.
func pct(s []time.Duration, p float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	i := int(p*float64(len(s))+0.999999) - 1
	return s[min(max(i, 0), len(s)-1)]
}
