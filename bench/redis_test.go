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
	"math/rand/v2"
	"net/http/httptest"
	"os"
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
	"github.com/redis/rueidis"
)

func redisDeciders(b *testing.B) map[string]func(ctx context.Context, key string) bool {
	opt := redistest.Option(b)
	addr := opt.InitAddress[0]
	host, portS, _ := strings.Cut(addr, ":")
	port, _ := strconv.Atoi(portS)
	pfx := redistest.Prefix(b)

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
	probe := redistest.Client(b, redistest.Option(b)) // for the Redis process's CPU
	for name, allow := range redisDeciders(b) {
		b.Run(name, func(b *testing.B) {
			before := redisCPU(b, probe)
			defer func() {
				b.ReportMetric(float64((redisCPU(b, probe)-before).Microseconds())/float64(b.N), "redis-cpu-µs/op")
			}()
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
		l := ratelimit.NewRedis(redistest.Client(b, redistest.Option(b)), redistest.Prefix(b), budget("p", lim("p", 10, time.Second, 10)))
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

// BenchmarkRedisRealistic is the case a server meets: 10,000 keys under a
// budget of 120 a minute (burst 60), 64 callers, four requests in five for
// 100 hot keys and the rest spread over the others. The hot keys spend
// their burst within the first requests and are refused from then on; the
// others are admitted. Both limiters read, write and refuse; brain's deny
// cache answers a refused key's repeats until its Retry-After, as it does
// in the server. Both must decide alike: hot-admitted/key is what each hot
// key was admitted (its burst of 60, and 2 a second after), cold-refused
// the refusals of the others (none).
func BenchmarkRedisRealistic(b *testing.B) {
	opt := redistest.Option(b)
	opt.DisableAutoPipelining = true // as cmd/brain configures it
	rdb := redis.NewClient(&redis.Options{Addr: opt.InitAddress[0], PoolSize: 64})
	b.Cleanup(func() { rdb.Close() })
	for _, name := range []string{"brain", "redis_rate"} {
		b.Run(name, func(b *testing.B) {
			pfx := redistest.Prefix(b) // every run starts with full buckets
			var allow func(ctx context.Context, key string) (bool, error)
			if name == "brain" {
				l := ratelimit.NewRedis(redistest.Client(b, opt), pfx, budget("p", lim("p", 120, time.Minute, 60)))
				allow = func(ctx context.Context, k string) (bool, error) { d, err := l.Allow(ctx, k); return d.Allowed, err }
			} else {
				rr := redis_rate.NewLimiter(rdb)
				limit := redis_rate.Limit{Rate: 120, Burst: 60, Period: time.Minute}
				allow = func(ctx context.Context, k string) (bool, error) {
					res, err := rr.Allow(ctx, pfx+k, limit)
					return err == nil && res.Allowed > 0, err
				}
			}
			realisticLoad(b, allow)
		})
	}
}

// realisticLoad is BenchmarkRedisRealistic's traffic through allow, from
// 64 callers, with what was admitted and refused as metrics.
func realisticLoad(b *testing.B, allow func(ctx context.Context, key string) (bool, error)) {
	keys := make([]string, 10_000)
	for i := range keys {
		keys[i] = fmt.Sprintf("user-%05d", i)
	}
	var hotAdmitted, coldRefused, failed, seed atomic.Int64
	b.SetParallelism(32) // GOMAXPROCS is 2 here: 64 callers
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		rng := rand.New(rand.NewPCG(uint64(seed.Add(1)), 7))
		for pb.Next() {
			hot := rng.IntN(5) < 4
			k := keys[100+rng.IntN(len(keys)-100)]
			if hot {
				k = keys[rng.IntN(100)]
			}
			ok, err := allow(ctx, k)
			switch {
			case err != nil:
				failed.Add(1)
			case ok && hot:
				hotAdmitted.Add(1)
			case !ok && !hot:
				coldRefused.Add(1)
			}
		}
	})
	if failed.Load() > 0 {
		b.Fatalf("%d decisions failed", failed.Load())
	}
	b.ReportMetric(float64(hotAdmitted.Load())/100, "hot-admitted/key")
	b.ReportMetric(float64(coldRefused.Load()), "cold-refused")
}

// BenchmarkRedisCluster is BenchmarkRedisRealistic's traffic on brain's
// limiter against one Redis and against a Redis Cluster of three masters
// (each with a replica) on the same machine: what the cluster costs a
// decision, where a batch becomes one script call per hash slot.
func BenchmarkRedisCluster(b *testing.B) {
	cluster := redistest.StartCluster(b)
	for _, name := range []string{"single", "cluster"} {
		b.Run(name, func(b *testing.B) {
			opt := redistest.Option(b)
			if name == "cluster" {
				opt = cluster.Option()
			}
			opt.DisableAutoPipelining = true // as cmd/brain configures it
			client := redistest.Client(b, opt)
			l := ratelimit.NewRedis(client, redistest.Prefix(b), budget("p", lim("p", 120, time.Minute, 60)))
			used := func() time.Duration { return redisCPU(b, client) }
			if name == "cluster" { // every node, its replicas too: the client may not know them
				used = func() (sum time.Duration) {
					for _, d := range clusterCPU(b, cluster) {
						sum += d
					}
					return sum
				}
			}
			before := used()
			realisticLoad(b, func(ctx context.Context, k string) (bool, error) { d, err := l.Allow(ctx, k); return d.Allowed, err })
			b.ReportMetric(float64((used()-before).Microseconds())/float64(b.N), "redis-cpu-µs/op")
		})
	}
}

// redisCPU returns the CPU time (user and system, from /proc) the
// processes of every node of client's Redis have used so far: read before
// and after a run, what the run cost the Redis tier, which is what bounds
// the decisions one Redis, or one shard, can take. Redis runs on this
// machine; its process ids come from INFO server.
func redisCPU(b *testing.B, client rueidis.Client) time.Duration {
	b.Helper()
	var sum time.Duration
	for _, d := range redisCPUByNode(b, client) {
		sum += d
	}
	return sum
}

// redisCPUByNode is redisCPU of each node the client knows, by its
// address.
func redisCPUByNode(b *testing.B, client rueidis.Client) map[string]time.Duration {
	b.Helper()
	ctx := context.Background()
	cpu := map[string]time.Duration{}
	for addr, n := range client.Nodes() {
		info, err := n.Do(ctx, n.B().Info().Section("server").Build()).ToString()
		if err != nil {
			b.Fatal(err)
		}
		cpu[addr] = processCPU(b, info)
	}
	return cpu
}

// processCPU is the CPU time, from /proc, of the Redis process whose INFO
// server is info.
func processCPU(b *testing.B, info string) time.Duration {
	b.Helper()
	_, rest, _ := strings.Cut(info, "process_id:")
	pid, _, _ := strings.Cut(rest, "\n")
	stat, err := os.ReadFile("/proc/" + strings.TrimSpace(pid) + "/stat")
	if err != nil {
		b.Fatalf("Redis's process (%q) on this machine: %v", pid, err)
	}
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64) // fields 14 and 15 of proc(5), counted from after the name
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * (time.Second / 100) // USER_HZ
}
