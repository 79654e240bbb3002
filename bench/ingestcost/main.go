// Command ingestcost measures what one ingest body costs the server
// (POST /api/v1/memory/ingest): the CPU time and the growth of the peak
// resident memory of brain while it answers one body of about 8 MiB, for
// bodies built to be expensive to refuse (millions of tiny JSON values, deep
// nesting, a huge member name, escapes) and for a valid batch; and the peak
// resident memory while many such bodies are in flight from one session.
//
// Each measurement starts a brain of its own (on SQLite in a temporary
// data dir), logs in as admin, sends one small batch to warm the path up,
// waits a second, then reads the server's CPU time (/proc/PID/stat) and
// resident memory (VmRSS), resets its peak (writing 5 to
// /proc/PID/clear_refs), sends the body and reads both again once the
// answer is in: the growth is VmHWM (the peak) minus VmRSS before. A new
// server each time means no measurement inherits the heap another left.
//
// -bin takes several binaries, comma-separated (the build of main and the
// build of a branch, say): every round measures each in turn, so they
// share the machine's load. The flood (-flood N bodies at once, of the
// shape -flood-shape, from one session) is measured the same way.
//
//	cd bench && go run ./ingestcost -bin /tmp/brain-main,/tmp/brain-new -rounds 3
//
// It prints the date, the command, the machine's load, and one line per
// binary and shape: the statuses, and the ranges over the rounds of CPU
// seconds and peak growth in MB.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/brain-template/brain/bench/internal/loadtool"
)

// adminPassword is the password of the admin user the server creates.
const adminPassword = "ingestcost admin password"

// settings are ingestcost's flags.
type settings struct {
	binList                string
	rounds, size           int
	shapes                 []string
	flood                  int
	floodShape, floodLimit string
	env                    []string
}

func main() {
	bins := flag.String("bin", "", "comma-separated brain binaries to measure in turn; empty builds ./cmd/brain of the repository around the working directory")
	rounds := flag.Int("rounds", 3, "measurements of each binary and shape")
	size := flag.Int("size", 8<<20-64, "bytes of each body, about (the old limit refused exactly 8 MiB)")
	shapes := flag.String("shapes", strings.Join(shapeNames(), ","), "the shapes to send one at a time")
	flood := flag.Int("flood", 60, "bodies in flight at once from one session, for the flood measurement; 0 skips it")
	floodShape := flag.String("flood-shape", "unknown", "the shape of the flood's bodies")
	floodLimit := flag.String("flood-limit", "", "per binary, comma-separated, the bodies in flight to send it instead of -flood (a build that takes hundreds of MB a body cannot take 60 on this machine)")
	var env loadtool.EnvList
	flag.Var(&env, "env", "KEY=VALUE added to the server's environment (repeatable)")
	flag.Parse()
	s := settings{
		binList: *bins, rounds: *rounds, size: *size, shapes: strings.Split(*shapes, ","),
		flood: *flood, floodShape: *floodShape, floodLimit: *floodLimit, env: env,
	}
	if err := run(s); err != nil {
		log.Fatal(err)
	}
}

// A binShape keys the one-body measurements: a binary and a shape.
type binShape struct{ bin, shape string }

// run builds the bodies, measures every shape of every binary -rounds
// times (the binaries in turn each round), then each binary's flood, and
// reports.
func run(s settings) error {
	dir, err := os.MkdirTemp("", "ingestcost")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bins, err := binaries(s.binList, dir)
	if err != nil {
		return err
	}
	floods := floodSizes(s, len(bins))
	bodies, err := buildBodies(s)
	if err != nil {
		return err
	}
	load0 := loadtool.LoadAvg()
	results, err := measureShapes(s, dir, bins, bodies)
	if err != nil {
		return err
	}
	floodResults, err := measureFloods(s, dir, bins, floods, bodies[s.floodShape])
	if err != nil {
		return err
	}
	report(s, bins, bodies, results, floods, floodResults, load0)
	return nil
}

// binaries are the binaries of -bin or, without it, ./cmd/brain built in
// dir.
func binaries(binList, dir string) ([]string, error) {
	if binList != "" {
		return strings.Split(binList, ","), nil
	}
	bin, err := loadtool.Build("ingestcost", dir)
	if err != nil {
		return nil, err
	}
	return []string{bin}, nil
}

// floodSizes are the bodies in flight for each of n binaries: -flood, or
// its entry of -flood-limit where that is a number.
func floodSizes(s settings, n int) []int {
	floods := make([]int, n)
	for i := range floods {
		floods[i] = s.flood
	}
	if s.floodLimit != "" {
		for i, f := range strings.Split(s.floodLimit, ",") {
			if v, err := strconv.Atoi(f); err == nil && i < len(floods) {
				floods[i] = v
			}
		}
	}
	return floods
}

// buildBodies builds a body of each of -shapes and of -flood-shape.
func buildBodies(s settings) (map[string][]byte, error) {
	bodies := map[string][]byte{}
	for _, name := range append(slices.Clone(s.shapes), s.floodShape) {
		b, err := shape(name, s.size)
		if err != nil {
			return nil, err
		}
		bodies[name] = b
	}
	return bodies, nil
}

