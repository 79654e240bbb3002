package ratelimit_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-template/brain/internal/testclock"
	"github.com/brain-template/brain/ratelimit"
	"github.com/brain-template/brain/ratelimit/redistest"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// clock is the fake time source for limiters that take a Now func.
type clock = testclock.Clock

// stores are the limiter implementations the shared suite runs on, each
// driven by the fake clock.
func stores() map[string]func(*testing.T, ratelimit.Budget, *clock) ratelimit.Limiter {
	return map[string]func(*testing.T, ratelimit.Budget, *clock) ratelimit.Limiter{
		"memory": func(_ *testing.T, p ratelimit.Budget, c *clock) ratelimit.Limiter {
			m := ratelimit.NewMemory(p, ratelimit.MemoryOptions{})
			m.Now = c.Now
			return m
		},
		"redis": func(t *testing.T, p ratelimit.Budget, c *clock) ratelimit.Limiter {
			r := ratelimit.NewRedis(redistest.Client(t, redistest.Option(t)), redistest.Prefix(t), p)
			r.Now = c.Now
			return r
		},
	}
}

func allow(t *testing.T, l ratelimit.Limiter, key string) ratelimit.Decision {
	t.Helper()
	d, err := l.Allow(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestStores is one suite over every store: the behaviour of a budget does
// not depend on where it is kept.
func TestStores(t *testing.T) {
	for name, newLimiter := range stores() {
		t.Run(name, func(t *testing.T) {
			t.Run("BurstThenThrottleThenRefill", func(t *testing.T) {
				clk := testclock.New(t0)
				l := newLimiter(t, session, clk)
				for i := range 60 {
					if d := allow(t, l, "a"); !d.Allowed || d.Remaining(0) != 59-i {
						t.Fatalf("request %d: %+v", i+1, d)
					}
				}
				d := allow(t, l, "a")
				if d.Allowed || d.RetryAfter != 500*time.Millisecond || d.Reset(0) != 30*time.Second {
					t.Fatalf("61st: %+v", d)
				}
				clk.Advance(500 * time.Millisecond)
				if !allow(t, l, "a").Allowed {
					t.Fatal("refused after RetryAfter")
				}
				clk.Advance(time.Hour)
				if d := allow(t, l, "a"); !d.Allowed || d.Remaining(0) != 59 {
					t.Fatalf("after an hour the bucket holds its burst, no more: %+v", d)
				}
			})
			t.Run("Isolation", func(t *testing.T) {
				clk := testclock.New(t0)
				l := newLimiter(t, budget("p", lim("p", 1, time.Minute, 1)), clk)
				if !allow(t, l, "a").Allowed || allow(t, l, "a").Allowed || !allow(t, l, "b").Allowed {
					t.Fatal("keys a and b share a bucket")
				}
			})
			t.Run("MultiRateAtomic", func(t *testing.T) {
				clk := testclock.New(t0)
				l := newLimiter(t, budget("uploads", lim("uploads", 100, time.Hour, 100), lim("uploads-burst", 10, time.Second, 10)), clk)
				for range 10 {
					allow(t, l, "k")
				}
				for range 5 {
					if d := allow(t, l, "k"); d.Allowed || !d.Refused(1) || d.Refused(0) || d.Remaining(0) != 90 {
						t.Fatalf("over the cap: %+v", d)
					}
				}
				clk.Advance(time.Second)
				if d := allow(t, l, "k"); !d.Allowed || d.Remaining(0) != 89 {
					t.Fatalf("refused requests drew from the hourly rate: %+v", d)
				}
			})
			t.Run("Refund", func(t *testing.T) {
				for _, b := range []ratelimit.Budget{budget("q", lim("q", 10, time.Second, 10)), budget("uploads", lim("uploads", 100, time.Hour, 100), lim("uploads-burst", 10, time.Second, 10))} {
					clk := testclock.New(t0)
					l := newLimiter(t, b, clk)
					for range 9 {
						allow(t, l, "k")
					}
					d := allow(t, l, "k") // the burst of 10 is spent
					if err := l.Refund(context.Background(), "k", &d); err != nil {
						t.Fatal(err)
					}
					if last := len(b.Limits) - 1; d.Remaining(last) != 1 || d.Remaining(0) != b.Limits[0].Burst-9 {
						t.Fatalf("%s: the refunded decision says %+v", b.Name, d)
					}
					if d := allow(t, l, "k"); !d.Allowed || d.Remaining(0) != b.Limits[0].Burst-10 {
						t.Fatalf("%s: the refunded token is not back: %+v", b.Name, d)
					}
					if allow(t, l, "k").Allowed {
						t.Fatalf("%s: a refund gave back more than its token", b.Name)
					}
				}
			})
			t.Run("RetryAfterIsTrue", func(t *testing.T) {
				clk := testclock.New(t0)
				l := newLimiter(t, budget("q", lim("q", 100, time.Hour, 100)), clk)
				for range 100 {
					allow(t, l, "k")
				}
				clk.Advance(10 * time.Second)
				d := allow(t, l, "k")
				if d.Allowed || d.RetryAfter != 26*time.Second {
					t.Fatalf("%+v, want RetryAfter 26s", d)
				}
				clk.Advance(d.RetryAfter)
				if !allow(t, l, "k").Allowed {
					t.Fatal("refused once RetryAfter had passed")
				}
			})
		})
	}
}

// Many goroutines on one key, each store on its own clock (the Redis
// server's TIME for Redis): exactly burst pass.
func TestConcurrentOneKey(t *testing.T) {
	p := budget("p", lim("p", 50, time.Hour, 50))
	for name, newLimiter := range map[string]func(*testing.T) ratelimit.Limiter{
		"memory": func(*testing.T) ratelimit.Limiter { return ratelimit.NewMemory(p, ratelimit.MemoryOptions{}) },
		"redis": func(t *testing.T) ratelimit.Limiter {
			return ratelimit.NewRedis(redistest.Client(t, redistest.Option(t)), redistest.Prefix(t), p)
		},
	} {
		t.Run(name, func(t *testing.T) {
			l := newLimiter(t)
			var passed atomic.Int32
			var wg sync.WaitGroup
			for range 32 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range 10 {
						if d, err := l.Allow(context.Background(), "one"); err == nil && d.Allowed {
							passed.Add(1)
						}
					}
				}()
			}
			wg.Wait()
			if passed.Load() != 50 {
				t.Fatalf("%d of 320 concurrent requests passed, want exactly the burst of 50", passed.Load())
			}
		})
	}
}

