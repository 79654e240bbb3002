package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-template/brain/internal/product"
	"github.com/brain-template/brain/internal/testproxy"
	"github.com/brain-template/brain/ratelimit/redistest"
	"github.com/brain-template/brain/store"
	"github.com/brain-template/brain/store/storetest"
)

// soakEnv names how long TestSoak runs its traffic; without it the soak
// is skipped. make soak sets it.
const soakEnv = "BRAIN_SOAK_DURATION"

// A fault is one thing the soak breaks, for a while, and the 5xx it may
// cost: the window in which they are allowed is the fault's time and a
// grace after it.
type fault struct {
	name    string
	at      time.Duration // into each cycle of faults
	lasts   time.Duration // from do to its undo
	allowed []int         // the 5xx this fault may cause (0: a request that got no answer)
	redis   bool          // it breaks Redis: the rate limits are decided on each replica meanwhile
	do      func() (undo func())
}

// A window is the time one fault was in force.
type window struct {
	f          *fault
	start, end time.Time
}

// soakCycle is how often the faults come round: a soak of 5 minutes
// breaks everything 7 times, and what grows from one cycle to the next is
// a leak, not a cache warming up.
const soakCycle = 52 * time.Second

// A span is a time in which the replicas may have decided the rate
// limits alone: a Redis fault's window, and after it twice as long and
// 4 s more. A replica's breaker probes Redis 1 s after it opens, then
// waits twice as long after each failed probe, so it may go on deciding
// alone about as long again after Redis is back, and longer when Redis
// answers only some time after the fault ends (a failover to settle).
// Spans that overlap are one.
type span struct{ start, end time.Time }

func (sp span) holds(t time.Time) bool { return !t.Before(sp.start) && t.Before(sp.end) }

// An exchange is one request's sending and its answer's arrival.
type exchange struct{ sent, got time.Time }

// budgetHeld checks the requests of one client that a budget of burst
// and rate per window admitted (admitted) against what the local outage
// policy allows: in each time between spans, when Redis decided alone,
// at most the burst and the rate over that time (Redis never keeps more
// than a burst of credit, whatever it lost); in each span, at most that
// for each replica and for Redis. A request sent or answered in a span
// counts in it. It returns its report and what failed.
func budgetHeld(from, to time.Time, spans []span, admitted []exchange, replicas, burst, rate int, window time.Duration) (report string, failed []string) {
	most := func(d time.Duration) int { return burst + int(math.Ceil(float64(rate)*d.Seconds()/window.Seconds())) }
	alone := make([][]exchange, len(spans))     // by span
	healthy := make([][]exchange, len(spans)+1) // by time between spans: before the first, between each two, after the last
	for _, e := range admitted {
		i := slices.IndexFunc(spans, func(sp span) bool { return sp.holds(e.sent) || sp.holds(e.got) })
		if i >= 0 {
			alone[i] = append(alone[i], e)
			continue
		}
		j, _ := slices.BinarySearchFunc(spans, e.sent, func(sp span, t time.Time) int { return sp.start.Compare(t) })
		healthy[j] = append(healthy[j], e)
	}
	nHealthy, nAlone, aloneMost, fullest := 0, 0, 0, 0.0
	for j, es := range healthy {
		a, b := from, to
		if j > 0 {
			a = spans[j-1].end
		}
		if j < len(spans) {
			b = spans[j].start
		}
		nHealthy += len(es)
		fullest = max(fullest, float64(len(es))/float64(most(b.Sub(a))))
		if len(es) > most(b.Sub(a)) {
			failed = append(failed, fmt.Sprintf("%d admitted in the %v from %v while Redis decided, over the %d the budget allows", len(es), b.Sub(a).Round(time.Millisecond), a.Sub(from).Round(time.Millisecond), most(b.Sub(a))))
		}
	}
	for i, es := range alone {
		n := (replicas + 1) * most(spans[i].end.Sub(spans[i].start))
		nAlone, aloneMost = nAlone+len(es), aloneMost+n
		if len(es) > n {
			failed = append(failed, fmt.Sprintf("%d admitted in the %v from %v in which replicas may have decided alone, over the %d that %d replicas and Redis allow", len(es), spans[i].end.Sub(spans[i].start).Round(time.Millisecond), spans[i].start.Sub(from).Round(time.Millisecond), n, replicas))
		}
	}
	report = fmt.Sprintf("%d while Redis decided, in %d times between faults, each within its burst and rate (the fullest at %.0f%%); %d while replicas may have decided alone, of at most %d (%d replicas and Redis, each its burst and rate, over the %d spans)",
		nHealthy, len(healthy), 100*fullest, nAlone, aloneMost, replicas, len(spans))
	return report, failed
}

