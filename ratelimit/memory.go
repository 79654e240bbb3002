package ratelimit

import (
	"context"
	"hash/maphash"
	"sync"
	"time"
)

// Memory decides a budget in this process. Create it with [NewMemory]; it is
// safe for concurrent use.
//
// Keys are hashed (hash/maphash, a per-limiter seed) and the hash is all
// that is kept of them: about 40 to 60 bytes per key for a one-rate
// budget, whatever the key's length. Two keys colliding on 63 bits would
// share a bucket; at 10 million keys the chance that any two do is about 1
// in 200 million. State is split into shards, each with its own lock and a
// fixed share of MaxKeys, and each key's state sits in one slot of a flat
// slice (its hash, a reference bit and one TAT per rate), so a decision
// touches two cache lines. When a shard is full, a new key takes the slot
// of an idle one, chosen by the CLOCK algorithm (an approximation of least
// recently used); a key whose buckets are full again is taken first, as it
// holds no information. Each eviction is O(1) amortized: there is no
// sweeper goroutine and no pause.
type Memory struct {
	budget Budget
	g      gcra
	seed   maphash.Seed
	mask   uint64
	stride int
	shards []memShard
	coarse bool
	// Now, when set, is the clock of Allow. By default Allow reads the
	// monotonic clock, or the coarse one when MemoryOptions.CoarseClock
	// is set. AllowAt takes the time instead, for tests and callers with
	// a clock of their own.
	Now func() time.Time
}

type memShard struct {
	mu    sync.Mutex
	index map[uint64]uint32 // key hash (bit 0 clear) -> slot
	// slots holds stride int64s per slot: the key hash with the CLOCK
	// reference bit in bit 0, then each rate's TAT (Unix ns).
	slots []int64
	hand  int
	limit int // slots this shard may hold
	_     [48]byte
}

// MemoryOptions tune a [Memory]. The zero value takes the defaults.
type MemoryOptions struct {
	// MaxKeys bounds the keys kept (default 1,000,000). Past it, the least
	// recently used keys are forgotten, which resets their buckets to full.
	MaxKeys int
	// CoarseClock makes Allow read a clock that a goroutine refreshes
	// every millisecond while the limiter is in use, instead of reading
	// the system's clock on each decision. It suits decisions made in a
	// tight loop: on the project machine it takes a hot-key decision from
	// 71 ns to 42 ns. In a server it costs more than it saves, as its
	// wake-ups disturb otherwise idle cores (BENCHMARKS.md).
	CoarseClock bool
}

// NewMemory returns an in-memory limiter for b. It panics if b is invalid,
// as a misconfigured limit is a programming error caught at start-up.
func NewMemory(b Budget, opts MemoryOptions) *Memory {
	if err := b.Validate(); err != nil {
		panic(err.Error())
	}
	if opts.MaxKeys <= 0 {
		opts.MaxKeys = 1_000_000
	}
	// One shard per 1024 keys, at most 64 (a power of two).
	n := 1
	for n < 64 && n*1024 < opts.MaxKeys {
		n *= 2
	}
	m := &Memory{budget: b, g: newGCRA(b), coarse: opts.CoarseClock, seed: maphash.MakeSeed(), mask: uint64(n - 1), stride: len(b.Limits) + 1, shards: make([]memShard, n)}
	per, extra := opts.MaxKeys/n, opts.MaxKeys%n
	for i := range m.shards {
		m.shards[i].index = map[uint64]uint32{}
		m.shards[i].limit = max(per, 1)
		if i < extra {
			m.shards[i].limit++
		}
	}
	return m
}

// Budget returns the budget m decides.
func (m *Memory) Budget() Budget { return m.budget }

// Allow decides a request for key now; it never fails.
func (m *Memory) Allow(_ context.Context, key string) (Decision, error) {
	if m.Now != nil {
		return m.AllowAt(key, m.Now()), nil
	}
	if m.coarse {
		return m.allow(key, coarse.unixNano()), nil
	}
	return m.allow(key, monoUnixNano()), nil
}

// AllowAt decides a request for key at now, taking a token from every
// rate or from none. It does not allocate once the key is known.
func (m *Memory) AllowAt(key string, now time.Time) Decision {
	return m.allow(key, now.UnixNano())
}

const refBit = 1

func (m *Memory) allow(key string, now int64) Decision {
	h := maphash.String(m.seed, key) &^ refBit
	s := &m.shards[(h>>1^h>>33)&m.mask]
	var d Decision
	s.mu.Lock()
	slot, ok := s.index[h]
	if !ok {
		slot = s.insert(h, now, m.stride)
	}
	e := s.slots[int(slot)*m.stride : int(slot)*m.stride+m.stride]
	e[0] |= refBit
	m.g.decide(e[1:], now, &d)
	s.mu.Unlock()
	return d
}

// insert finds a slot for hash h: a new one while the shard has room,
// else the CLOCK victim. Its buckets start full (TAT 0).
func (s *memShard) insert(h uint64, now int64, stride int) uint32 {
	var slot int
	if n := len(s.slots) / stride; n < s.limit {
		slot = n
		s.slots = append(s.slots, make([]int64, stride)...)
	} else {
		slot = s.victim(now, stride)
		delete(s.index, uint64(s.slots[slot*stride])&^refBit)
		clear(s.slots[slot*stride : slot*stride+stride])
	}
	s.slots[slot*stride] = int64(h)
	s.index[h] = uint32(slot)
	return uint32(slot)
}

// victim advances the clock hand to a slot whose buckets are full again
// (no state to lose) or that was not used since the hand last passed it.
func (s *memShard) victim(now int64, stride int) int {
	n := len(s.slots) / stride
	for {
		i := s.hand
		if s.hand++; s.hand == n {
			s.hand = 0
		}
		e := s.slots[i*stride : i*stride+stride]
		idle := true
		for _, tat := range e[1:] {
			if tat > now {
				idle = false
				break
			}
		}
		if idle || e[0]&refBit == 0 {
			return i
		}
		e[0] &^= refBit
	}
}

// Len returns how many keys m holds.
func (m *Memory) Len() int {
	total := 0
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		total += len(s.index)
		s.mu.Unlock()
	}
	return total
}