// measureShapes measures one body of each shape on each binary, -rounds
// times, the binaries in turn each round.
func measureShapes(s settings, dir string, bins []string, bodies map[string][]byte) (map[binShape][]measure, error) {
	results := map[binShape][]measure{}
	for r := range s.rounds {
		for _, bin := range bins {
			for _, sh := range s.shapes {
				m, err := one(dir, bin, s.env, bodies[sh], 1)
				if err != nil {
					return nil, fmt.Errorf("%s, %s, round %d: %w", bin, sh, r+1, err)
				}
				results[binShape{bin, sh}] = append(results[binShape{bin, sh}], m)
			}
		}
	}
	return results, nil
}

// measureFloods measures each binary's flood (floods[i] copies of body at
// once), up to twice; none where floods[i] is 0.
func measureFloods(s settings, dir string, bins []string, floods []int, body []byte) ([][]measure, error) {
	var floodResults [][]measure
	for i, bin := range bins {
		var ms []measure
		for range min(s.rounds, 2) {
			if floods[i] <= 0 {
				break
			}
			m, err := one(dir, bin, s.env, body, floods[i])
			if err != nil {
				return nil, fmt.Errorf("%s, flood: %w", bin, err)
			}
			ms = append(ms, m)
		}
		floodResults = append(floodResults, ms)
	}
	return floodResults, nil
}

// report prints the header, a line per binary and shape, and a line per
// binary's flood.
func report(s settings, bins []string, bodies map[string][]byte, results map[binShape][]measure, floods []int, floodResults [][]measure, load0 string) {
	fmt.Printf("\n== ingestcost %s\n", time.Now().UTC().Format(time.RFC3339))
	fmt.Printf("command:  %s\n", loadtool.Command("ingestcost"))
	fmt.Printf("machine:  %d CPUs; load average %s at start, %s at end\n", loadtool.NumCPU(), load0, loadtool.LoadAvg())
	fmt.Printf("method:   a new brain (SQLite) for each measurement; one body after a warm-up; CPU from /proc/PID/stat, growth = VmHWM after - VmRSS before\n")
	for _, bin := range bins {
		fmt.Printf("\n%s\n", bin)
		for _, sh := range s.shapes {
			ms := results[binShape{bin, sh}]
			fmt.Printf("  %-8s %7d bytes: %s; CPU %s s; peak growth %s MB; answer %s bytes\n", sh, len(bodies[sh]), statuses(ms),
				span(ms, func(m measure) float64 { return m.cpu.Seconds() }, "%.2f"),
				span(ms, func(m measure) float64 { return float64(m.growth) / 1e6 }, "%.0f"),
				span(ms, func(m measure) float64 { return float64(m.answer) }, "%.0f"))
		}
	}
	for i, bin := range bins {
		ms := floodResults[i]
		if len(ms) == 0 {
			continue
		}
		fmt.Printf("\nflood: %s, %d %s bodies at once from one session: %s; peak RSS %s MB (before %s MB); CPU %s s\n", bin, floods[i], s.floodShape, statuses(ms),
			span(ms, func(m measure) float64 { return float64(m.peak) / 1e6 }, "%.0f"),
			span(ms, func(m measure) float64 { return float64(m.before) / 1e6 }, "%.0f"),
			span(ms, func(m measure) float64 { return m.cpu.Seconds() }, "%.2f"))
	}
}

// A measure is what one measurement read.
type measure struct {
	statuses map[int]int
	cpu      time.Duration
	before   int64 // VmRSS before, bytes
	peak     int64 // VmHWM after, bytes
	growth   int64 // peak - before
	answer   int   // bytes of the (first) answer
}

// one starts bin, warms it up, sends n copies of body at once from one
// session and measures the server around them.
func one(dir, bin string, env []string, body []byte, n int) (measure, error) {
	data := filepath.Join(dir, fmt.Sprintf("data-%d", time.Now().UnixNano()))
	defer os.RemoveAll(data)
	srv, err := loadtool.Start("ingestcost", bin, dir, append([]string{
		"BRAIN_ADDR=127.0.0.1:0",
		"BRAIN_DATA_DIR=" + data,
		"BRAIN_ADMIN_PASSWORD=" + adminPassword,
		"BRAIN_METRICS_ADDR=off",
		"BRAIN_COOKIE_SECURE=false",
		"BRAIN_RATE_LIMIT_SESSION=100000/min,burst=100000",
	}, env...))
	if err != nil {
		return measure{}, err
	}
	defer srv.Stop()
	base := "http://" + srv.Addr
	client := &http.Client{Timeout: 5 * time.Minute, Transport: &http.Transport{MaxConnsPerHost: 0, MaxIdleConnsPerHost: n}}
	cookie, err := login(client, base)
	if err != nil {
		return measure{}, err
	}
	if st, _, err := post(client, base, cookie, []byte(`{"project":"warm","items":[{"text":"warm up"}]}`)); err != nil || st != http.StatusAccepted {
		return measure{}, fmt.Errorf("warm-up ingest: %d %v", st, err)
	}
	time.Sleep(time.Second) // the warm-up's job runs, and the heap settles
	pid := srv.Cmd.Process.Pid
	var m measure
	m.before = status(pid, "VmRSS")
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		return measure{}, fmt.Errorf("reset the peak: %w", err)
	}
	cpu0 := loadtool.ProcCPU(pid)
	m.statuses = map[int]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			st, size, err := post(client, base, cookie, body)
			if err != nil {
				st = -1
			}
			mu.Lock()
			m.statuses[st]++
			if m.answer == 0 {
				m.answer = size
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	m.cpu = loadtool.ProcCPU(pid) - cpu0
	m.peak = status(pid, "VmHWM")
	m.growth = m.peak - m.before
	return m, nil
}