// Two replicas (two clients) sharing one Redis enforce one budget.
func TestRedisSharedBudget(t *testing.T) {
	opt := redistest.Option(t)
	pfx := redistest.Prefix(t)
	p := budget("p", lim("p", 10, time.Hour, 10))
	a := ratelimit.NewRedis(redistest.Client(t, opt), pfx, p)
	b := ratelimit.NewRedis(redistest.Client(t, opt), pfx, p)
	passed := 0
	for i := range 40 {
		l := a
		if i%2 == 1 {
			l = b
		}
		if allow(t, l, "k").Allowed {
			passed++
		}
	}
	if passed != 10 {
		t.Fatalf("two replicas admitted %d, want the one budget of 10", passed)
	}
}

// Keys expire on their own once their buckets would be full, never before.
func TestRedisKeysExpire(t *testing.T) {
	c := redistest.Client(t, redistest.Option(t))
	pfx := redistest.Prefix(t)
	l := ratelimit.NewRedis(c, pfx, budget("p", lim("p", 10, time.Minute, 10)))
	pttl := func() int64 {
		t.Helper()
		ttl, err := c.Do(context.Background(), c.B().Pttl().Key(pfx+"p:k").Build()).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		return ttl
	}
	// Each PTTL is bounded below by the time until the bucket is full,
	// less the real time since the first decision (Redis counts it down
	// meanwhile), and above by that time rounded up to a millisecond, + 1.
	start := time.Now()
	allow(t, l, "k") // creates the key
	if ttl, low := pttl(), 6000-time.Since(start).Milliseconds(); ttl < low || ttl > 6001 {
		t.Fatalf("PTTL = %d ms; want it to expire 6 s (one token) from the first decision: %d to 6001 ms", ttl, low)
	}
	allow(t, l, "k") // updates it
	if ttl, low := pttl(), 12000-time.Since(start).Milliseconds(); ttl < low || ttl > 12001 {
		t.Fatalf("PTTL = %d ms; want it to expire 12 s (two tokens) from the first decision: %d to 12001 ms", ttl, low)
	}
}

