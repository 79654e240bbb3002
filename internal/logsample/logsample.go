// Package logsample writes each key's log line at most once an interval,
// with how many times it came since, so a flood of one thing cannot flood the log.
package logsample

import (
	"sync"
	"time"
)

// Overflow is the key a full [Counts] counts a new key under.
const Overflow = "(others)"

// Counts remembers when each key was last logged and how many times it
// came since. It is safe for concurrent use.
type Counts struct {
	every time.Duration
	now   func() time.Time
	max   int

	mu    sync.Mutex
	keys  map[string]*count
	swept time.Time // when forget last dropped keys
}

type count struct {
	logged  time.Time
	repeats int
}

// New returns counts that let each key through once every interval,
// remembering at most max keys: when full, a new key forgets the keys whose
// interval has passed (their repeats go to [Overflow]), else counts as Overflow.
func New(every time.Duration, now func() time.Time, max int) *Counts {
	if now == nil {
		now = time.Now
	}
	return &Counts{every: every, now: now, max: max, keys: map[string]*count{}}
}

// Take reports whether key is due to be logged and how many times it came
// since its last line; counted is key, or Overflow when the counts were full.
func (c *Counts) Take(key string) (counted string, repeats int, due bool) {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.keys[key]
	if m == nil && c.full() {
		c.forget(now)
		if c.full() {
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

func (c *Counts) full() bool {
	n := len(c.keys)
	if _, ok := c.keys[Overflow]; ok {
		n--
	}
	return n >= c.max
}

// forget drops the keys whose interval has passed, at most once an interval.
func (c *Counts) forget(now time.Time) {
	if now.Sub(c.swept) < c.every {
		return
	}
	c.swept = now
	untold := 0
	for k, v := range c.keys {
		if k != Overflow && now.Sub(v.logged) >= c.every {
			untold += v.repeats
			delete(c.keys, k)
		}
	}
	if untold > 0 {
		o := c.keys[Overflow]
		if o == nil {
			o = &count{logged: now.Add(-c.every)} // due at once
			c.keys[Overflow] = o
		}
		o.repeats += untold
	}
}
