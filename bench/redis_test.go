package bench_test

// Redis benchmarks beside the peers, in the same run, against the same
// local Redis (BRAIN_TEST_REDIS_URL):
//
//	cd bench && BRAIN_TEST_REDIS_URL=redis://127.0.0.1:6379/0 go test -run '^$' -bench Redis -count 6 .
//
// decisions/s = 1e9 / (ns/op). Budgets are large, so every decision is a
// full read-decide-write in Redis (the deny cache never answers).

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-template/brain/internal/testclock"
	"github.com/brain-template/brain/ratelimit"
	"github.com/brain-template/brain/ratelimit/redistest"
	"github.com/go-chi/httprate"
	httprateredis "github.com/go-chi/httprate-redis"
	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

func redisDeciders(b *testing.B) map[string]func(ctx context.Context, key string) bool {
	opt := redistest.Option(b)
	addr := opt.InitAddress[0]
	host, portS, _ := strings.Cut(addr, ":")
	port, _ := strconv.Atoi(portS)
	pfx := redistest.Prefix()

	oursOpt := opt
	oursOpt.DisableAutoPipelining = true // as cmd/brain configures it: the limiter batches itself
	ours := ratelimit.NewRedis(redistest.Client(b, oursOpt), pfx, budget("p", lim("p", big, time.Second, big)))

	rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 64})
	b.Cleanup(func() { rdb.Close() })
	rr := redis_rate.NewLimiter(rdb)

	hrr, err := httprateredis.NewRedisLimitCounter(&httprateredis.Config{Host: host, Port: uint16(port), PrefixKey: pfx + "httprate", FallbackDisabled: true, MaxActive: 64, MaxIdle: 64})
	if err != nil {
		b.Fatal(err)
	}
	hr := httprate.NewRateLimiter(big, time.Second, httprate.WithLimitCounter(hrr), httprate.WithResponseHeaders(httprate.ResponseHeaders{}))
	req := httptest.NewRequest("GET", "/", nil)

	return map[string]func(context.Context, string) bool{
		"brain": func(ctx context.Context, k string) bool { d, err := ours.Allow(ctx, k); return err == nil && d.Allowed },
		"redis_rate": func(ctx context.Context, k string) bool {
			res, err := rr.Allow(ctx, pfx+k, redis_rate.Limit{Rate: big, Burst: big, Period: time.Second})
			return err == nil && res.Allowed > 0
		},
		"httprate_redis": func(ctx context.Context, k string) bool {
			return !hr.OnLimit(httptest.NewRecorder(), req, k)
		},
	}
}

func benchRedis(b *testing.B, callers int) {
	for name, allow := range redisDeciders(b) {
		b.Run(name, func(b *testing.B) {
			var next atomic.Int64
			var failed atomic.Int64
			b.SetParallelism(callers / 2) // GOMAXPROCS is 2 here: callers goroutines in all
			b.RunParallel(func(pb *testing.PB) {
				ctx := context.Background()
				id := next.Add(1)
				i := 0
				for pb.Next() {
					if !allow(ctx, fmt.Sprintf("k%d-%d", id, i%1000)) {
						failed.Add(1)
					}
					i++
				}
			})
			if failed.Load() > 0 {
				b.Fatalf("%d decisions failed or were refused", failed.Load())
			}
		})
	}
}

func BenchmarkRedis64Callers(b *testing.B) { benchRedis(b, 64) }
func BenchmarkRedis1Caller(b *testing.B) {
	for name, allow := range redisDeciders(b) {
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			i := 0
			for b.Loop() {
				if !allow(ctx, fmt.Sprintf("one-%d", i%1000)) {
					b.Fatal("refused or failed")
				}
				i++
			}
		})
	}
}

// BenchmarkRedisFlood offers one key ten times its budget for ten (fake)
// seconds and reports how many Redis calls the deny cache saved.
func BenchmarkRedisFlood(b *testing.B) {
	for b.Loop() {
		clk := testclock.New(t0)
		l := ratelimit.NewRedis(redistest.Client(b, redistest.Option(b)), redistest.Prefix(), budget("p", lim("p", 10, time.Second, 10)))
		l.Now = clk.Now
		offered, admitted := 0, 0
		for range 10 * 100 { // 100 requests per second, 10 seconds: 10x overload
			if d, err := l.Allow(context.Background(), "flooded"); err == nil && d.Allowed {
				admitted++
			}
			offered++
			clk.Advance(10 * time.Millisecond)
		}
		calls, hits := l.Stats()
		b.ReportMetric(float64(offered), "offered")
		b.ReportMetric(float64(admitted), "admitted")
		b.ReportMetric(float64(calls), "redis-calls")
		b.ReportMetric(float64(hits), "saved-calls")
	}
}