// The Redis script decides as Memory does, whichever of its paths a
// decision takes (a new key, a key read and written, a refusal, a deny
// cache replay), for one rate and for several.
func TestRedisMatchesMemory(t *testing.T) {
	for _, p := range []ratelimit.Budget{
		// Intervals of seconds: Redis expires keys in real time while
		// the test's clock moves in steps of up to 4.8 s, so a stall of
		// the test must not outlast a key. (Keys live an interval or
		// more.)
		budget("one", lim("one", 10, time.Minute, 3)),
		budget("two", lim("slow", 100, time.Hour, 5), lim("fast", 10, time.Minute, 2)),
		// Intervals that are no whole number of µs (Redis keeps µs, rounded
		// up, memory ns): the times may differ by that rounding, under a µs
		// per token taken since the bucket was last full, never the whole
		// tokens left nor the admissions. The clock steps by an odd number
		// of µs so that no decision falls on the very µs a token comes
		// back, where the rounding would decide.
		budget("thirds", lim("thirds", 3, time.Second, 3)),
		budget("sevenths", lim("sevenths", 7, time.Minute, 4), lim("thirds-burst", 3, time.Second, 2)),
	} {
		t.Run(p.Name, func(t *testing.T) {
			clk := testclock.New(t0)
			mem, red := stores()["memory"](t, p, clk), stores()["redis"](t, p, clk)
			rnd := rand.New(rand.NewPCG(1, 2))
			rounded := false // Redis's µs may be off memory's ns
			for _, l := range p.Limits {
				rounded = rounded || (l.Window/time.Duration(l.Limit))%time.Microsecond != 0
			}
			var slack time.Duration // a µs per decision so far, where rounded
			near := func(a, b time.Duration) bool { return a-b <= slack && b-a <= slack }
			step := 60 * time.Millisecond
			if rounded {
				step = 20*time.Millisecond + 7*time.Microsecond
			}
			for i := range 400 {
				if rounded {
					slack += time.Microsecond
				}
				key := fmt.Sprint("k", rnd.IntN(2))
				want, got := allow(t, mem, key), allow(t, red, key)
				same := want.Allowed == got.Allowed && near(want.RetryAfter, got.RetryAfter)
				for j := range len(p.Limits) {
					same = same && near(want.Reset(j), got.Reset(j)) && want.Remaining(j) == got.Remaining(j) && want.Refused(j) == got.Refused(j)
				}
				if !same {
					t.Fatalf("step %d, key %s: memory %+v, redis %+v", i, key, want, got)
				}
				clk.Advance(time.Duration(rnd.IntN(80)) * step)
			}
		})
	}
}

