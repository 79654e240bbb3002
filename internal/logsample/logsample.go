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

	mu    sync.Mutex
	keys  map[string]*count
	swept time.Time // when forget last dropped keys
}

type count struct {
	logged  time.Time
	repeats int
}

// New returns counts that let each key through once every interval, on
// now's clock, remembering at most max keys. When max keys are
// remembered, a new key forgets every key whose interval has passed (the
// times such a key came since its last line are then told on the next
// line of [Overflow]), at most once an interval; if none has passed, the
// new key is counted as Overflow.
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

// full reports whether max keys are remembered, Overflow aside.
func (c *Counts) full() bool {
	n := len(c.keys)
	if _, ok := c.keys[Overflow]; ok {
		n--
	}
	return n >= c.max
}

// forget drops the keys whose interval has passed, their untold repeats
// going to Overflow's count, unless it did so less than an interval ago:
// a flood of new keys into full counts costs one sweep an interval, not
// one a key.
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
