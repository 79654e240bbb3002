package ratelimit_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-template/brain/ratelimit"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func budget(name string, limits ...ratelimit.Limit) ratelimit.Budget {
	return ratelimit.Budget{Name: name, Limits: limits}
}

func lim(name string, limit int, window time.Duration, burst int) ratelimit.Limit {
	return ratelimit.Limit{Name: name, Rate: ratelimit.Rate{Limit: limit, Window: window, Burst: burst}}
}

// session is the default session plane: 120/min, burst 60 (a token every 0.5 s).
var session = budget("session", lim("session", 120, time.Minute, 60))

type step struct {
	at        time.Duration
	allowed   bool
	remaining int
	retry     time.Duration // when refused
	reset     time.Duration
}

func run(t *testing.T, m *ratelimit.Memory, key string, steps []step) {
	t.Helper()
	for i, s := range steps {
		d := m.AllowAt(key, t0.Add(s.at))
		got := step{s.at, d.Allowed, d.Remaining(0), d.RetryAfter, d.Reset(0)}
		if got != s {
			t.Fatalf("step %d: AllowAt(%q, t0+%v) = %+v, want %+v", i, key, s.at, got, s)
		}
	}
}

func TestBurstThenThrottle(t *testing.T) {
	m := ratelimit.NewMemory(session, ratelimit.MemoryOptions{})
	for i := range 60 {
		d := m.AllowAt("a", t0)
		if !d.Allowed || d.Remaining(0) != 59-i {
			t.Fatalf("request %d of the burst: %+v", i+1, d)
		}
	}
	run(t, m, "a", []step{
		{0, false, 0, 500 * time.Millisecond, 30 * time.Second},                              // empty: the next token in 0.5 s
		{200 * time.Millisecond, false, 0, 300 * time.Millisecond, 29800 * time.Millisecond}, // Retry-After counts down
		{500 * time.Millisecond, true, 0, 0, 30 * time.Second},                               // one token refilled, taken
		{time.Second, true, 0, 0, 30 * time.Second},
		{time.Second, false, 0, 500 * time.Millisecond, 30 * time.Second},
	})
}

func TestRefillCapsAtBurst(t *testing.T) {
	m := ratelimit.NewMemory(session, ratelimit.MemoryOptions{})
	m.AllowAt("a", t0)
	// An hour idle refills the bucket to its burst of 60, not 7200.
	run(t, m, "a", []step{{time.Hour, true, 59, 0, 500 * time.Millisecond}})
	for range 59 {
		m.AllowAt("a", t0.Add(time.Hour))
	}
	if d := m.AllowAt("a", t0.Add(time.Hour)); d.Allowed {
		t.Fatal("more than the burst was admitted after a long idle")
	}
}

func TestKeysAreIsolated(t *testing.T) {
	m := ratelimit.NewMemory(budget("p", lim("p", 1, time.Minute, 1)), ratelimit.MemoryOptions{})
	if !m.AllowAt("a", t0).Allowed || m.AllowAt("a", t0).Allowed {
		t.Fatal("key a: want one admitted, then refused")
	}
	if !m.AllowAt("b", t0).Allowed {
		t.Fatal("key b was refused because of key a")
	}
}

func TestRetryAfterIsTrue(t *testing.T) {
	// 100/h: a token every 36 s. Empty the bucket, then wait exactly
	// RetryAfter: admitted; a nanosecond less: refused.
	m := ratelimit.NewMemory(budget("uploads", lim("uploads", 100, time.Hour, 100)), ratelimit.MemoryOptions{})
	for range 100 {
		m.AllowAt("k", t0)
	}
	d := m.AllowAt("k", t0.Add(10*time.Second))
	if d.Allowed || d.RetryAfter != 26*time.Second {
		t.Fatalf("refused at +10s: %+v, want RetryAfter 26s", d)
	}
	if m.AllowAt("k", t0.Add(10*time.Second+d.RetryAfter-1)).Allowed {
		t.Fatal("admitted before RetryAfter had passed")
	}
	if !m.AllowAt("k", t0.Add(10*time.Second+d.RetryAfter)).Allowed {
		t.Fatal("refused when RetryAfter had passed")
	}
}

func TestMultiRateAtomic(t *testing.T) {
	// The uploads budget: 100/h and 10/s together.
	m := ratelimit.NewMemory(budget("uploads", lim("uploads", 100, time.Hour, 100), lim("uploads-burst", 10, time.Second, 10)), ratelimit.MemoryOptions{})
	for i := range 10 {
		if d := m.AllowAt("k", t0); !d.Allowed || d.Remaining(0) != 99-i || d.Remaining(1) != 9-i {
			t.Fatalf("request %d: %+v", i+1, d)
		}
	}
	// The per-second rate refuses; the hourly one must lose nothing.
	for range 5 {
		d := m.AllowAt("k", t0)
		if d.Allowed || !d.Refused(1) || d.Refused(0) || d.Remaining(0) != 90 || d.RetryAfter != 100*time.Millisecond {
			t.Fatalf("over the 10/s cap: %+v", d)
		}
		if d.Tightest() != 1 {
			t.Fatalf("Tightest = %d, want the refusing per-second rate", d.Tightest())
		}
	}
	// A second later the burst rate is full again; 90 hourly tokens left.
	if d := m.AllowAt("k", t0.Add(time.Second)); !d.Allowed || d.Remaining(0) != 89 {
		t.Fatalf("after a second: %+v; refused requests must not have drawn from the hourly rate", d)
	}
}

