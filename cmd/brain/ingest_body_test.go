package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-template/brain/ingest"
)

// attackSize is the size of the bodies below: the most an ingest takes.
const attackSize = ingest.MaxBodyBytes

// attackBodies are ingest bodies of attackSize bytes built to be costly to
// refuse: millions of tiny JSON values where a batch has none, arrays
// nested a thousand deep, one member name of 8 MiB. Canonicalizing the
// first before checking it took 3.5 s of CPU and 668 MB.
func attackBodies() map[string][]byte {
	fill := func(prefix, unit, suffix string) []byte {
		n := (attackSize - len(prefix) - len(suffix)) / len(unit)
		b := []byte(prefix + strings.Repeat(unit, n))
		return append(bytes.TrimSuffix(b, []byte(",")), suffix...)
	}
	return map[string][]byte{
		"tiny values in an unknown member": fill(`{"project":"p","items":[{"text":"x"}],"junk":[`, "0,", "]}"),
		"tiny values as items":             fill(`{"project":"p","items":[`, "0,", "]}"),
		"tiny values as one item's tags":   fill(`{"project":"p","items":[{"text":"x","tags":[`, "0,", "]}]}"),
		"deep nesting":                     fill(`{"project":"p","items":[{"text":"x"}],"junk":[`, strings.Repeat("[", 1000)+strings.Repeat("]", 1000)+",", "]}"),
		"a huge member name":               fill(`{"project":"p","items":[{"text":"x"}],"`, "a", `":0}`),
	}
}

// validBody is a valid batch of about attackSize bytes: 1000 items.
func validBody() []byte {
	items := make([]string, ingest.MaxItems)
	for i := range items {
		items[i] = fmt.Sprintf(`{"text":"%04d %s"}`, i, strings.Repeat("x", attackSize/ingest.MaxItems-40))
	}
	return []byte(`{"project":"p","items":[` + strings.Join(items, ",") + `]}`)
}

// largeBodies is the client of large bodies: it sends Expect:
// 100-continue and waits for the server's go-ahead (or its refusal)
// before it sends a body, however long the server takes.
var largeBodies = &http.Client{Transport: &http.Transport{ExpectContinueTimeout: time.Minute}}

// postRaw posts body to the ingest operation as it is, with the session's
// cookie and Expect: 100-continue; the status and answer, or a transport
// error.
func (s session) postRaw(body []byte) (int, http.Header, string, error) {
	req, _ := http.NewRequest("POST", s.base+"/api/v1/memory/ingest", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Expect", "100-continue")
	k, v, _ := strings.Cut(s.cookie, ": ")
	req.Header.Set(k, v)
	res, err := largeBodies.Do(req)
	if err != nil {
		return 0, nil, "", err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, string(raw), err
}

// procCPU is process pid's user and system CPU time so far, in the
// kernel's ticks of 10 ms.
func procCPU(tb testing.TB, pid int) time.Duration {
	tb.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		tb.Fatal(err)
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:])) // after the command, which may hold spaces
	user, _ := strconv.ParseInt(f[11], 10, 64)
	sys, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(user+sys) * 10 * time.Millisecond
}

// procMemory reads field (VmRSS, VmHWM) of process pid's status, in
// bytes; 0 once it has exited.
func procMemory(pid int, field string) int64 {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// A cost is what one request cost the server: CPU, and how far its peak
// resident memory rose above what it held before.
type cost struct {
	cpu    time.Duration
	growth int64
}

// measure runs send and returns what it cost process pid: it resets the
// process's peak (clear_refs 5) before.
func measure(t *testing.T, pid int, send func()) cost {
	t.Helper()
	before := procMemory(pid, "VmRSS")
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		t.Fatalf("reset the peak resident memory: %v", err)
	}
	cpu := procCPU(t, pid)
	send()
	return cost{cpu: procCPU(t, pid) - cpu, growth: procMemory(pid, "VmHWM") - before}
}