// A value of the current format is read as it is; any other counts as a
// full bucket and is replaced.
func TestRedisReadsStoredValues(t *testing.T) {
	c := redistest.Client(t, redistest.Option(t))
	pfx := redistest.Prefix(t)
	clk := testclock.New(t0)
	l := ratelimit.NewRedis(c, pfx, budget("p", lim("p", 10, time.Minute, 10))) // a token every 6 s
	l.Now = clk.Now
	set := func(key, value string) {
		t.Helper()
		if err := c.Do(context.Background(), c.B().Set().Key(pfx+"p:"+key).Value(value).Px(time.Minute).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	// Eight tokens taken: the TAT is 48 s ahead, a little-endian double
	// of Unix µs.
	tat := make([]byte, 8)
	binary.LittleEndian.PutUint64(tat, math.Float64bits(float64(t0.Add(48*time.Second).UnixMicro())))
	set("current", string(tat))
	if d := allow(t, l, "current"); !d.Allowed || d.Remaining(0) != 1 {
		t.Fatalf("current format: %+v, want the ninth token taken", d)
	}
	set("other", "not a TAT")
	if d := allow(t, l, "other"); !d.Allowed || d.Remaining(0) != 9 {
		t.Fatalf("another value: %+v, want a full bucket", d)
	}
	if d := allow(t, l, "other"); !d.Allowed || d.Remaining(0) != 8 {
		t.Fatalf("after another value: %+v, want it replaced", d)
	}
}

// Batched decisions over several keys and two rates: exactly each key's
// burst passes, whichever path each decision took in the script.
func TestRedisConcurrentManyKeys(t *testing.T) {
	l := ratelimit.NewRedis(redistest.Client(t, redistest.Option(t)), redistest.Prefix(t),
		budget("p", lim("hourly", 50, time.Hour, 5), lim("burst", 3600, time.Hour, 8)))
	var mu sync.Mutex
	passed := map[string]int{}
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 12 {
				key := fmt.Sprint("k", (g+i)%4)
				d, err := l.Allow(context.Background(), key)
				if err != nil {
					t.Error(err)
					return
				}
				if d.Allowed != !d.Refused(0) || d.Refused(1) {
					t.Errorf("%s: %+v, want only the hourly rate to refuse", key, d)
				}
				if d.Allowed {
					mu.Lock()
					passed[key]++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	for k := range 4 {
		if n := passed[fmt.Sprint("k", k)]; n != 5 {
			t.Errorf("key k%d: %d passed, want exactly 5", k, n)
		}
	}
}

// Once Redis refuses a key, this replica refuses it locally until the
// refusal ends: a flood costs Redis one call, not one per request.
func TestRedisDenyCache(t *testing.T) {
	clk := testclock.New(t0)
	l := ratelimit.NewRedis(redistest.Client(t, redistest.Option(t)), redistest.Prefix(t), budget("p", lim("p", 2, time.Minute, 2)))
	l.Now = clk.Now
	allow(t, l, "k")
	allow(t, l, "k")
	for range 1000 { // a 500x overload flood on one key
		if d := allow(t, l, "k"); d.Allowed || d.RetryAfter <= 0 {
			t.Fatalf("flood: %+v", d)
		}
	}
	requests, hits := l.Stats()
	if requests != 3 || hits != 999 {
		t.Fatalf("Redis calls %d, deny-cache hits %d; want 3 and 999", requests, hits)
	}
	clk.Advance(30 * time.Second) // the next token
	if !allow(t, l, "k").Allowed {
		t.Fatal("still refused after the refusal ended")
	}
}

// A refusal replayed from the deny cache says which rates refuse now:
// one may have recovered since Redis refused.
func TestRedisDenyCacheReplaysRecovery(t *testing.T) {
	clk := testclock.New(t0)
	l := ratelimit.NewRedis(redistest.Client(t, redistest.Option(t)), redistest.Prefix(t),
		budget("p", lim("fast", 1, time.Second, 1), lim("slow", 2, time.Minute, 2)))
	l.Now = clk.Now
	allow(t, l, "k")
	clk.Advance(time.Second)
	allow(t, l, "k") // both rates are empty now
	d := allow(t, l, "k")
	if d.Allowed || !d.Refused(0) || !d.Refused(1) || d.RetryAfter != 29*time.Second {
		t.Fatalf("from Redis: %+v, want both budgets to refuse for 29 s", d)
	}
	clk.Advance(1500 * time.Millisecond) // fast has a token again; slow has not
	d = allow(t, l, "k")
	if _, hits := l.Stats(); hits != 1 {
		t.Fatalf("deny-cache hits %d, want the replay from the cache", hits)
	}
	if d.Allowed || d.Refused(0) || !d.Refused(1) || d.RetryAfter != 27500*time.Millisecond || d.Tightest() != 1 {
		t.Fatalf("replayed: %+v, want only slow to refuse, for 27.5 s", d)
	}
}

// CheckRedis passes on a server that runs the script and fails on one
// that cannot: here, a user the server's ACL forbids to run scripts.
func TestCheckRedis(t *testing.T) {
	opt := redistest.Option(t)
	admin := redistest.Client(t, opt)
	ctx := context.Background()
	if err := ratelimit.CheckRedis(ctx, admin, redistest.Prefix(t)); err != nil {
		t.Fatalf("a Redis that runs the script: %v", err)
	}
	user := "brain-test-noscript-" + strings.TrimSuffix(strings.TrimPrefix(redistest.Prefix(t), "brain-test:"), ":")
	acl := func(args ...string) {
		t.Helper()
		if err := admin.Do(ctx, admin.B().Arbitrary("ACL").Args(args...).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
	acl("SETUSER", user, "on", ">pw", "~brain-test:*", "+@all", "-@scripting")
	t.Cleanup(func() { admin.Do(context.Background(), admin.B().Arbitrary("ACL").Args("DELUSER", user).Build()) })
	opt.Username, opt.Password = user, "pw"
	err := ratelimit.CheckRedis(ctx, redistest.Client(t, opt), redistest.Prefix(t))
	if err == nil || !strings.Contains(err.Error(), "7.0 or later") {
		t.Fatalf("a Redis that refuses scripts: %v, want the check to fail and say what it needs", err)
	}
}

// In a traced request, a decision's Redis round trip is a span of it; a
// refusal the deny cache answers makes none, and outside a trace none is made.
func TestRedisRoundTripIsASpan(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	r := ratelimit.NewRedis(redistest.Client(t, redistest.Option(t)), redistest.Prefix(t), budget("p", lim("p", 1, time.Hour, 1)))
	if _, err := r.Allow(context.Background(), "k"); err != nil { // untraced: no span
		t.Fatal(err)
	}
	ctx, request := tp.Tracer("test").Start(context.Background(), "request")
	for range 2 { // refused by Redis, then by the deny cache
		if d, err := r.Allow(ctx, "k"); err != nil || d.Allowed {
			t.Fatalf("Allow: %+v, %v; want refused", d, err)
		}
	}
	request.End()
	var redis []string
	for _, s := range exp.GetSpans() {
		if s.Name == "redis rate limit" && s.Parent.SpanID() == request.SpanContext().SpanID() {
			redis = append(redis, s.Name)
		}
	}
	if spans := exp.GetSpans(); len(redis) != 1 || len(spans) != 2 {
		t.Fatalf("spans %v; want the request's and one Redis round trip in it", spans)
	}
}
