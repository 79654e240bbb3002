package ratelimit

import (
	"context"
	"fmt"
	"time"
)

// MaxLimits is the most budgets one policy may combine.
const MaxLimits = 4

// A Limit is a named budget within a policy. The name is what the
// RateLimit and RateLimit-Policy headers call it.
type Limit struct {
	Name string
	Budget
}

// A Policy is a set of limits decided together for one key space.
type Policy struct {
	Name   string
	Limits []Limit
}

// Validate reports a policy that cannot be enforced.
func (p Policy) Validate() error {
	if p.Name == "" || len(p.Limits) == 0 || len(p.Limits) > MaxLimits {
		return fmt.Errorf("ratelimit: policy %q needs a name and 1 to %d limits", p.Name, MaxLimits)
	}
	for _, l := range p.Limits {
		if l.Name == "" || l.Limit < 1 || l.Burst < 1 || l.Window <= 0 {
			return fmt.Errorf("ratelimit: policy %q: limit %q is not a valid budget", p.Name, l.Name)
		}
	}
	return nil
}

// A Decision is the outcome for one request and the state of each of the
// policy's budgets after it.
type Decision struct {
	Allowed bool
	// RetryAfter is, when refused, the time until the request would be
	// admitted: the longest wait among the budgets that refused it.
	RetryAfter time.Duration
	// N is how many entries of States are in use, in the policy's order.
	N      int
	States [MaxLimits]State
	g      *gcra
	at     int64 // when it was decided, Unix ns (this process's clock)
}

// Time returns when the decision was made, as this process saw it.
func (d *Decision) Time() time.Time { return time.Unix(0, d.at) }

// State is one budget after a decision.
type State struct {
	// Reset is the time until the bucket is full again.
	Reset time.Duration
	// Refused reports that this budget refused the request.
	Refused bool
}

// Remaining returns the whole tokens budget i has left. It is derived
// from Reset, so a decision stays small and cheap to make.
func (d *Decision) Remaining(i int) int {
	r := (d.g.tolerance[i] - int64(d.States[i].Reset)) / d.g.interval[i]
	return int(max(r, 0))
}

// Tightest returns the index of the budget with the fewest tokens left (the
// first refusing one when refused): the one legacy X-RateLimit-* headers
// describe.
func (d *Decision) Tightest() int {
	best, bestRem := 0, d.Remaining(0)
	for i := 1; i < d.N; i++ {
		s, b := &d.States[i], &d.States[best]
		r := d.Remaining(i)
		if (s.Refused && !b.Refused) || (s.Refused == b.Refused && r < bestRem) {
			best, bestRem = i, r
		}
	}
	return best
}

// A Limiter decides for one policy. [Memory] and [Redis] implement it.
type Limiter interface {
	Policy() Policy
	Allow(ctx context.Context, key string) (Decision, error)
}

// gcra holds a policy's budgets in GCRA terms: nanoseconds per token and
// the bucket's depth in nanoseconds.
type gcra struct {
	n         int
	interval  [MaxLimits]int64
	tolerance [MaxLimits]int64
}

func newGCRA(p Policy) gcra {
	g := gcra{n: len(p.Limits)}
	for i, l := range p.Limits {
		g.interval[i] = int64(l.Window) / int64(l.Limit)
		if g.interval[i] < 1 {
			g.interval[i] = 1
		}
		g.tolerance[i] = g.interval[i] * int64(l.Burst)
	}
	return g
}

// decide takes one token from every budget at now, or from none, and
// writes the outcome to d. tats holds each budget's theoretical arrival
// time (Unix ns) and is updated in place when the request is admitted.
func (g *gcra) decide(tats []int64, now int64, d *Decision) {
	d.N, d.g, d.at, d.Allowed, d.RetryAfter = g.n, g, now, true, 0
	for i := 0; i < g.n; i++ {
		tat := max(tats[i], now)
		next := tat + g.interval[i]
		if wait := next - now - g.tolerance[i]; wait > 0 {
			d.Allowed = false
			d.RetryAfter = max(d.RetryAfter, time.Duration(wait))
			d.States[i] = State{Reset: time.Duration(tat - now), Refused: true}
		} else {
			d.States[i] = State{Reset: time.Duration(next - now)}
		}
	}
	if d.Allowed {
		for i := 0; i < g.n; i++ {
			tats[i] = now + int64(d.States[i].Reset)
		}
		return
	}
	for i := 0; i < g.n; i++ { // nothing was taken: undo the token in Reset
		if !d.States[i].Refused {
			d.States[i].Reset -= time.Duration(g.interval[i])
		}
	}
}