// What refusing a body costs grows with its bytes, not with its shape:
// each body built to be costly is refused (422, a short answer that
// repeats none of it) for no more CPU than accepting a valid batch of
// the same size, and the server's peak memory rises by less than four
// times the body. Measured on brain in a process of its own, without the
// race detector, whose shadow memory would be measured with it.
func TestIngestBodyCost(t *testing.T) {
	if raceEnabled {
		t.Skip("measures brain's memory, which the race detector multiplies; make test runs it without -race")
	}
	p := startProc(t, memoryEnv(nil))
	s := loginAdmin(t, p.base)
	pid := p.cmd.Process.Pid
	s.ingest(map[string]any{"project": "p", "items": []map[string]string{{"text": "warm up"}}})

	costs := map[string]cost{}
	for name, body := range attackBodies() {
		costs[name] = measure(t, pid, func() {
			status, _, answer, err := s.postRaw(body)
			if err != nil || status != http.StatusUnprocessableEntity || len(answer) > 8<<10 || strings.Contains(answer, "junk") || strings.Contains(answer, "aaaa") {
				t.Errorf("%s: %d %v %.300s; want a short 422", name, status, err, answer)
			}
		})
	}
	valid := measure(t, pid, func() {
		if status, _, answer, err := s.postRaw(validBody()); err != nil || status != http.StatusAccepted {
			t.Fatalf("a valid batch of 8 MiB: %d %v %s", status, err, answer)
		}
	})
	t.Logf("a valid batch: CPU %v, peak +%d MB", valid.cpu, valid.growth>>20)
	for name, c := range costs {
		t.Logf("%s: CPU %v, peak +%d MB", name, c.cpu, c.growth>>20)
		if c.cpu > 2*valid.cpu+50*time.Millisecond {
			t.Errorf("%s cost %v of CPU, a valid batch %v", name, c.cpu, valid.cpu)
		}
		if c.growth > 4*attackSize {
			t.Errorf("%s raised the peak memory by %d MB, more than four times the body", name, c.growth>>20)
		}
	}
}

// Sixty costly bodies at once from one session keep the server under
// 1 GB: the bytes in flight bound them (BRAIN_BODY_BYTES_IN_FLIGHT_PER_USER
// admits two of 8 MiB; the rest are refused, 503 with Retry-After: 1,
// before a byte is read), and each admitted one costs little. A watchdog
// kills the server at 1 GB, so a brain without the bound fails the test
// rather than the machine.
func TestIngestBodyFloodMemory(t *testing.T) {
	const bound = 1 << 30
	p := startProc(t, memoryEnv(nil))
	s := loginAdmin(t, p.base)
	pid := p.cmd.Process.Pid
	body := attackBodies()["tiny values in an unknown member"]

	var peak atomic.Int64
	done := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			rss := procMemory(pid, "VmRSS")
			if rss > peak.Load() {
				peak.Store(rss)
			}
			if rss > bound {
				_ = p.cmd.Process.Kill()
				return
			}
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	var wg sync.WaitGroup
	var mu sync.Mutex
	answers := map[string]int{}
	for range 60 {
		wg.Go(func() {
			status, header, answer, err := s.postRaw(body)
			kind := strconv.Itoa(status)
			switch {
			case err != nil:
				kind = "transport error"
			case status == http.StatusServiceUnavailable && header.Get("Retry-After") == "1" && strings.Contains(answer, "retry"):
			case status == http.StatusUnprocessableEntity:
			default:
				kind += " " + answer
			}
			mu.Lock()
			answers[kind]++
			mu.Unlock()
		})
	}
	wg.Wait()
	close(done)
	<-watched
	hwm := procMemory(pid, "VmHWM")
	t.Logf("answers %v; peak RSS %d MB (sampled), %d MB (VmHWM)", answers, peak.Load()>>20, hwm>>20)
	if peak.Load() > bound || hwm > bound {
		t.Fatalf("60 bodies at once took the server to %d MB", max(peak.Load(), hwm)>>20)
	}
	if answers["422"]+answers["503"] != 60 || answers["422"] == 0 {
		t.Fatalf("answers %v: want each 422, or 503 with Retry-After: 1", answers)
	}
}

// A legitimate slow upload arrives: a valid batch of 8 MiB sent at
// 1 MiB/s takes 8 s, well within what the minimum receive rate allows
// (5 s + 8 MiB / 64 KiB/s), and is accepted.
func TestSlowUploadArrives(t *testing.T) {
	if testing.Short() {
		t.Skip("takes 8 s")
	}
	base, _ := MustRunServer(t, memoryEnv(nil))
	s := loginAdmin(t, base)
	body := validBody()
	req, _ := http.NewRequest("POST", base+"/api/v1/memory/ingest", &pacedReader{b: body, rate: 1 << 20, start: time.Now()})
	req.ContentLength = int64(len(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Cookie", strings.TrimPrefix(s.cookie, "Cookie: "))
	start := time.Now()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	answer, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusAccepted {
		t.Fatalf("a valid 8 MiB batch at 1 MiB/s: %d %s, want 202", res.StatusCode, answer)
	}
	t.Logf("%d bytes at 1 MiB/s: 202 after %v", len(body), time.Since(start).Round(time.Millisecond))
}

// A pacedReader reads b at rate bytes a second from start.
type pacedReader struct {
	b     []byte
	rate  int
	start time.Time
	sent  int
}

func (p *pacedReader) Read(buf []byte) (int, error) {
	if p.sent == len(p.b) {
		return 0, io.EOF
	}
	time.Sleep(time.Until(p.start.Add(time.Duration(p.sent) * time.Second / time.Duration(p.rate))))
	n := copy(buf[:min(len(buf), 64<<10)], p.b[p.sent:])
	p.sent += n
	return n, nil
}