// localSpans returns the spans of windows' Redis faults, in order.
func localSpans(windows []window) []span {
	var spans []span
	for _, w := range windows {
		if !w.f.redis {
			continue
		}
		sp := span{w.start, w.end.Add(2*w.end.Sub(w.start) + 4*time.Second)}
		if n := len(spans); n > 0 && !sp.start.After(spans[n-1].end) {
			if sp.end.After(spans[n-1].end) {
				spans[n-1].end = sp.end
			}
			continue
		}
		spans = append(spans, sp)
	}
	return spans
}

// The soak's budget check counts each admission in its time: between
// faults at most the burst and the rate over that time, in a span that
// for each replica and Redis.
func TestBudgetHeld(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	spans := []span{{at(10), at(20)}} // 10 s: at most 4 × (2 + 10) with 3 replicas, burst 2, 1/s
	var admitted []exchange
	add := func(n int, sent, got float64) {
		for range n {
			admitted = append(admitted, exchange{at(sent), at(got)})
		}
	}
	add(12, 1, 1.1)   // before: 10 s allow 2 + 10
	add(48, 12, 12.1) // in the span: its whole allowance
	add(1, 9.9, 10.1) // answered in the span: counts in it
	add(22, 21, 21.5) // after: 10 s allow 12
	report, failed := budgetHeld(at(0), at(30), spans, admitted, 3, 2, 60, time.Minute)
	if len(failed) != 2 || !strings.Contains(failed[0], "22 admitted in the 10s from 20s while Redis decided, over the 12") ||
		!strings.Contains(failed[1], "49 admitted in the 10s from 10s in which replicas may have decided alone, over the 48") {
		t.Fatalf("failed: %q; want the time after the span (22 of 12) and the span (49 of 48)", failed)
	}
	if !strings.Contains(report, "34 while Redis decided, in 2 times between faults") || !strings.Contains(report, "49 while replicas may have decided alone, of at most 48") {
		t.Fatalf("report: %s", report)
	}
	if _, failed := budgetHeld(at(0), at(30), spans, admitted[:12+48], 3, 2, 60, time.Minute); len(failed) != 0 {
		t.Fatalf("within every allowance: %q", failed)
	}
}

// soakGrace is how long after a fault ends its 5xx are still its own: a
// replica's health check to come back, a pool to reconnect.
const soakGrace = 5 * time.Second

// outcome is one request of the soak's traffic.
type outcome struct {
	at     time.Time
	kind   string
	status int // 0: no answer (the connection failed)
}

