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
	cmd := exec.Command(*bin)
	cmd.Env = append(os.Environ(), "BRAIN_ADDR=127.0.0.1:0", "BRAIN_DATA_DIR="+dir, "BRAIN_METRICS_ADDR=off",
		"BRAIN_TRUSTED_PROXIES=127.0.0.0/8", "BRAIN_RATE_LIMIT_IP=100000/min,burst=100000", "BRAIN_ADMIN_PASSWORD=admin password 123", "BRAIN_COOKIE_SECURE=false")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		log.Fatal(err)
	}
	defer cmd.Process.Kill()
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
	base := "http://" + addr
	client := &http.Client{Timeout: 120 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1000, MaxConnsPerHost: 0}}
	rss := func(key string) string {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", cmd.Process.Pid))
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, key) {
				return strings.TrimSpace(strings.TrimPrefix(l, key))
			}
		}
		return "?"
	}
	fmt.Println("before flood: VmHWM", rss("VmHWM:"))

	stop := make(chan struct{})
	var health []time.Duration
	var hwg sync.WaitGroup
	hwg.Add(1)
	go func() {
		defer hwg.Done()
		hc := &http.Client{Timeout: 120 * time.Second}
		for {
			select {
			case <-stop:
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

	var mu sync.Mutex
	lat := make([]time.Duration, 0, *n)
	codes := map[int]int{}
	retry := map[string]int{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range *n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := fmt.Sprintf(`{"username":"user%d","password":"not the password"}`, i)
			req, _ := http.NewRequest("POST", base+"/api/v1/auth/login", bytes.NewBufferString(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Forwarded-For", fmt.Sprintf("10.0.0.%d", i%*ips+1))
			<-start
			t := time.Now()
			res, err := client.Do(req)
			d := time.Since(t)
			code := -1
			if err == nil {
				io.Copy(io.Discard, res.Body)
				res.Body.Close()
				code = res.StatusCode
			}
			mu.Lock()
			lat = append(lat, d)
			codes[code]++
			if code == 503 {
				retry[res.Header.Get("Retry-After")]++
			}
			mu.Unlock()
		}()
	}
	t0 := time.Now()
	close(start)
	wg.Wait()
	wall := time.Since(t0)
	close(stop)
	hwg.Wait()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	sort.Slice(health, func(i, j int) bool { return health[i] < health[j] })
	pct := func(s []time.Duration, p float64) time.Duration {
		if len(s) == 0 {
			return 0
		}
		return s[int(p*float64(len(s)-1))]
	}
	fmt.Printf("logins: n=%d ips=%d wall=%v statuses=%v 503 Retry-After=%v\n", *n, *ips, wall.Round(time.Millisecond), codes, retry)
	fmt.Printf("login latency: p50=%v p99=%v max=%v\n", pct(lat, .5).Round(time.Millisecond), pct(lat, .99).Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond))
	fmt.Printf("health during flood: samples=%d p50=%v max=%v\n", len(health), pct(health, .5).Round(time.Millisecond), pct(health, 1).Round(time.Millisecond))
	fmt.Println("after flood: VmHWM", rss("VmHWM:"), "VmRSS", rss("VmRSS:"))
}
