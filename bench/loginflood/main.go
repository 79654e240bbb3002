// Command loginflood starts a brain binary, sends n concurrent
// wrong-password logins from k client addresses (X-Forwarded-For; the
// binary trusts 127.0.0.0/8 and its ip budget is raised out of the way),
// polls /api/v1/health every 50 ms meanwhile, and reports peak RSS
// (VmHWM, Linux), login latency and health latency:
//
//	go build -o /tmp/brain ./cmd/brain
//	cd bench && go run ./loginflood -bin /tmp/brain -n 400 -ips 20
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
)

func main() {
	bin := flag.String("bin", "", "the brain binary to start (required)")
	n := flag.Int("n", 400, "concurrent logins")
	ips := flag.Int("ips", 20, "client IPs")
	flag.Parse()
	if *bin == "" || *n < 1 || *ips < 1 {
		flag.Usage()
		os.Exit(2)
	}
	dir, _ := os.MkdirTemp("", "flood")
	defer os.RemoveAll(dir)
	cmd, addr := start(*bin, dir)
	defer cmd.Process.Kill()
	base := "http://" + addr
	pid := cmd.Process.Pid
	fmt.Println("before flood: VmHWM", rss(pid, "VmHWM:"))
	stopHealth := pollHealth(base)
	f := flood(base, *n, *ips)
	health := stopHealth()
	report(*n, *ips, f, health)
	fmt.Println("after flood: VmHWM", rss(pid, "VmHWM:"), "VmRSS", rss(pid, "VmRSS:"))
}

// start starts bin with its data in dir and returns it once it logs the
// address it listens on; the rest of its log is discarded.
func start(bin, dir string) (*exec.Cmd, string) {
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "BRAIN_ADDR=127.0.0.1:0", "BRAIN_DATA_DIR="+dir, "BRAIN_METRICS_ADDR=off",
		"BRAIN_TRUSTED_PROXIES=127.0.0.0/8", "BRAIN_RATE_LIMIT_IP=100000/min,burst=100000", "BRAIN_ADMIN_PASSWORD=admin password 123", "BRAIN_COOKIE_SECURE=false")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		log.Fatal(err)
	}
	re := regexp.MustCompile(`msg="brain listening" addr=(\S+)`)
	sc := bufio.NewScanner(stderr)
	var addr string
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			addr = m[1]
			break
		}
	}
	go io.Copy(io.Discard, stderr)
	return cmd, addr
}

// rss is the value of key (VmHWM:, VmRSS:) in /proc/PID/status, or "?".
func rss(pid int, key string) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, key) {
			return strings.TrimSpace(strings.TrimPrefix(l, key))
		}
	}
	return "?"
}

// pollHealth times GET /api/v1/health every 50 ms until the function it
// returns is called, which returns the latencies.
func pollHealth(base string) (stop func() []time.Duration) {
	done := make(chan struct{})
	var health []time.Duration
	var hwg sync.WaitGroup
	hwg.Add(1)
	go func() {
		defer hwg.Done()
		hc := &http.Client{Timeout: 120 * time.Second}
		for {
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
			t := time.Now()
			res, err := hc.Get(base + "/api/v1/health")
			if err == nil {
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
			}
			health = append(health, time.Since(t))
		}
	}()
	return func() []time.Duration {
		close(done)
		hwg.Wait()
		return health
	}
}

// A floodResult is what the logins got.
type floodResult struct {
	lat   []time.Duration // each login's latency, sorted
	codes map[int]int     // statuses; -1 for a transport error
	retry map[string]int  // the 503s' Retry-After
	wall  time.Duration   // from the first login sent to the last answer
}

// flood sends n wrong-password logins at once, from ips addresses.
func flood(base string, n, ips int) floodResult {
	client := &http.Client{Timeout: 120 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1000, MaxConnsPerHost: 0}}
	var mu sync.Mutex
	f := floodResult{lat: make([]time.Duration, 0, n), codes: map[int]int{}, retry: map[string]int{}}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := loginRequest(base, i, ips)
			<-start
			d, code, retryAfter := send(client, req)
			mu.Lock()
			f.lat = append(f.lat, d)
			f.codes[code]++
			if code == 503 {
				f.retry[retryAfter]++
			}
			mu.Unlock()
		}()
	}
	t0 := time.Now()
	close(start)
	wg.Wait()
	f.wall = time.Since(t0)
	sort.Slice(f.lat, func(i, j int) bool { return f.lat[i] < f.lat[j] })
	return f
}

// loginRequest is login i: user i, a wrong password, from address
// 10.0.0.(i mod ips + 1).
func loginRequest(base string, i, ips int) *http.Request {
	body := fmt.Sprintf(`{"username":"user%d","password":"not the password"}`, i)
	req, _ := http.NewRequest("POST", base+"/api/v1/auth/login", bytes.NewBufferString(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Forwarded-For", fmt.Sprintf("10.0.0.%d", i%ips+1))
	return req
}

// send sends req and returns its latency, its status (-1 for a transport
// error) and its Retry-After.
func send(client *http.Client, req *http.Request) (time.Duration, int, string) {
	t := time.Now()
	res, err := client.Do(req)
	d := time.Since(t)
	if err != nil {
		return d, -1, ""
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return d, res.StatusCode, res.Header.Get("Retry-After")
}

// report prints the logins' statuses and latencies and the health
// checks' latencies.
func report(n, ips int, f floodResult, health []time.Duration) {
	sort.Slice(health, func(i, j int) bool { return health[i] < health[j] })
	fmt.Printf("logins: n=%d ips=%d wall=%v statuses=%v 503 Retry-After=%v\n", n, ips, f.wall.Round(time.Millisecond), f.codes, f.retry)
	fmt.Printf("login latency: p50=%v p99=%v max=%v\n", pct(f.lat, .5).Round(time.Millisecond), pct(f.lat, .99).Round(time.Millisecond), f.lat[len(f.lat)-1].Round(time.Millisecond))
	fmt.Printf("health during flood: samples=%d p50=%v max=%v\n", len(health), pct(health, .5).Round(time.Millisecond), pct(health, 1).Round(time.Millisecond))
}

// pct is the p-th quantile of sorted s, 0 for none.
func pct(s []time.Duration, p float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	return s[int(p*float64(len(s)-1))]
}