// TestSoak runs mixed traffic at a steady rate through haproxy in front
// of three replicas on PostgreSQL (through a proxy the test breaks) and a
// Redis Cluster, while it kills and restarts replicas, cuts and stalls
// PostgreSQL, fails a cluster master over and pauses another. Then it
// checks what must hold: every acknowledged ingest present exactly once
// and its job finished, the same job id for every acknowledgement of a
// batch, no 5xx outside the faults' windows (and inside them only those
// each fault may cause), the per-IP budget over-admitted only as the local
// outage policy allows, no goroutine growth (by creator) on the replica
// that ran throughout from the end of the first cycle of faults, nor (in a
// soak of several cycles) memory growth, and every stream slot free once its client left. It
// logs its report as a table.
func TestSoak(t *testing.T) {
	d, err := time.ParseDuration(os.Getenv(soakEnv))
	if err != nil || d <= 0 {
		t.Skipf("set %s to run the soak (make soak DURATION=5m)", soakEnv)
	}
	cluster := redistest.StartClusterBehindProxies(t)
	dbURL := storetest.URL(t, store.Postgres)
	u, _ := url.Parse(dbURL)
	pg := testproxy.New(t, u.Host)
	u.Host = pg.Addr()
	ports := freeTCPPorts(t, 3)
	const ipBudget, ipWindow, ipBurst = 60, time.Minute, 20
	env := func(port int) map[string]string {
		return memoryEnv(map[string]string{
			"BRAIN_ADDR":             "127.0.0.1:" + strconv.Itoa(port),
			"BRAIN_DATABASE_URL":     u.String(),
			"BRAIN_REDIS_URL":        cluster.URL(),
			"BRAIN_REDIS_PREFIX":     "soak:",
			"BRAIN_TRUSTED_PROXIES":  "127.0.0.1/32",
			"BRAIN_RATE_LIMIT_IP":    fmt.Sprintf("%d/min,burst=%d", ipBudget, ipBurst),
			"BRAIN_STREAM_HEARTBEAT": "1s",
			"BRAIN_STREAM_OPENS":     "6000/min,burst=1000",
		})
	}
	procs := make([]*proc, 3)
	var backends []string
	for i, port := range ports {
		procs[i] = startProc(t, env(port))
		backends = append(backends, procs[i].base)
	}
	base := startBalancer(t, backends, 15*time.Second)
	hc := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 32}}
	admin := soakClient{hc: hc, base: base}
	r, _ := admin.send("POST", "/api/v1/auth/login", map[string]string{"username": "admin", "password": adminPassword}, "X-Forwarded-For: 198.51.100.10")
	if r == nil || r.StatusCode != 200 {
		t.Fatalf("admin login: %v", r)
	}
	admin.cookie = "Cookie: " + strings.Split(r.Header.Get("Set-Cookie"), ";")[0]

	// The faults, spread over the run.
	restart := func(i int) func() func() {
		return func() func() {
			procs[i].kill()
			return func() { procs[i] = startProc(t, env(ports[i])) }
		}
	}
	faults := []*fault{
		{name: "kill -9 replica 1, restart after 3 s", at: 4 * time.Second, lasts: 3 * time.Second, allowed: []int{0, 502, 503}, do: restart(0)},
		{name: "PostgreSQL cut for 3 s", at: 10 * time.Second, lasts: 3 * time.Second, allowed: []int{503}, do: func() func() { pg.Cut(); return pg.Restore }},
		{name: "PostgreSQL stalled for 3 s", at: 16 * time.Second, lasts: 3 * time.Second, allowed: []int{503}, do: func() func() { pg.Stall(); return pg.Restore }},
		{name: "a Redis master fails over", at: 22 * time.Second, redis: true, do: func() func() { cluster.Failover(cluster.Masters()[0]); return func() {} }},
		{name: "a Redis master paused 4 s (its replica takes over)", at: 28 * time.Second, lasts: 4 * time.Second, allowed: []int{503}, redis: true, do: func() func() {
			m := cluster.Masters()[1]
			cluster.Pause(m)
			return func() { cluster.Resume(m) }
		}},
		{name: "a Redis master cut from its clients for 3 s (its proxy)", at: 34 * time.Second, lasts: 3 * time.Second, redis: true, do: func() func() {
			p := cluster.Proxy(cluster.Masters()[2])
			p.Cut()
			return p.Restore
		}},
		{name: "a Redis master stalled for its clients for 3 s (its proxy)", at: 40 * time.Second, lasts: 3 * time.Second, redis: true, do: func() func() {
			p := cluster.Proxy(cluster.Masters()[0])
			p.Stall()
			return p.Restore
		}},
		{name: "kill -9 replica 2, restart after 3 s", at: 46 * time.Second, lasts: 3 * time.Second, allowed: []int{0, 502, 503}, do: restart(1)},
	}

	// What the replica that is never killed uses at the start of the
	// traffic, and at the end.
	goroutines0, memory0 := procMetrics(t, procs[2])

	var mu sync.Mutex
	var outcomes []outcome
	record := func(kind string, status int) {
		mu.Lock()
		outcomes = append(outcomes, outcome{time.Now(), kind, status})
		mu.Unlock()
	}
	acked := map[string]string{} // batch token: its job id
	var ackMismatch []string
	start := time.Now()
	stop := make(chan struct{})
	var traffic sync.WaitGroup
	every := func(period time.Duration, f func(i int)) {
		traffic.Go(func() {
			tick := time.NewTicker(period)
			defer tick.Stop()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case <-tick.C:
					f(i)
				}
			}
		})
	}
	status := func(r *http.Response) int {
		if r == nil {
			return 0
		}
		return r.StatusCode
	}
	for range 2 {
		every(40*time.Millisecond, func(int) { r, _ := admin.send("GET", "/api/v1/auth/me", nil); record("read", status(r)) })
	}
	every(200*time.Millisecond, func(int) {
		r, _ := admin.send("GET", "/api/v1/memory/query?limit=5&q=soak", nil)
		record("query", status(r))
	})
	every(2*time.Second, func(int) { // a login, and its logout: a user keeps at most 20 sessions
		r, _ := admin.send("POST", "/api/v1/auth/login", map[string]string{"username": "admin", "password": adminPassword}, "X-Forwarded-For: 198.51.100.10")
		record("login", status(r))
		if status(r) == http.StatusOK {
			other := soakClient{hc: hc, base: base, cookie: "Cookie: " + strings.Split(r.Header.Get("Set-Cookie"), ";")[0]}
			r, _ = other.send("POST", "/api/v1/auth/logout", nil)
			record("logout", status(r))
		}
	})
	var probeAdmitted []exchange
	anonymous := soakClient{hc: hc, base: base}
	var probeSent atomic.Int64
	every(100*time.Millisecond, func(int) { // one client without credentials: its ip budget's use
		probeSent.Add(1)
		sent := time.Now()
		r, _ := anonymous.send("GET", "/api/v1/auth/me", nil, "X-Forwarded-For: 198.51.100.9")
		record("probe", status(r))
		if status(r) == http.StatusUnauthorized { // admitted, and answered
			mu.Lock()
			probeAdmitted = append(probeAdmitted, exchange{sent, time.Now()})
			mu.Unlock()
		}
	})
	for g := range 2 { // ingests, each sent until acknowledged, as a client retries
		traffic.Go(func() {
			for i := 0; ; i++ {
				token := fmt.Sprintf("soak%dx%d", g, i)
				batch := map[string]any{"project": "soak", "items": []map[string]any{{"text": "note " + token}}}
				for {
					select {
					case <-stop:
						return
					default:
					}
					r, body := admin.send("POST", "/api/v1/memory/ingest", batch)
					record("ingest", status(r))
					if status(r) == http.StatusAccepted {
						var a struct {
							JobID string `json:"job_id"`
						}
						_ = json.Unmarshal(body, &a)
						mu.Lock()
						if prev, ok := acked[token]; ok && prev != a.JobID {
							ackMismatch = append(ackMismatch, token)
						}
						acked[token] = a.JobID
						mu.Unlock()
						break
					}
					time.Sleep(retryWait(r))
				}
				time.Sleep(150 * time.Millisecond)
			}
		})
	}
	traffic.Go(func() { // streams opened, held a while, and left
		for {
			select {
			case <-stop:
				return
			default:
			}
			res, err := admin.open("/api/v1/events")
			if err != nil {
				record("stream", 0)
				time.Sleep(200 * time.Millisecond)
				continue
			}
			record("stream", res.StatusCode)
			if res.StatusCode == 200 {
				hold := time.After(2 * time.Second)
				go func() { _, _ = io.Copy(io.Discard, res.Body) }()
				select {
				case <-hold:
				case <-stop:
				}
			} else {
				time.Sleep(retryWait(res))
			}
			res.Body.Close()
		}
	})

	// The faults, a cycle at a time. After the first cycle, every fault
	// has struck once: caches, pools and the fallback limiters are at
	// their size, and the replica's use then is the baseline.
	var windows []window
	var goroutinesMid int
	var memoryMid float64
	var creatorsMid map[string]int
	cycles := max(1, int(d/soakCycle))
	for c := range cycles {
		for _, f := range faults {
			time.Sleep(time.Until(start.Add(time.Duration(c)*soakCycle + f.at)))
			w := window{f: f, start: time.Now()}
			undo := f.do()
			time.Sleep(f.lasts)
			undo()
			w.end = time.Now()
			windows = append(windows, w)
		}
		if c == 0 {
			time.Sleep(soakGrace)
			goroutinesMid, memoryMid = procMetrics(t, procs[2])
			creatorsMid = goroutineCreators(t, procs[2])
		}
	}
	time.Sleep(time.Until(start.Add(d)))
	close(stop)
	traffic.Wait()
	elapsed := time.Since(start)
	time.Sleep(3 * time.Second) // a closed stream's server side ends at its next heartbeat (1 s)

	// Every acknowledged ingest is worked once.
	lost, dup := 0, 0
	for token, id := range acked {
		var j jobState
		for deadline := time.Now().Add(60 * time.Second); ; {
			r, body := admin.send("GET", "/api/v1/jobs/"+id, nil)
			if status(r) == 200 {
				_ = json.Unmarshal(body, &j)
				if j.Status == "succeeded" || j.Status == "failed" {
					break
				}
			}
			if time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if j.Status != "succeeded" {
			t.Errorf("job %s of batch %s: %q after the run, want succeeded", id, token, j.Status)
		}
		switch n := admin.count(t, token); {
		case n == 0:
			lost++
		case n > 1:
			dup++
		}
	}

	// 5xx, by the window they fell in.
	byWindow := map[string]int{}
	var stray []outcome
	requests := len(outcomes)
	for _, o := range outcomes {
		if o.status != 0 && o.status < 500 {
			continue
		}
		var in *fault
		for _, w := range windows {
			if !o.at.Before(w.start) && o.at.Before(w.end.Add(soakGrace)) && slices.Contains(w.f.allowed, o.status) {
				in = w.f
			}
		}
		if in == nil {
			stray = append(stray, o)
			continue
		}
		byWindow[in.name]++
	}

	// The budget: what one client's requests were admitted, against what
	// the local policy allows.
	budgetReport, overAdmitted := budgetHeld(start, start.Add(elapsed), localSpans(windows), probeAdmitted, len(procs), ipBurst, ipBudget, ipWindow)

	goroutines1, memory1 := procMetrics(t, procs[2])
	creatorsEnd := goroutineCreators(t, procs[2])

	// Every stream slot is free: the cap admits its 16 again, no more.
	var held []*http.Response
	for i := range 17 {
		res, err := admin.open("/api/v1/events")
		if err != nil {
			t.Fatalf("stream %d after the run: %v", i+1, err)
		}
		held = append(held, res)
		if want := map[bool]int{true: 200, false: 429}[i < 16]; res.StatusCode != want {
			t.Errorf("stream %d after the run: %d, want %d (a slot left taken?)", i+1, res.StatusCode, want)
		}
	}
	for _, res := range held {
		res.Body.Close()
	}

	var report strings.Builder
	fmt.Fprintf(&report, "| soak of %v, %d requests | |\n|---|---|\n", elapsed.Round(time.Second), requests)
	for _, f := range faults {
		fmt.Fprintf(&report, "| %s, at %v of each %v, %d times | %d 5xx or unanswered in its windows |\n", f.name, f.at, soakCycle, cycles, byWindow[f.name])
	}
	fmt.Fprintf(&report, "| 5xx or unanswered outside the windows | %d |\n", len(stray))
	fmt.Fprintf(&report, "| one client's unauthenticated requests (ip plane: %d/min, burst %d), %d sent | %d admitted: %s |\n",
		ipBudget, ipBurst, probeSent.Load(), len(probeAdmitted), budgetReport)
	logs := procs[2].logs.String()
	breakerOpened, hubFailed := strings.Count(logs, "rate-limit store unavailable"), strings.Count(logs, "stream events: Redis failed")
	fmt.Fprintf(&report, "| what replica 3 logged of the Redis faults | its limits' breaker opened %d times; its events' reads failed %d times |\n", breakerOpened, hubFailed)
	fmt.Fprintf(&report, "| ingests acknowledged | %d: %d lost, %d duplicated, %d acknowledged with two job ids |\n", len(acked), lost, dup, len(ackMismatch))
	fmt.Fprintf(&report, "| goroutines less one per open connection, replica 3 (never killed) | %d at the start, %d after the first cycle, %d at the end |\n", goroutines0, goroutinesMid, goroutines1)
	fmt.Fprintf(&report, "| resident memory, replica 3 | %.1f MiB at the start, %.1f MiB after the first cycle, %.1f MiB at the end |\n", memory0/(1<<20), memoryMid/(1<<20), memory1/(1<<20))
	t.Logf("\n%s", report.String())
	if f := os.Getenv("BRAIN_SOAK_REPORT"); f != "" {
		_ = os.WriteFile(f, []byte(report.String()), 0o644)
	}
	if f := os.Getenv("BRAIN_SOAK_LOG"); f != "" { // replica 3's log, to read what the faults did
		_ = os.WriteFile(f, []byte(logs), 0o644)
	}

	if len(stray) > 0 {
		t.Errorf("%d 5xx or unanswered requests outside the faults' windows (or of a status the fault may not cause); the first: %+v", len(stray), stray[:min(5, len(stray))])
	}
	if lost > 0 || dup > 0 || len(ackMismatch) > 0 {
		t.Errorf("ingests: %d lost, %d duplicated, %d with two job ids: %v", lost, dup, len(ackMismatch), ackMismatch)
	}
	var foreign []string // lines not in the server's log format: something logged around it
	inDump := false      // the test's goroutine dumps are not the server's log
	for line := range strings.Lines(logs) {
		switch {
		case line == "goroutine dump begins\n" || line == "goroutine dump ends\n":
			inDump = line == "goroutine dump begins\n"
		case !inDump && !strings.HasPrefix(line, "time="):
			foreign = append(foreign, line)
		}
	}
	if len(foreign) > 0 {
		t.Errorf("replica 3 logged %d lines not in its log's format; the first: %q", len(foreign), foreign[0])
	}
	if breakerOpened < cycles || hubFailed < cycles { // else the Redis faults did not bite
		t.Errorf("replica 3's limits' breaker opened %d times and its events' reads failed %d times in %d cycles of Redis faults; want each at least once a cycle",
			breakerOpened, hubFailed, cycles)
	}
	if len(acked) < 10 {
		t.Errorf("only %d ingests acknowledged: the soak's traffic did not flow", len(acked))
	}
	for _, f := range overAdmitted {
		t.Errorf("one client's budget: %s", f)
	}
	// A snapshot may catch a few goroutines that live a moment (a River
	// fetch, a worker); a leak grows with each cycle, past that.
	if g, n := grown(creatorsMid, creatorsEnd); n > 5 {
		t.Errorf("replica 3 has %d more goroutines at the end than after the first cycle; by creator: %v", n, g)
	}
	if n := creatorsEnd["github.com/redis/rueidis.(*pipe)._background"]; n > 3*len(cluster.Addrs) {
		t.Errorf("replica 3 holds %d Redis connections for a cluster of %d nodes", n, len(cluster.Addrs))
	}
	if cycles > 1 && memory1 > memoryMid*1.25+16<<20 { // one cycle has no later one to compare
		t.Errorf("replica 3's resident memory grew from %.1f MiB after the first cycle to %.1f MiB", memoryMid/(1<<20), memory1/(1<<20))
	}
}

