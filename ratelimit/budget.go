package ratelimit

import (
	"context"
	"fmt"
	"time"
)

// MaxLimits is the most rates one budget may combine.
const MaxLimits = 4

// A Limit is a named rate within a budget, as the headers name it.
type Limit struct {
	Name string
	Rate
}

// A Budget is a set of limits decided together for one key space.
type Budget struct {
	Name   string
	Limits []Limit
}

// Validate reports a budget that cannot be enforced.
func (b Budget) Validate() error {
	if b.Name == "" || len(b.Limits) == 0 || len(b.Limits) > MaxLimits {
		return fmt.Errorf("ratelimit: budget %q needs a name and 1 to %d limits", b.Name, MaxLimits)
	}
	for _, l := range b.Limits {
		if l.Name == "" {
			return fmt.Errorf("ratelimit: budget %q: a limit has no name", b.Name)
		}
		if err := l.Rate.Validate(); err != nil {
			return fmt.Errorf("ratelimit: budget %q: limit %q: %w", b.Name, l.Name, err)
		}
	}
	return nil
}

// A Decision is the outcome for one request and each rate's state after it.
type Decision struct {
	RetryAfter time.Duration // when refused, the wait until it would pass
	resets     [MaxLimits]time.Duration
	g          *gcra
	at         int64 // when it was decided, Unix ns (this process's clock)
	Allowed    bool
	N          uint8 // how many rates the decision covers
	refused    uint8 // bit i: rate i refused
	local      bool  // a deny cache's or a fallback's, not the shared store's
}

// Reset returns the time until rate i is full again.
func (d *Decision) Reset(i int) time.Duration { return d.resets[i] }

// Refused reports whether rate i refused the request.
func (d *Decision) Refused(i int) bool { return d.refused&(1<<i) != 0 }

// Time returns when the decision was made, as this process saw it.
func (d *Decision) Time() time.Time { return time.Unix(0, d.at) }

// Remaining returns the whole tokens rate i has left.
func (d *Decision) Remaining(i int) int {
	r := (d.g.tolerance[i] - int64(d.resets[i])) / d.g.interval[i]
	return int(max(r, 0))
}

// Tightest returns the rate with the fewest tokens left, a refusing one first.
func (d *Decision) Tightest() int {
	_, t := d.remaining()
	return t
}

func (d *Decision) remaining() (rem [MaxLimits]int, best int) {
	for i := range int(d.N) {
		rem[i] = d.Remaining(i)
	}
	for i := 1; i < int(d.N); i++ {
		if (d.Refused(i) && !d.Refused(best)) || (d.Refused(i) == d.Refused(best) && rem[i] < rem[best]) {
			best = i
		}
	}
	return rem, best
}

// A Limiter decides for one budget. [Memory] and [Redis] implement it.
type Limiter interface {
	Budget() Budget
	Allow(ctx context.Context, key string) (Decision, error)
	Refund(ctx context.Context, key string, d *Decision) error // gives back an admitted d's token
}

func (d *Decision) refund() {
	for i := range int(d.N) {
		d.resets[i] = max(d.resets[i]-time.Duration(d.g.interval[i]), 0)
	}
}

// gcra holds a budget's rates in ns: per token, and bucket depth.
type gcra struct {
	n         int
	interval  [MaxLimits]int64
	tolerance [MaxLimits]int64
}

func newGCRA(b Budget) gcra {
	g := gcra{n: len(b.Limits)}
	for i, l := range b.Limits {
		g.interval[i] = max(int64(l.Window)/int64(l.Limit), 1)
		g.tolerance[i] = g.interval[i] * int64(l.Burst)
	}
	return g
}

// decide takes one token from every rate of tats at now, or from none.
func (g *gcra) decide(tats []int64, now int64, d *Decision) {
	d.N, d.g, d.at, d.Allowed, d.RetryAfter, d.refused = uint8(g.n), g, now, true, 0, 0
	for i := 0; i < g.n; i++ {
		tat := max(tats[i], now)
		next := tat + g.interval[i]
		if wait := next - now - g.tolerance[i]; wait > 0 {
			d.Allowed = false
			d.RetryAfter = max(d.RetryAfter, time.Duration(wait))
			d.resets[i] = time.Duration(tat - now)
			d.refused |= 1 << i
		} else {
			d.resets[i] = time.Duration(next - now)
		}
	}
	if d.Allowed {
		for i := 0; i < g.n; i++ {
			tats[i] = now + int64(d.resets[i])
		}
		return
	}
	for i := 0; i < g.n; i++ { // nothing was taken: undo the token in the reset time
		if !d.Refused(i) {
			d.resets[i] -= time.Duration(g.interval[i])
		}
	}
}