func login(client *http.Client, base string) (string, error) {
	res, err := client.Post(base+"/api/v1/auth/login", "application/json", strings.NewReader(`{"username":"admin","password":"`+adminPassword+`"}`))
	if err != nil {
		return "", err
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	for _, c := range res.Cookies() {
		if c.Name == "brain_session" {
			return c.Name + "=" + c.Value, nil
		}
	}
	return "", fmt.Errorf("login answered %s without a session cookie", res.Status)
}

// post sends one ingest body and returns the status and the answer's size.
func post(client *http.Client, base, cookie string, body []byte) (int, int, error) {
	req, _ := http.NewRequest("POST", base+"/api/v1/memory/ingest", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Cookie", cookie)
	res, err := client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	b, err := io.ReadAll(res.Body)
	res.Body.Close()
	return res.StatusCode, len(b), err
}

// shapeNames are the bodies ingestcost can send.
func shapeNames() []string {
	return []string{"unknown", "items", "tags", "deep", "name", "escapes", "valid"}
}

// shape builds a body of about size bytes of the named shape.
func shape(name string, size int) ([]byte, error) {
	var b bytes.Buffer
	fill := func(prefix, unit, suffix string) []byte {
		b.WriteString(prefix)
		for b.Len()+len(unit)+len(suffix) < size {
			b.WriteString(unit)
		}
		out := bytes.TrimSuffix(b.Bytes(), []byte(","))
		return append(out, suffix...)
	}
	switch name {
	case "unknown": // tiny values in a member no batch has
		return fill(`{"project":"p","items":[{"text":"x"}],"junk":[`, "0,", "0]}"), nil
	case "items": // tiny values as items
		return fill(`{"project":"p","items":[`, "0,", "0]}"), nil
	case "tags": // tiny values as one item's tags
		return fill(`{"project":"p","items":[{"text":"x","tags":[`, "0,", "0]}]}"), nil
	case "deep": // arrays nested 1000 deep, one after another, in an unknown member
		unit := strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + ","
		return fill(`{"project":"p","items":[{"text":"x"}],"junk":[`, unit, "0]}"), nil
	case "name": // one member whose name is the whole body
		return fill(`{"project":"p","items":[{"text":"x"}],"`, "a", `":0}`), nil
	case "escapes": // a text of escapes, far over 64 KiB once decoded
		return fill(`{"project":"p","items":[{"text":"`, `\u00e9`, `"}]}`), nil
	case "valid": // 1000 items, the largest batch
		text := strings.Repeat("x", (size-64)/1000-40)
		items := make([]string, 1000)
		for i := range items {
			items[i] = fmt.Sprintf(`{"text":"%04d %s"}`, i, text)
		}
		out := []byte(`{"project":"p","items":[` + strings.Join(items, ",") + `]}`)
		if !json.Valid(out) || len(out) > size {
			return nil, errors.New("ingestcost: the valid body is not valid, or too large")
		}
		return out, nil
	}
	return nil, fmt.Errorf("ingestcost: no shape %q; the shapes are %s", name, strings.Join(shapeNames(), ", "))
}

// status reads a field of /proc/PID/status, in bytes.
func status(pid int, field string) int64 {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// statuses writes the statuses of ms, merged: "422 ×3". A client that
// sends a large body without Expect: 100-continue may see its connection
// closed before it reads a refusal that came early (503, 413): that is a
// transport error.
func statuses(ms []measure) string {
	all := map[int]int{}
	for _, m := range ms {
		for s, n := range m.statuses {
			all[s] += n
		}
	}
	var parts []string
	for _, s := range slices.Sorted(maps.Keys(all)) {
		name := strconv.Itoa(s)
		if s < 0 {
			name = "transport error"
		}
		parts = append(parts, fmt.Sprintf("%s ×%d", name, all[s]))
	}
	return strings.Join(parts, ", ")
}

// span is the range of f over ms, formatted: "0.41–0.47", or one value.
func span(ms []measure, f func(measure) float64, format string) string {
	if len(ms) == 0 {
		return "-"
	}
	lo, hi := f(ms[0]), f(ms[0])
	for _, m := range ms[1:] {
		lo, hi = min(lo, f(m)), max(hi, f(m))
	}
	a, b := fmt.Sprintf(format, lo), fmt.Sprintf(format, hi)
	if a == b {
		return a
	}
	return a + "–" + b
}
