package bench_test

import (
	"sync"
	"time"

	"github.com/brain-template/brain/ratelimit"
)

// t0 is the fake clock's start.
var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func policy(name string, limits ...ratelimit.Limit) ratelimit.Policy {
	return ratelimit.Policy{Name: name, Limits: limits}
}

func lim(name string, limit int, window time.Duration, burst int) ratelimit.Limit {
	return ratelimit.Limit{Name: name, Budget: ratelimit.Budget{Limit: limit, Window: window, Burst: burst}}
}

// clock is a fake clock safe for concurrent use.
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
