package bench_test

// Benchmarks of the in-memory limiter beside its peers. Each run measures
// every limiter in one process; on a shared machine compare them run by
// run, with one binary run again and again (BENCHMARKS.md):
//
//	cd bench && go test -c -o /tmp/bench.test .
//	for i in $(seq 10); do /tmp/bench.test -test.run '^$' -test.bench 'MemoryHotKey|Memory100k|Memory1M' -test.benchmem -test.count 1; done
//
// Every limiter gets a budget large enough that decisions are admitted, so
// each run does the full work of a decision (read, refill, take, write).
// At 2^30 tokens a second a bucket is full again a nanosecond after a
// decision, so brain may forget any key between two visits; the
// brain_busy_keys rows have keys that hold state between visits, which
// brain's table must keep. Each reports cpu-ns/op, the thread's CPU time
// per decision, steadier than ns/op on a loaded machine.

import (
	"context"
	"fmt"
	"net/http/httptest"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/brain-template/brain/ratelimit"
	"github.com/go-chi/httprate"
	"github.com/sethvargo/go-limiter/memorystore"
	"golang.org/x/time/rate"
)

const big = 1 << 30 // tokens per second: never refused within a benchmark

func keys(n int) []string {
	ks := make([]string, n)
	for i := range ks {
		ks[i] = fmt.Sprintf("key-%011d", i) // 16 bytes
	}
	return ks
}

// deciders are the limiters compared, each as a function of a key.
func deciders(b *testing.B) map[string]func(string) bool {
	ctx := context.Background()
	p := budget("p", lim("p", big, time.Second, big))
	ours := ratelimit.NewMemory(p, ratelimit.MemoryOptions{MaxKeys: 2_000_000})
	seth, err := memorystore.New(&memorystore.Config{Tokens: big, Interval: time.Second, SweepInterval: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	xrate := map[string]*rate.Limiter{}
	hr := httprate.NewRateLimiter(big, time.Second, httprate.WithResponseHeaders(httprate.ResponseHeaders{}))
	w := httptest.NewRecorder()
	r := httptest.NewRequest("GET", "/", nil)
	return map[string]func(string) bool{
		"brain": func(k string) bool { d, _ := ours.Allow(ctx, k); return d.Allowed },
		"sethvargo_memorystore": func(k string) bool {
			_, _, _, ok, _ := seth.Take(ctx, k)
			return ok
		},
		"x_time_rate_mutex_map": func(k string) bool {
			mu.Lock()
			l := xrate[k]
			if l == nil {
				l = rate.NewLimiter(big, big)
				xrate[k] = l
			}
			mu.Unlock()
			return l.Allow()
		},
		"httprate": func(k string) bool { return !hr.OnLimit(w, r, k) },
	}
}

func BenchmarkMemoryHotKey(b *testing.B) {
	for name, allow := range deciders(b) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			loopCPU(b, func() { allow("key-00000000001") })
		})
	}
}

func BenchmarkMemory100kKeys(b *testing.B) { benchmarkKeys(b, 100_000) }

// BenchmarkMemory1MKeys is BenchmarkMemory100kKeys with ten times the keys:
// each limiter's state is far larger than the caches.
func BenchmarkMemory1MKeys(b *testing.B) {
	if testing.Short() {
		benchmarkKeys(b, 10_000) // make bench-smoke: the code runs, quickly
		return
	}
	benchmarkKeys(b, 1_000_000)
}

func benchmarkKeys(b *testing.B, n int) {
	ks := keys(n)
	ds := deciders(b)
	// Each decision pushes the key's bucket a second from full, longer
	// than a key takes to come back even on a loaded machine; the burst,
	// just under the longest refill a rate may have, is never reached.
	busy := ratelimit.NewMemory(budget("p", lim("p", 1, time.Second, 2_500_000)), ratelimit.MemoryOptions{MaxKeys: 2_000_000})
	ds["brain_busy_keys"] = func(k string) bool { d, _ := busy.Allow(context.Background(), k); return d.Allowed }
	for name, allow := range ds {
		b.Run(name, func(b *testing.B) {
			for _, k := range ks { // every key known before timing
				allow(k)
			}
			b.ReportAllocs()
			i := 0
			loopCPU(b, func() {
				allow(ks[i])
				if i++; i == len(ks) {
					i = 0
				}
			})
		})
	}
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkMemoryBytesPerKey reports the heap each tracked 16-byte key
// costs (B/key), ours beside sethvargo's memorystore: n keys offered to a
// limiter bounded at n, the heap divided by the keys it holds (keys).
func BenchmarkMemoryBytesPerKey(b *testing.B) {
	const n = 500_000
	ks := keys(n)
	for _, name := range []string{"brain", "sethvargo_memorystore"} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				before := heapInUse()
				var keep any
				held := n
				switch name {
				case "brain":
					m := ratelimit.NewMemory(budget("p", lim("p", 10, time.Second, 10)), ratelimit.MemoryOptions{MaxKeys: n})
					for _, k := range ks {
						m.AllowAt(k, t0)
					}
					keep, held = m, m.Len()
				default:
					s, _ := memorystore.New(&memorystore.Config{Tokens: 10, Interval: time.Second, SweepInterval: time.Hour})
					for _, k := range ks {
						s.Take(context.Background(), k)
					}
					keep = s
				}
				after := heapInUse()
				b.ReportMetric(float64(after-before)/float64(held), "B/key")
				b.ReportMetric(float64(held), "keys")
				runtime.KeepAlive(keep)
			}
		})
	}
}

// BenchmarkMemoryBound offers 10 million distinct keys to a limiter bounded
// at 1 million and reports the heap it holds afterwards (MB).
func BenchmarkMemoryBound(b *testing.B) {
	for b.Loop() {
		before := heapInUse()
		m := ratelimit.NewMemory(budget("p", lim("p", 10, time.Second, 10)), ratelimit.MemoryOptions{MaxKeys: 1_000_000})
		buf := []byte("key-00000000000")
		for i := range 10_000_000 {
			for j, x := len(buf)-1, i; j >= 4; j, x = j-1, x/10 {
				buf[j] = byte('0' + x%10)
			}
			m.AllowAt(string(buf), t0)
		}
		after := heapInUse()
		b.ReportMetric(float64(after-before)/1e6, "MB-held")
		b.ReportMetric(float64(m.Len()), "keys")
		runtime.KeepAlive(m)
	}
}
