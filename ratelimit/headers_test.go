package ratelimit_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/brain-template/brain/ratelimit"
)

func TestHeaders(t *testing.T) {
	p := policy("ingest", lim("ingest", 100, time.Hour, 100), lim("ingest-burst", 10, time.Second, 10))
	m := ratelimit.NewMemory(p, ratelimit.MemoryOptions{})
	h := ratelimit.NewHeaders(p)
	for range 3 {
		m.AllowAt("k", t0)
	}
	d := m.AllowAt("k", t0)
	hdr := http.Header{}
	h.Write(hdr, &d)
	want := map[string]string{
		"RateLimit-Policy":      `"ingest";q=100;w=3600, "ingest-burst";q=10;w=1`,
		"RateLimit":             `"ingest";r=96;t=144, "ingest-burst";r=6;t=1`,
		"X-RateLimit-Limit":     "10", // the per-second budget has the fewest tokens left
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
	p := policy("ingest", lim("ingest", 100, time.Hour, 100), lim("ingest-burst", 10, time.Second, 10))
	m := ratelimit.NewMemory(p, ratelimit.MemoryOptions{})
	h := ratelimit.NewHeaders(p)
	d := m.AllowAt("k", t0)
	hdr := http.Header{}
	b.ReportAllocs()
	for b.Loop() {
		h.Write(hdr, &d)
	}
}