// soakClient is the soak's HTTP client through the balancer, as admin.
// Its calls report failures instead of ending the test.
type soakClient struct {
	hc     *http.Client
	base   string
	cookie string
}

// send sends a request and returns the response (its body read into the
// second result), or nil when no answer came.
func (c soakClient) send(method, path string, body any, headers ...string) (*http.Response, []byte) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, c.base+path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, h := range append(headers, c.cookie) {
		if k, v, ok := strings.Cut(h, ": "); ok {
			req.Header.Add(k, v)
		}
	}
	res, err := c.hc.Do(req)
	if err != nil {
		return nil, nil
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, b
}

// open opens a stream; the caller closes its body.
func (c soakClient) open(path string) (*http.Response, error) {
	req, _ := http.NewRequest("GET", c.base+path, nil)
	k, v, _ := strings.Cut(c.cookie, ": ")
	req.Header.Set(k, v)
	return (&http.Client{Transport: c.hc.Transport}).Do(req) // no timeout: a stream lasts
}

// count returns how many stored items hold token.
func (c soakClient) count(t *testing.T, token string) int {
	t.Helper()
	r, body := c.send("GET", "/api/v1/memory/query?limit=10&q="+token, nil)
	if r == nil || r.StatusCode != 200 {
		t.Fatalf("query %s after the run: %v %s", token, r, body)
	}
	var page struct {
		Results []struct {
			Text string `json:"text"`
		} `json:"results"`
	}
	_ = json.Unmarshal(body, &page)
	n := 0
	for _, res := range page.Results {
		if strings.Contains(res.Text, token) {
			n++
		}
	}
	return n
}

