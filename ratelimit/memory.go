package ratelimit

import (
	"context"
	"hash/maphash"
	"time"
)

// Memory decides a budget in this process, keeping only a hash per key.
// Create it with [NewMemory]; it is safe for concurrent use.
type Memory struct {
	budget Budget
	g      gcra
	seed   maphash.Seed
	t      table
	// Now, when set, is the clock of Allow; by default the monotonic clock.
	Now func() time.Time
}

// MemoryOptions tune a [Memory]. The zero value takes the defaults.
type MemoryOptions struct {
	// MaxKeys bounds the keys kept (default 1,000,000); give it twice the
	// keys that must hold state at once, as sets fill unevenly.
	MaxKeys int
}

// NewMemory returns an in-memory limiter for b. It panics if b is invalid.
func NewMemory(b Budget, opts MemoryOptions) *Memory {
	if err := b.Validate(); err != nil {
		panic(err.Error())
	}
	if opts.MaxKeys <= 0 {
		opts.MaxKeys = 1_000_000
	}
	return &Memory{budget: b, g: newGCRA(b), seed: maphash.MakeSeed(), t: newTable(len(b.Limits), opts.MaxKeys)}
}

// Budget returns the budget m decides.
func (m *Memory) Budget() Budget { return m.budget }

// Allow decides a request for key now; it never fails.
func (m *Memory) Allow(_ context.Context, key string) (d Decision, _ error) {
	var now int64
	if m.Now != nil {
		now = m.Now().UnixNano()
	} else {
		now = monoUnixNano()
	}
	m.decideHash(&d, maphash.String(m.seed, key), now)
	return
}

// AllowAt decides a request for key at now.
func (m *Memory) AllowAt(key string, now time.Time) (d Decision) {
	m.decideHash(&d, maphash.String(m.seed, key), now.UnixNano())
	return
}

// Refund gives back the token d, an admitted decision for key, took.
func (m *Memory) Refund(_ context.Context, key string, d *Decision) error {
	tag := tagOf(maphash.String(m.seed, key))
	s := m.t.stripe(tag)
	s.mu.Lock()
	tats := m.t.entry(s, tag, d.at)
	for i := range m.g.n {
		tats[i] -= m.g.interval[i]
	}
	s.mu.Unlock()
	d.refund()
	return nil
}

func (m *Memory) decideHash(d *Decision, h uint64, now int64) {
	tag := tagOf(h)
	s := m.t.stripe(tag)
	s.mu.Lock()
	m.g.decide(m.t.entry(s, tag, now), now, d)
	s.mu.Unlock()
}

// Len returns how many keys m holds.
func (m *Memory) Len() int { return m.t.len() }

// Memory's clock is the monotonic one: half the cost of time.Now.
var (
	clockBase     = time.Now()
	clockBaseUnix = clockBase.UnixNano()
)

func monoUnixNano() int64 { return clockBaseUnix + int64(time.Since(clockBase)) }
