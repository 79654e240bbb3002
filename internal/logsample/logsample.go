// Package logsample decides which of many like log lines to write: each
// key at most once an interval, with how many times it came since its
// last line, so a flood of one thing (an outage, a client refused again
// and again) cannot flood the log.
package logsample

import (
	"sync"
	"time"
)

// Overflow is the key a [Counts] that is full counts a new key under:
// past its bound, all new keys share one line an interval.
const Overflow = "(others)"

// Counts remembers when each key was last logged and how many times it
// came since. Create it with [New]; it is safe for concurrent use.
type Counts struct {
	every time.Duration
	now   func() time.Time
	max   int

	mu   sync.Mutex
	keys map[string]*count
}

type count struct {
	logged  time.Time
	repeats int
}

// New returns counts that let each key through once every interval, on
// now's clock, remembering at most max keys. When max keys are
// remembered, those whose interval has passed are forgotten; if none
// has, a new key is counted as [Overflow].
func New(every time.Duration, now func() time.Time, max int) *Counts {
	if now == nil {
		now = time.Now
	}
	return &Counts{every: every, now: now, max: max, keys: map[string]*count{}}
}

// Take reports whether key is due to be logged, and, when it is, how many
// times it came since its last line. The key it was counted under is
// key, or Overflow when the counts were full.
func (c *Counts) Take(key string) (counted string, repeats int, due bool) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.keys[key]
	if m == nil && len(c.keys) >= c.max {
		for k, v := range c.keys {
			if now.Sub(v.logged) >= c.every && v.repeats == 0 {
				delete(c.keys, k)
			}
		}
		if len(c.keys) >= c.max {
			key = Overflow
			m = c.keys[key]
		}
	}
	if m != nil && now.Sub(m.logged) < c.every {
		m.repeats++
		return key, 0, false
	}
	if m == nil {
		m = &count{}
		c.keys[key] = m
	}
	repeats, m.logged, m.repeats = m.repeats, now, 0
	return key, repeats, true
}
