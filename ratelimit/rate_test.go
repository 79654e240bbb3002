package ratelimit_test

import (
	"testing"
	"time"

	"github.com/brain-template/brain/ratelimit"
)

func TestParseRate(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want ratelimit.Rate
	}{
		{"per_minute_with_burst", "120/min,burst=60", ratelimit.Rate{Limit: 120, Window: time.Minute, Burst: 60}},
		{"per_second_burst_defaults_to_limit", "10/s", ratelimit.Rate{Limit: 10, Window: time.Second, Burst: 10}},
		{"per_hour", "100/h", ratelimit.Rate{Limit: 100, Window: time.Hour, Burst: 100}},
		{"spaces_tolerated", " 30/min, burst = 30 ", ratelimit.Rate{Limit: 30, Window: time.Minute, Burst: 30}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ratelimit.ParseRate(tc.in)
			if err != nil {
				t.Fatalf("ParseRate(%q) error: %v", tc.in, err)
			}
			if got != tc.want {
				t.Fatalf("ParseRate(%q) = %+v, want %+v", tc.in, got, tc.want)
			}
			again, err := ratelimit.ParseRate(got.String())
			if err != nil || again != got {
				t.Fatalf("round trip through %q = %+v, %v", got.String(), again, err)
			}
		})
	}
}

func TestParseRateErrors(t *testing.T) {
	for _, in := range []string{"", "120", "abc/min", "0/min", "-1/s", "10/day", "10/min,60", "10/min,rate=3", "10/min,burst=0", "10/min,burst=x", "99999999999/s",
		"1/h,burst=10000000", "1/h,burst=721"} {
		t.Run(in, func(t *testing.T) {
			if b, err := ratelimit.ParseRate(in); err == nil {
				t.Fatalf("ParseRate(%q) = %+v, want an error", in, b)
			}
		})
	}
}

// The largest rate Validate admits keeps every computed time in range:
// a refusal's Retry-After is the true wait, not an overflowed one.
func TestRateAtMaxRefill(t *testing.T) {
	b, err := ratelimit.ParseRate("1/h,burst=720") // exactly MaxRefill
	if err != nil {
		t.Fatal(err)
	}
	m := ratelimit.NewMemory(ratelimit.Budget{Name: "p", Limits: []ratelimit.Limit{{Name: "p", Rate: b}}}, ratelimit.MemoryOptions{})
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for range 720 {
		if d := m.AllowAt("k", now); !d.Allowed {
			t.Fatal("refused within the burst")
		}
	}
	d := m.AllowAt("k", now)
	if d.Allowed || d.RetryAfter != time.Hour || d.Reset(0) != ratelimit.MaxRefill {
		t.Fatalf("after the burst: allowed %v, Retry-After %v, reset %v; want refused, 1h, %v", d.Allowed, d.RetryAfter, d.Reset(0), ratelimit.MaxRefill)
	}
}

func TestParseRates(t *testing.T) {
	got, err := ratelimit.ParseRates("100/h; 10/s,burst=5")
	want := []ratelimit.Rate{{Limit: 100, Window: time.Hour, Burst: 100}, {Limit: 10, Window: time.Second, Burst: 5}}
	if err != nil || len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("ParseRates = %v, %v; want %v", got, err, want)
	}
	for _, bad := range []string{"", "100/h;", "1/s;1/s;1/s;1/s;1/s", "100/h;lots"} {
		if b, err := ratelimit.ParseRates(bad); err == nil {
			t.Errorf("ParseRates(%q) = %v, want an error", bad, b)
		}
	}
}