// MaxKeys bounds the keys held, rounded down to whole sets: for a
// one-rate budget, sets of 8 keys.
func TestKeyBound(t *testing.T) {
	m := ratelimit.NewMemory(budget("p", lim("p", 1, time.Hour, 1)), ratelimit.MemoryOptions{MaxKeys: 100})
	for i := range 10_000 {
		m.AllowAt(fmt.Sprint("key-", i), t0)
	}
	if n := m.Len(); n != 96 {
		t.Fatalf("Len = %d after 10,000 keys, want the bound of 100 in whole sets of 8: 96", n)
	}
}

func TestEvictionPrefersIdleKeys(t *testing.T) {
	// One shard of 4 slots. "hot" is used between every new key, so the
	// clock hand always finds it referenced; the one-off keys go instead.
	m := ratelimit.NewMemory(budget("p", lim("p", 2, time.Hour, 2)), ratelimit.MemoryOptions{MaxKeys: 4})
	m.AllowAt("hot", t0)
	for i := range 50 {
		m.AllowAt("hot", t0) // the hot key's bucket is now empty for an hour
		m.AllowAt(fmt.Sprint("cold-", i), t0)
	}
	if d := m.AllowAt("hot", t0); d.Allowed {
		t.Fatal("the hot key was evicted (its bucket reset to full) while cold keys churned")
	}
	// Keys whose buckets are full again are evicted first, whatever CLOCK says.
	m2 := ratelimit.NewMemory(budget("p", lim("p", 1, time.Second, 1)), ratelimit.MemoryOptions{MaxKeys: 2})
	m2.AllowAt("a", t0)
	m2.AllowAt("b", t0.Add(2*time.Second)) // a is full again at t0+1s
	m2.AllowAt("c", t0.Add(2*time.Second)) // takes a's slot
	if d := m2.AllowAt("b", t0.Add(2*time.Second)); d.Allowed {
		t.Fatal("b (still empty) was evicted instead of a (full again)")
	}
}

// Concurrent decisions on one key admit exactly its burst while new keys
// make the table grow under them (run it with -race).
func TestMemoryConcurrent(t *testing.T) {
	const workers, each, burst = 4, 3000, 500
	m := ratelimit.NewMemory(budget("p", lim("p", 1, time.Hour, burst)), ratelimit.MemoryOptions{})
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if m.AllowAt("shared", t0).Allowed {
					admitted.Add(1)
				}
				if d := m.AllowAt(fmt.Sprint("own-", w, "-", i), t0); !d.Allowed || d.Remaining(0) != burst-1 {
					t.Errorf("a new key: %+v, want admitted with %d left", d, burst-1)
					return
				}
				if i%500 == 0 {
					m.Len()
				}
			}
		}()
	}
	wg.Wait()
	if n := admitted.Load(); n != burst {
		t.Fatalf("the shared key admitted %d requests, want its burst of %d", n, burst)
	}
	if n := m.Len(); n < workers*each*9/10 || n > workers*each+1 {
		t.Fatalf("Len = %d after %d keys", n, workers*each+1)
	}
}

func TestBudgetValidate(t *testing.T) {
	for _, p := range []ratelimit.Budget{
		{Name: "", Limits: []ratelimit.Limit{lim("a", 1, time.Second, 1)}},
		{Name: "none"},
		{Name: "five", Limits: []ratelimit.Limit{lim("a", 1, time.Second, 1), lim("b", 1, time.Second, 1), lim("c", 1, time.Second, 1), lim("d", 1, time.Second, 1), lim("e", 1, time.Second, 1)}},
		{Name: "zero", Limits: []ratelimit.Limit{lim("a", 0, time.Second, 1)}},
	} {
		if p.Validate() == nil {
			t.Errorf("Validate(%+v) = nil", p)
		}
	}
}

// Allow's clock tells the time: a decision made now says so.
func TestMemoryClock(t *testing.T) {
	m := ratelimit.NewMemory(session, ratelimit.MemoryOptions{})
	before := time.Now()
	d, _ := m.Allow(context.Background(), "k")
	after := time.Now()
	// The clock counts from the wall clock at start-up on the monotonic
	// clock, which a step of the wall clock since (NTP) would move apart.
	const slack = time.Second
	if at := d.Time(); at.Before(before.Add(-slack)) || at.After(after.Add(slack)) {
		t.Errorf("decision at %v, want between %v and %v", at, before, after)
	}
	// The clock moves: a later decision is made later.
	for {
		d2, _ := m.Allow(context.Background(), "k")
		if d2.Time().After(d.Time()) {
			break
		}
		if time.Now().After(after.Add(5 * time.Second)) {
			t.Fatalf("the clock stood still at %v for 5 s", d.Time())
		}
	}
}

// Allow reads Memory.Now when it is set.
func TestMemoryNow(t *testing.T) {
	m := ratelimit.NewMemory(session, ratelimit.MemoryOptions{})
	m.Now = func() time.Time { return t0 }
	if d, _ := m.Allow(context.Background(), "k"); !d.Time().Equal(t0) {
		t.Fatalf("decision at %v, want Now's %v", d.Time(), t0)
	}
}
