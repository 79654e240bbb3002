package ratelimit_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/brain-template/brain/internal/testclock"
	"github.com/brain-template/brain/internal/testproxy"
	"github.com/brain-template/brain/ratelimit"
	"github.com/brain-template/brain/ratelimit/redistest"
)

// countingLimiter counts the calls that reach the store.
type countingLimiter struct {
	ratelimit.Limiter
	mu    sync.Mutex
	calls int
}

func (c *countingLimiter) Allow(ctx context.Context, key string) (ratelimit.Decision, error) {
	c.mu.Lock()
	c.calls++
	c.mu.Unlock()
	return c.Limiter.Allow(ctx, key)
}

func (c *countingLimiter) n() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

type transition struct {
	state string
	err   bool
}

// outage builds a Resilient limiter whose Redis traffic goes through a
// proxy the test controls, with a fake clock for the breaker.
func outage(t *testing.T, mode ratelimit.OnStoreError) (*ratelimit.Resilient, *testproxy.Proxy, *countingLimiter, *clock, *[]transition, *ratelimit.Breaker) {
	t.Helper()
	opt := redistest.Option(t)
	p := testproxy.New(t, opt.InitAddress[0])
	opt.InitAddress = []string{p.Addr()}
	opt.DisableRetry = true
	client := redistest.Client(t, opt)
	b := budget("p", lim("p", 3, time.Hour, 3))
	store := &countingLimiter{Limiter: ratelimit.NewRedis(client, redistest.Prefix(t), b)}
	clk := testclock.New(t0)
	fallback := ratelimit.NewMemory(b, ratelimit.MemoryOptions{})
	fallback.Now = clk.Now
	br := ratelimit.NewBreaker()
	br.Now = clk.Now
	r := ratelimit.NewResilient(store, fallback, mode, br)
	r.Timeout = 200 * time.Millisecond
	var mu sync.Mutex
	var log []transition
	br.OnStateChange = func(state string, err error) {
		mu.Lock()
		log = append(log, transition{state, err != nil})
		mu.Unlock()
	}
	return r, p, store, clk, &log, br
}

func TestOutage(t *testing.T) {
	for _, mode := range []ratelimit.OnStoreError{ratelimit.Local, ratelimit.Open, ratelimit.Closed} {
		t.Run(string(mode), func(t *testing.T) {
			r, p, store, clk, log, br := outage(t, mode)
			ctx := context.Background()
			if d, err := r.Allow(ctx, "k"); err != nil || !d.Allowed {
				t.Fatalf("healthy: %+v %v", d, err)
			}
			p.Cut()
			// The breaker opens after 3 failures, then the store is skipped.
			for range 3 {
				r.Allow(ctx, "k")
			}
			before := store.n()
			var admitted, refused, failed int
			for range 20 {
				d, err := r.Allow(ctx, "k")
				switch {
				case errors.Is(err, ratelimit.ErrStoreUnavailable):
					failed++
				case err != nil:
					t.Fatalf("unexpected error: %v", err)
				case d.Allowed:
					admitted++
				default:
					refused++
				}
			}
			if store.n() != before {
				t.Fatalf("with the breaker open, %d calls still went to Redis", store.n()-before)
			}
			want := map[ratelimit.OnStoreError][3]int{
				ratelimit.Local:  {0, 20, 0}, // the local bucket (3) was spent by the 3 failing calls
				ratelimit.Open:   {20, 0, 0},
				ratelimit.Closed: {0, 0, 20},
			}[mode]
			if got := [3]int{admitted, refused, failed}; got != want {
				t.Fatalf("during the outage admitted, refused, failed = %v, want %v", got, want)
			}
			if errs, open := br.Stats(); !open || errs < 3 {
				t.Fatalf("Stats = %d errors, open %v during the outage", errs, open)
			}

			// Restored, and the cooldown over: one probe closes the breaker.
			p.Restore()
			clk.Advance(2 * time.Second)
			deadline := time.Now().Add(5 * time.Second)
			for {
				if d, err := r.Allow(ctx, "fresh"); err == nil && d.N == 1 {
					if _, open := br.Stats(); !open {
						break
					}
				}
				if time.Now().After(deadline) {
					t.Fatal("the breaker did not close after Redis came back")
				}
				clk.Advance(time.Minute)          // let the next probe through
				time.Sleep(10 * time.Millisecond) // rueidis reconnecting
			}
			got := *log
			if len(got) != 2 || got[0] != (transition{"open", true}) || got[1] != (transition{"closed", false}) {
				t.Fatalf("transitions = %+v, want one open (with its error) and one closed", got)
			}
		})
	}
}

// A refund goes where its decision was made: to Redis while it answers,
// to the fallback when it decided during an outage.
func TestOutageRefund(t *testing.T) {
	r, p, _, _, _, _ := outage(t, ratelimit.Local)
	ctx := context.Background()
	spend := func(key string) (admitted int) {
		for range 4 {
			if d, _ := r.Allow(ctx, key); d.Allowed {
				admitted++
			}
		}
		return admitted
	}
	d, err := r.Allow(ctx, "k")
	if err != nil || r.Refund(ctx, "k", &d) != nil {
		t.Fatalf("healthy: %+v %v", d, err)
	}
	if n := spend("k"); n != 3 {
		t.Fatalf("Redis admitted %d of 4 after a refund, want its whole burst of 3", n)
	}
	p.Cut()
	for range 3 { // the breaker opens
		r.Allow(ctx, "x")
	}
	if d, err = r.Allow(ctx, "j"); err != nil || !d.Allowed {
		t.Fatalf("the fallback: %+v %v", d, err)
	}
	if err := r.Refund(ctx, "j", &d); err != nil {
		t.Fatalf("a refund of the fallback's decision: %v (sent to Redis?)", err)
	}
	if n := spend("j"); n != 3 {
		t.Fatalf("the fallback admitted %d of 4 after a refund, want its whole burst of 3", n)
	}
}

// A slow Redis costs each request at most Timeout, and only until the
// breaker opens: at most 1 + 3 calls reach it, and none waits out its 2 s
// delay (4 that did would take 8 s; a loaded machine stays far below).
func TestOutageSlowRedis(t *testing.T) {
	r, p, store, _, _, _ := outage(t, ratelimit.Local)
	ctx := context.Background()
	r.Allow(ctx, "k")
	p.Delay(2 * time.Second)
	start := time.Now()
	for range 10 {
		if _, err := r.Allow(ctx, "k"); err != nil {
			t.Fatal(err)
		}
	}
	if elapsed := time.Since(start); elapsed >= 4*2*time.Second {
		t.Fatalf("10 decisions against a Redis 2 s slow took %v: the calls waited out the delay, not Timeout (%v)", elapsed, r.Timeout)
	}
	if calls := store.n(); calls > 1+3 {
		t.Fatalf("%d calls reached the stalled Redis, want 1 + 3", calls)
	}
}
