package ratelimit_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/brain-template/brain/ratelimit"
)

func TestHeaders(t *testing.T) {
	p := budget("uploads", lim("uploads", 100, time.Hour, 100), lim("uploads-burst", 10, time.Second, 10))
	m := ratelimit.NewMemory(p, ratelimit.MemoryOptions{})
	h := ratelimit.NewHeaders(p)
	for range 3 {
		m.AllowAt("k", t0)
	}
	d := m.AllowAt("k", t0)
	hdr := http.Header{}
	h.Write(hdr, &d)
	want := map[string]string{
		"RateLimit-Policy":      `"uploads";q=100;w=3600, "uploads-burst";q=10;w=1`,
		"RateLimit":             `"uploads";r=96;t=144, "uploads-burst";r=6;t=1`,
		"X-RateLimit-Limit":     "10", // the per-second rate has the fewest tokens left
		"X-RateLimit-Remaining": "6",
		"X-RateLimit-Reset":     "1796040001", // t0 + 0.4 s, rounded up to whole seconds
	}
	for k, v := range want {
		if got := hdr.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if hdr.Get("Retry-After") != "" {
		t.Error("Retry-After on an admitted request")
	}
	for range 6 {
		m.AllowAt("k", t0)
	}
	d = m.AllowAt("k", t0.Add(10*time.Millisecond)) // refused: next token at t0+1s
	hdr = http.Header{}
	h.Write(hdr, &d)
	if hdr.Get("Retry-After") != "1" || hdr.Get("X-RateLimit-Remaining") != "0" {
		t.Fatalf("refused: Retry-After %q Remaining %q", hdr.Get("Retry-After"), hdr.Get("X-RateLimit-Remaining"))
	}
}

// Caps on concurrent requests, then budgets: each decided item is
// shown, the caps' with qu="concurrent-requests" and no reset, and the
// legacy headers describe a budget's rate whenever one was decided (its
// reset is a time; a cap's is not): the refusing one, else the one with
// the fewest left; else the refusing cap, whose reset is when its
// Retry-After ends.
func TestCapHeaders(t *testing.T) {
	p := budget("stream-opens", lim("stream-opens", 60, time.Minute, 20))
	u := budget("stream-opens-per-user", lim("stream-opens-per-user", 240, time.Minute, 80))
	m, um := ratelimit.NewMemory(p, ratelimit.MemoryOptions{}), ratelimit.NewMemory(u, ratelimit.MemoryOptions{})
	h := ratelimit.NewCapHeaders([]ratelimit.Budget{p, u}, 5*time.Second, ratelimit.Concurrency{Name: "streams", Capacity: 16}, ratelimit.Concurrency{Name: "streams-per-user", Capacity: 64})
	const policyHeader = `"streams";q=16;qu="concurrent-requests", "streams-per-user";q=64;qu="concurrent-requests", "stream-opens";q=60;w=60, "stream-opens-per-user";q=240;w=60`
	admitted := m.AllowAt("k", t0)
	for range 19 {
		m.AllowAt("k", t0)
	}
	refused := m.AllowAt("k", t0) // the burst of 20 is spent: the next token in 1 s
	for range 14 {
		m.AllowAt("few", t0)
	}
	few := m.AllowAt("few", t0) // 5 left
	user := um.AllowAt("u", t0)
	for range 78 {
		um.AllowAt("u", t0)
	}
	userFew := um.AllowAt("u", t0)     // none left
	userRefused := um.AllowAt("u", t0) // the next token in 250 ms
	for _, tc := range []struct {
		name                            string
		free                            []int
		ds                              []ratelimit.Decision
		rateLimit, limit, remain, reset string
	}{
		{"admitted", []int{15, 63}, []ratelimit.Decision{admitted, user}, `"streams";r=15, "streams-per-user";r=63, "stream-opens";r=19;t=1, "stream-opens-per-user";r=79;t=1`, "60", "19", "1796040001"},
		{"admitted with few slots free", []int{2, 63}, []ratelimit.Decision{admitted, user}, `"streams";r=2, "streams-per-user";r=63, "stream-opens";r=19;t=1, "stream-opens-per-user";r=79;t=1`, "60", "19", "1796040001"},
		{"the caller's cap refused", []int{0}, nil, `"streams";r=0`, "16", "0", "1796040005"},
		{"the user's cap refused", []int{3, 0}, nil, `"streams";r=3, "streams-per-user";r=0`, "64", "0", "1796040005"},
		{"the open budget refused", []int{15, 63}, []ratelimit.Decision{refused}, `"streams";r=15, "streams-per-user";r=63, "stream-opens";r=0;t=20`, "60", "0", "1796040020"},
		{"the open budget has fewest left", []int{15, 63}, []ratelimit.Decision{few, user}, `"streams";r=15, "streams-per-user";r=63, "stream-opens";r=5;t=15, "stream-opens-per-user";r=79;t=1`, "60", "5", "1796040015"},
		{"the user's open budget has fewest left", []int{15, 63}, []ratelimit.Decision{few, userFew}, `"streams";r=15, "streams-per-user";r=63, "stream-opens";r=5;t=15, "stream-opens-per-user";r=0;t=20`, "240", "0", "1796040020"},
		{"the user's open budget refused", []int{15, 63}, []ratelimit.Decision{admitted, userRefused}, `"streams";r=15, "streams-per-user";r=63, "stream-opens";r=19;t=1, "stream-opens-per-user";r=0;t=20`, "240", "0", "1796040020"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hdr := http.Header{}
			h.Write(hdr, tc.free, tc.ds, t0)
			for k, v := range map[string]string{"RateLimit-Policy": policyHeader, "RateLimit": tc.rateLimit, "X-RateLimit-Limit": tc.limit,
				"X-RateLimit-Remaining": tc.remain, "X-RateLimit-Reset": tc.reset} {
				if got := hdr.Get(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
			if hdr.Get("Retry-After") != "" {
				t.Error("Retry-After is the refusal's to set")
			}
		})
	}
	hdr := http.Header{}
	h.Write(hdr, nil, nil, t0)
	if len(hdr) != 0 {
		t.Errorf("nothing decided, headers %v", hdr)
	}
}

func TestRetryAfterSeconds(t *testing.T) {
	for _, tc := range []struct {
		in   time.Duration
		want int64
	}{{0, 1}, {time.Millisecond, 1}, {time.Second, 1}, {time.Second + 1, 2}, {36 * time.Second, 36}} {
		if got := ratelimit.RetryAfterSeconds(tc.in); got != tc.want {
			t.Errorf("RetryAfterSeconds(%v) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func BenchmarkHeaders(b *testing.B) {
	p := budget("uploads", lim("uploads", 100, time.Hour, 100), lim("uploads-burst", 10, time.Second, 10))
	m := ratelimit.NewMemory(p, ratelimit.MemoryOptions{})
	h := ratelimit.NewHeaders(p)
	d := m.AllowAt("k", t0)
	hdr := http.Header{}
	b.ReportAllocs()
	for b.Loop() {
		h.Write(hdr, &d)
	}
}
