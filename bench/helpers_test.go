package bench_test

import (
	"time"

	"github.com/brain-template/brain/ratelimit"
)

// t0 is the fake clock's start.
var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func budget(name string, limits ...ratelimit.Limit) ratelimit.Budget {
	return ratelimit.Budget{Name: name, Limits: limits}
}

func lim(name string, limit int, window time.Duration, burst int) ratelimit.Limit {
	return ratelimit.Limit{Name: name, Rate: ratelimit.Rate{Limit: limit, Window: window, Burst: burst}}
}
