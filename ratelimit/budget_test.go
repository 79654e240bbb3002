package ratelimit_test

import (
	"testing"
	"time"

	"github.com/brain-template/brain/ratelimit"
)

func TestParseBudget(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want ratelimit.Budget
	}{
		{"per_minute_with_burst", "120/min,burst=60", ratelimit.Budget{Limit: 120, Window: time.Minute, Burst: 60}},
		{"per_second_burst_defaults_to_limit", "10/s", ratelimit.Budget{Limit: 10, Window: time.Second, Burst: 10}},
		{"per_hour", "100/h", ratelimit.Budget{Limit: 100, Window: time.Hour, Burst: 100}},
		{"spaces_tolerated", " 30/min, burst = 30 ", ratelimit.Budget{Limit: 30, Window: time.Minute, Burst: 30}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ratelimit.ParseBudget(tc.in)
			if err != nil {
				t.Fatalf("ParseBudget(%q) error: %v", tc.in, err)
			}
			if got != tc.want {
				t.Fatalf("ParseBudget(%q) = %+v, want %+v", tc.in, got, tc.want)
			}
			again, err := ratelimit.ParseBudget(got.String())
			if err != nil || again != got {
				t.Fatalf("round trip through %q = %+v, %v", got.String(), again, err)
			}
		})
	}
}

func TestParseBudgetErrors(t *testing.T) {
	for _, in := range []string{"", "120", "abc/min", "0/min", "-1/s", "10/day", "10/min,60", "10/min,rate=3", "10/min,burst=0", "10/min,burst=x", "99999999999/s"} {
		t.Run(in, func(t *testing.T) {
			if b, err := ratelimit.ParseBudget(in); err == nil {
				t.Fatalf("ParseBudget(%q) = %+v, want an error", in, b)
			}
		})
	}
}