// retryWait is how long a client waits before it sends again after r:
// its Retry-After, at most 2 s, else 200 ms.
func retryWait(r *http.Response) time.Duration {
	if r != nil {
		if s, err := strconv.Atoi(r.Header.Get("Retry-After")); err == nil {
			return min(time.Duration(s)*time.Second, 2*time.Second)
		}
	}
	return 200 * time.Millisecond
}

// procMetrics reads p's goroutines, less one for each open connection
// (whose count is the balancer's to choose), and its resident memory,
// from its metrics listener.
func procMetrics(t *testing.T, p *proc) (goroutines int, resident float64) {
	t.Helper()
	m := regexp.MustCompile(`msg="metrics listening" addr=(\S+)`).FindStringSubmatch(p.logs.String())
	if m == nil {
		t.Fatalf("no metrics listener in the log:\n%s", p.logs)
	}
	res, err := http.Get("http://" + m[1] + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	conns := 0
	for sc := bufio.NewScanner(res.Body); sc.Scan(); {
		name, value, _ := strings.Cut(sc.Text(), " ")
		switch name {
		case "go_goroutines":
			goroutines, _ = strconv.Atoi(value)
		case "process_resident_memory_bytes":
			resident, _ = strconv.ParseFloat(value, 64)
		case product.MetricNamespace + "_connections_open":
			conns, _ = strconv.Atoi(value)
		}
	}
	return goroutines - conns, resident
}

// freeTCPPorts returns n free loopback ports, for servers that must come
// back on the same address after a restart.
func freeTCPPorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
		defer l.Close()
	}
	return ports
}

// grown lists the creators with more goroutines in after than in before,
// and counts the goroutines more,
// but for those whose number is not the replica's to keep: its
// connections' (the balancer chooses how many it holds open), its Redis
// client's connections (one more for each node that becomes a master;
// TestSoak bounds them apart), and River's maintenance services, which run
// on whichever replica is River's leader, a place that moves as replicas
// die.
func grown(before, after map[string]int) (out []string, more int) {
	for k, n := range after {
		switch {
		case strings.HasPrefix(k, "net/http."), strings.HasPrefix(k, "github.com/redis/rueidis.(*pipe)."),
			strings.HasPrefix(k, "github.com/riverqueue/river/internal/maintenance."),
			strings.HasPrefix(k, "github.com/riverqueue/river/rivershared/util/timeutil.NewTickerWithInitialTick"):
			continue
		}
		if n > before[k] {
			out = append(out, fmt.Sprintf("%s: %d -> %d", k, before[k], n))
			more += n - before[k]
		}
	}
	slices.Sort(out)
	return out, more
}
