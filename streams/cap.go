package streams

import (
	"context"
	"hash/maphash"
	"slices"
	"sync"
)

// A Cap bounds how many streams each caller holds open at once, across
// every stream endpoint. [MemoryCap] counts on one process; [RedisCap]
// across every replica that shares a Redis.
type Cap interface {
	// reserve takes one of key's slots for a new stream. ok is false when
	// key holds max streams already; live is how many key holds open, this
	// one included when ok; err is a failure of the cap's store.
	reserve(ctx context.Context, key string) (s capSlot, live int, ok bool, err error)
	capacity() int
	releaseSlot(s capSlot)
	refreshSlot(ctx context.Context, s capSlot) error
}

// A capSlot is one reserved stream: release it when the stream ends. A
// second release does nothing, nor do the zero capSlot's methods.
type capSlot struct {
	owner Cap
	key   string
	lease string // the lease's member in Redis; "" in memory
	// id numbers an in-memory reservation, at is its shard and row; both 0
	// when nothing is counted in memory.
	id uint64
	at uint32
}

func (s capSlot) release() {
	if s.owner != nil {
		s.owner.releaseSlot(s)
	}
}

// refresh extends the slot's lease where the cap keeps one (Redis), so a
// live stream keeps its slot while a dead replica's slots expire.
func (s capSlot) refresh(ctx context.Context) error {
	if s.owner == nil {
		return nil
	}
	return s.owner.refreshSlot(ctx, s)
}

// MemoryCap caps streams in this process. Create it with [NewMemoryCap];
// it is safe for concurrent use. It keeps a 64-bit hash of each key, in
// locked shards of flat rows, so churn allocates nothing once warm.
type MemoryCap struct {
	max    int
	stride int // uint64s per row: the key's hash, its live count, then max reservation ids
	seed   maphash.Seed
	shards [capShards]capShard
}

// capShards is a power of two, at most 1<<(32-rowBits).
const capShards = 32

// A slot's at holds its shard above rowBits and its row below them.
const rowBits = 27

type capShard struct {
	mu    sync.Mutex
	index map[uint64]uint32 // key hash -> row
	rows  []uint64          // stride uint64s per row: hash, live count, reservation ids
	free  []uint32          // rows no key holds
	next  uint64            // the last reservation id given; ids never repeat
	_     [56]byte
}

// NewMemoryCap returns a cap of max streams per key; it panics if max < 1.
func NewMemoryCap(max int) *MemoryCap {
	if max < 1 {
		panic("streams: NewMemoryCap needs a max of at least 1 stream per key")
	}
	m := &MemoryCap{max: max, stride: max + 2, seed: maphash.MakeSeed()}
	for i := range m.shards {
		m.shards[i].index = map[uint64]uint32{}
	}
	return m
}

func (m *MemoryCap) capacity() int { return m.max }

func (m *MemoryCap) reserve(_ context.Context, key string) (capSlot, int, bool, error) {
	h := maphash.String(m.seed, key)
	shard := uint32(h & (capShards - 1))
	sh := &m.shards[shard]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	row, found := sh.index[h]
	if !found {
		row = sh.take(m.stride)
		sh.index[h] = row
		sh.rows[int(row)*m.stride] = h
	}
	r := sh.rows[int(row)*m.stride:][:m.stride]
	n := r[1]
	if n >= uint64(m.max) {
		return capSlot{}, int(n), false, nil
	}
	sh.next++
	r[2+n], r[1] = sh.next, n+1
	return capSlot{owner: m, key: key, id: sh.next, at: shard<<rowBits | row}, int(n + 1), true, nil
}

// take returns a free row for a new key, else a new one.
func (sh *capShard) take(stride int) uint32 {
	if n := len(sh.free); n > 0 {
		row := sh.free[n-1]
		sh.free = sh.free[:n-1]
		return row
	}
	row := len(sh.rows) / stride
	if row == 1<<rowBits {
		panic("streams: a MemoryCap shard holds streams of too many keys at once")
	}
	sh.rows = append(sh.rows, make([]uint64, stride)...)
	return uint32(row)
}

// releaseSlot frees s's reservation if its row still holds it, and the row with its last.
func (m *MemoryCap) releaseSlot(s capSlot) {
	sh := &m.shards[s.at>>rowBits]
	row := int(s.at & (1<<rowBits - 1))
	sh.mu.Lock()
	defer sh.mu.Unlock()
	r := sh.rows[row*m.stride:][:m.stride]
	n := r[1]
	if i := slices.Index(r[2:2+n], s.id); i >= 0 {
		r[2+i], r[1+n] = r[1+n], 0 // the last id fills the gap
		r[1] = n - 1
		if n == 1 {
			delete(sh.index, r[0])
			sh.free = append(sh.free, uint32(row))
		}
	}
}

func (m *MemoryCap) refreshSlot(context.Context, capSlot) error { return nil }
