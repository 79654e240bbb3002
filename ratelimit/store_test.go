package ratelimit_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/brain-template/brain/ratelimit"
	"github.com/brain-template/brain/ratelimit/redistest"
)

// clock is a fake time source for limiters that take a Now func.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// stores are the limiter implementations the shared suite runs on, each
// driven by the fake clock.
func stores() map[string]func(*testing.T, ratelimit.Policy, *clock) ratelimit.Limiter {
	return map[string]func(*testing.T, ratelimit.Policy, *clock) ratelimit.Limiter{
		"memory": func(_ *testing.T, p ratelimit.Policy, c *clock) ratelimit.Limiter {
			m := ratelimit.NewMemory(p, ratelimit.MemoryOptions{})
			m.Now = c.Now
			return m
		},
		"redis": func(t *testing.T, p ratelimit.Policy, c *clock) ratelimit.Limiter {
			r := ratelimit.NewRedis(redistest.Client(t, redistest.Option(t)), redistest.Prefix(), p)
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
				clk := &clock{now: t0}
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
				clk := &clock{now: t0}
				l := newLimiter(t, policy("p", lim("p", 1, time.Minute, 1)), clk)
				if !allow(t, l, "a").Allowed || allow(t, l, "a").Allowed || !allow(t, l, "b").Allowed {
					t.Fatal("keys a and b share a bucket")
				}
			})
			t.Run("MultiBudgetAtomic", func(t *testing.T) {
				clk := &clock{now: t0}
				l := newLimiter(t, policy("ingest", lim("ingest", 100, time.Hour, 100), lim("ingest-burst", 10, time.Second, 10)), clk)
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
					t.Fatalf("refused requests drew from the hourly budget: %+v", d)
				}
			})
			t.Run("RetryAfterIsTrue", func(t *testing.T) {
				clk := &clock{now: t0}
				l := newLimiter(t, policy("q", lim("q", 100, time.Hour, 100)), clk)
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

// Many goroutines, one key, the Redis clock: exactly burst pass.
func TestRedisConcurrentOneKey(t *testing.T) {
	l := ratelimit.NewRedis(redistest.Client(t, redistest.Option(t)), redistest.Prefix(), policy("p", lim("p", 50, time.Hour, 50)))
	var mu sync.Mutex
	passed := 0
	var wg sync.WaitGroup
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				if d, err := l.Allow(context.Background(), "one"); err == nil && d.Allowed {
					mu.Lock()
					passed++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if passed != 50 {
		t.Fatalf("%d of 320 passed, want exactly 50", passed)
	}
}

// Two replicas (two clients) sharing one Redis enforce one budget.
func TestRedisSharedBudget(t *testing.T) {
	opt := redistest.Option(t)
	pfx := redistest.Prefix()
	p := policy("p", lim("p", 10, time.Hour, 10))
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

// Keys expire on their own once their buckets would be full.
func TestRedisKeysExpire(t *testing.T) {
	c := redistest.Client(t, redistest.Option(t))
	pfx := redistest.Prefix()
	l := ratelimit.NewRedis(c, pfx, policy("p", lim("p", 10, time.Minute, 10)))
	allow(t, l, "k")
	ttl, err := c.Do(context.Background(), c.B().Pttl().Key(pfx+"p:k").Build()).AsInt64()
	if err != nil || ttl <= 0 || ttl > 7000 {
		t.Fatalf("PTTL = %d ms, %v; want it to expire about 6 s (one token) + 1 s from now", ttl, err)
	}
}

// Once Redis refuses a key, this replica refuses it locally until the
// refusal ends: a flood costs Redis one call, not one per request.
func TestRedisDenyCache(t *testing.T) {
	clk := &clock{now: t0}
	l := ratelimit.NewRedis(redistest.Client(t, redistest.Option(t)), redistest.Prefix(), policy("p", lim("p", 2, time.Minute, 2)))
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
