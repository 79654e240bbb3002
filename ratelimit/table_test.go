package ratelimit

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
	"unsafe"
)

var start = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC).UnixNano()

func oneRate(limit int, window time.Duration, burst int) Budget {
	return rates(1, limit, window, burst)
}

// rates returns a budget of n identical rates.
func rates(n, limit int, window time.Duration, burst int) Budget {
	b := Budget{Name: "b"}
	for i := range n {
		b.Limits = append(b.Limits, Limit{Name: fmt.Sprint("l", i), Rate: Rate{Limit: limit, Window: window, Burst: burst}})
	}
	return b
}

// peek returns the TATs the table holds for the key whose hash is h,
// without using the key.
func peek(m *Memory, h uint64) ([]int64, bool) {
	tag := tagOf(h)
	s := m.t.stripe(tag)
	s.mu.Lock()
	defer s.mu.Unlock()
	set := m.t.set(s, tag)
	for i := 0; i < m.t.ways; i++ {
		if e := set[i*m.t.stride : i*m.t.stride+m.t.stride]; uint64(e[0])&^rankMask == tag {
			return append([]int64(nil), e[1:]...), true
		}
	}
	return nil, false
}

// check verifies the table's invariants: each set's ranks are a
// permutation, each stripe counts its keys and stays within its share,
// each key sits in its own set, and the sets are aligned to their size.
func check(t *testing.T, m *Memory) {
	t.Helper()
	tb := &m.t
	total := uint64(0)
	for si := range tb.stripes {
		s := &tb.stripes[si]
		if s.sets > s.maxSets || len(s.words) != int(s.sets)*setWords {
			t.Fatalf("stripe %d: %d sets of at most %d, %d words", si, s.sets, s.maxSets, len(s.words))
		}
		if addr := uintptrOf(s.words); addr%uintptr(setWords*8) != 0 {
			t.Fatalf("stripe %d: sets at %#x, not aligned to %d bytes", si, addr, setWords*8)
		}
		total += s.maxSets
		keys := 0
		for o := 0; o < len(s.words); o += setWords {
			seen := 0
			for i := 0; i < tb.ways; i++ {
				w := uint64(s.words[o+i*tb.stride])
				seen |= 1 << (w & rankMask)
				if tag := w &^ rankMask; tag != 0 {
					keys++
					if tb.stripe(tag) != s || &tb.set(s, tag)[0] != &s.words[o] {
						t.Fatalf("tag %#x is in the wrong set", tag)
					}
				}
			}
			if seen != 1<<tb.ways-1 {
				t.Fatalf("stripe %d set %d: ranks %b are not a permutation of %d", si, o/setWords, seen, tb.ways)
			}
		}
		if keys != s.keys {
			t.Fatalf("stripe %d holds %d keys but counts %d", si, keys, s.keys)
		}
	}
	if total*uint64(tb.ways) > uint64(max(m.t.maxKeys, 1)) {
		t.Fatalf("the stripes' shares add up to %d sets of %d, over MaxKeys %d", total, tb.ways, m.t.maxKeys)
	}
}

func uintptrOf(words []int64) uintptr { return uintptr(unsafe.Pointer(&words[0])) }

// In a full set, a new key takes first the entry of a key whose buckets
// are full again, even if it is the most recently used, and only then
// the least recently used.
func TestTableEvictsFullBucketsFirst(t *testing.T) {
	m := NewMemory(oneRate(10, time.Minute, 10), MemoryOptions{MaxKeys: 4}) // one set of 4
	a, b, c, d, e, f, g := uint64(1)<<8, uint64(2)<<8, uint64(3)<<8, uint64(4)<<8, uint64(5)<<8, uint64(6)<<8, uint64(7)<<8
	for _, k := range []uint64{b, c, d} {
		for range 10 { // emptied: full again at +60s
			m.allowHash(k, start)
		}
	}
	m.allowHash(a, start+int64(time.Second)) // one token: full again at +7s; the most recently used
	check(t, m)

	m.allowHash(e, start+int64(10*time.Second))
	if _, ok := peek(m, a); ok {
		t.Fatal("a, full again, was kept; b, the least recently used, was not")
	}
	for _, k := range []uint64{b, c, d} {
		if tats, ok := peek(m, k); !ok || tats[0] != start+int64(time.Minute) {
			t.Fatalf("key %#x lost its state: %v, %v", k, tats, ok)
		}
	}
	// No bucket is full now: the least recently used, b, goes.
	m.allowHash(f, start+int64(10*time.Second))
	if _, ok := peek(m, b); ok {
		t.Fatal("b, the least recently used, was kept")
	}
	// At +61s every bucket is full; the least recently used of them, c, goes.
	m.allowHash(g, start+int64(61*time.Second))
	if _, ok := peek(m, c); ok {
		t.Fatal("c, the least recently used of the full ones, was kept")
	}
	for _, k := range []uint64{d, e, f, g} {
		if _, ok := peek(m, k); !ok {
			t.Fatalf("key %#x was evicted instead of c", k)
		}
	}
	check(t, m)
}

// Using a key, admitted or refused, makes it its set's most recently
// used; a new key in a full set takes the least recently used's entry.
func TestTableEvictsLeastRecentlyUsed(t *testing.T) {
	m := NewMemory(oneRate(1, time.Hour, 1), MemoryOptions{MaxKeys: 4})
	a, b, c, d, e, f := uint64(1)<<8, uint64(2)<<8, uint64(3)<<8, uint64(4)<<8, uint64(5)<<8, uint64(6)<<8
	for _, k := range []uint64{a, b, c, d} {
		m.allowHash(k, start)
	}
	for _, k := range []uint64{c, a, d, b} { // refused, and used: c is now the least recent
		if m.allowHash(k, start).Allowed {
			t.Fatalf("key %#x admitted twice", k)
		}
	}
	check(t, m)
	m.allowHash(e, start)
	if _, ok := peek(m, c); ok {
		t.Fatal("c, the least recently used, was kept")
	}
	m.allowHash(f, start)
	if _, ok := peek(m, a); ok {
		t.Fatal("a, the least recently used after c, was kept")
	}
	for _, k := range []uint64{d, b, e, f} {
		if _, ok := peek(m, k); !ok {
			t.Fatalf("key %#x was evicted out of order", k)
		}
	}
	if m.allowHash(c, start).Allowed != true {
		t.Fatal("c, forgotten, must start again with a full bucket")
	}
	check(t, m)
}

// Two keys are one key to the table when their hashes differ only in
// the bits that hold an entry's rank; keys whose tags differ have
// their own buckets, in the same set or not.
func TestTableHashCollision(t *testing.T) {
	m := NewMemory(oneRate(1, time.Hour, 1), MemoryOptions{})
	const h = 0xabcd_1234_5678_9a00
	if !m.allowHash(h|1, start).Allowed {
		t.Fatal("the first key was refused")
	}
	if m.allowHash(h|6, start).Allowed {
		t.Fatal("a key with the same tag was admitted: it must share the first's bucket")
	}
	if !m.allowHash(h+8, start).Allowed {
		t.Fatal("a key with the next tag (same set) shared the first's bucket")
	}
	// Hashes 0 to 7 have no tag bits; they share tag 8 with hashes 8 to 15.
	if !m.allowHash(0, start).Allowed || m.allowHash(8+3, start).Allowed {
		t.Fatal("hash 0 and hash 11 must share one bucket")
	}
	check(t, m)
}

// snapshot is every key of a table with its TATs and its rank.
type held struct {
	tats []int64
	rank int64
	set  *int64
}

func snapshot(m *Memory) map[uint64]held {
	out := map[uint64]held{}
	tb := &m.t
	for si := range tb.stripes {
		s := &tb.stripes[si]
		for o := 0; o < len(s.words); o += setWords {
			for i := 0; i < tb.ways; i++ {
				e := s.words[o+i*tb.stride : o+i*tb.stride+tb.stride]
				if tag := uint64(e[0]) &^ rankMask; tag != 0 {
					out[tag] = held{append([]int64(nil), e[1:]...), e[0] & rankMask, &s.words[o]}
				}
			}
		}
	}
	return out
}

// Growth moves every key with its state: doubling keeps all of them and
// their order of use within each set; the last step, to the bound, drops
// keys only from sets that it fills.
func TestTableGrowthKeepsState(t *testing.T) {
	for n := 1; n <= MaxLimits; n++ {
		t.Run(fmt.Sprint(n, "rates"), func(t *testing.T) {
			const maxKeys = 1000 // one stripe
			m := NewMemory(rates(n, 1, time.Hour, 1), MemoryOptions{MaxKeys: maxKeys})
			s := &m.t.stripes[0]
			r := rand.New(rand.NewPCG(1, uint64(n)))
			grown := 0
			for i := range 20 * maxKeys {
				m.allowHash(r.Uint64(), start+int64(i)) // every key's TATs differ
				if s.sets == s.maxSets || s.keys < int(s.sets)*m.t.ways/2 {
					continue
				}
				before, sets := snapshot(m), s.sets
				s.mu.Lock()
				m.t.grow(s) // what the next new key would do
				s.mu.Unlock()
				grown++
				check(t, m)
				after := snapshot(m)
				doubling := s.sets == 2*sets
				for tag, was := range before {
					now, ok := after[tag]
					if !ok {
						if doubling {
							t.Fatalf("%d to %d sets: tag %#x was dropped", sets, s.sets, tag)
						}
						if full := peekSetFull(m, tag); !full {
							t.Fatalf("%d to %d sets: tag %#x was dropped from a set with room", sets, s.sets, tag)
						}
						continue
					}
					for k := range was.tats {
						if now.tats[k] != was.tats[k] {
							t.Fatalf("tag %#x: TATs %v became %v", tag, was.tats, now.tats)
						}
					}
				}
				if doubling { // order of use: kept between any two keys of one old set now in one new set
					for t1, w1 := range before {
						for t2, w2 := range before {
							n1, n2 := after[t1], after[t2]
							if w1.set == w2.set && n1.set == n2.set && (w1.rank < w2.rank) != (n1.rank < n2.rank) {
								t.Fatalf("tags %#x, %#x: ranks %d, %d became %d, %d", t1, t2, w1.rank, w2.rank, n1.rank, n2.rank)
							}
						}
					}
				}
			}
			if s.sets != s.maxSets || grown == 0 {
				t.Fatalf("grew %d times to %d sets of %d", grown, s.sets, s.maxSets)
			}
		})
	}
}

// peekSetFull reports whether the set tag belongs to is full.
func peekSetFull(m *Memory, tag uint64) bool {
	set := m.t.set(m.t.stripe(tag), tag)
	for i := 0; i < m.t.ways; i++ {
		if uint64(set[i*m.t.stride])&^rankMask == 0 {
			return false
		}
	}
	return true
}

// A table never holds more than MaxKeys keys, and holds that many
// (rounded down to whole sets) once offered many more.
func TestTableBound(t *testing.T) {
	for n := 1; n <= MaxLimits; n++ {
		for _, maxKeys := range []int{1, 2, 3, 4, 5, 7, 100, 1023, 3000} {
			m := NewMemory(rates(n, 1, time.Hour, 1), MemoryOptions{MaxKeys: maxKeys})
			for i := range 30 * maxKeys {
				m.AllowAt(fmt.Sprint("key-", i), time.Unix(0, start))
			}
			check(t, m)
			want := maxKeys
			if maxKeys > m.t.ways {
				want -= maxKeys % m.t.ways
			}
			if got := m.Len(); got != want {
				t.Errorf("%d rates, MaxKeys %d: Len = %d, want %d", n, maxKeys, got, want)
			}
		}
	}
}

// A limiter that sees few keys holds little: one set per stripe to start.
func TestTableStartsSmall(t *testing.T) {
	m := NewMemory(oneRate(1, time.Hour, 1), MemoryOptions{}) // MaxKeys 1,000,000
	for i := range 10 {
		m.AllowAt(fmt.Sprint("key-", i), time.Unix(0, start))
	}
	words := 0
	for i := range m.t.stripes {
		words += len(m.t.stripes[i].words)
	}
	if len(m.t.stripes) != maxStripes || words > 2*maxStripes*setWords {
		t.Fatalf("10 keys take %d stripes and %d bytes of sets", len(m.t.stripes), words*8)
	}
}

// allowHash decides for the key whose hash is h at now.
func (m *Memory) allowHash(h uint64, now int64) (d Decision) {
	m.decideHash(&d, h, now)
	return
}

// A stripe grows when three quarters full, or from half full when a new
// key would take a busy key's entry; below that, a new key in a full set
// takes an idle key's entry, else the least recently used one's.
func TestTableGrowthPolicy(t *testing.T) {
	m := NewMemory(oneRate(1, time.Second, 1), MemoryOptions{MaxKeys: 1000}) // one stripe
	s, w := &m.t.stripes[0], uint64(m.t.ways)
	// Tags whose top bits are 00 fall in set 0 of 1, 2 or 4 sets; other's
	// 01 in set 0 of 2 and set 1 of 4.
	a := func(i uint64) uint64 { return i << 8 }
	other := uint64(1)<<62 | a(1000)
	k0 := (3*w + 3) / 4 // the keys in use at which one set is three quarters full
	for i := uint64(1); i <= k0; i++ {
		m.allowHash(a(i), start)
	}
	if s.sets != 1 {
		t.Fatalf("%d keys in %d entries: %d sets, want 1", k0, w, s.sets)
	}
	m.allowHash(a(k0+1), start)
	if s.sets != 2 || s.keys != int(k0)+1 {
		t.Fatalf("key %d: %d sets, %d keys; want 2 sets, %d keys", k0+1, s.sets, s.keys, k0+1)
	}
	for i := k0 + 2; i <= w; i++ { // set 0 full, the table half full
		m.allowHash(a(i), start)
	}
	if s.sets != 2 || s.keys != int(w) {
		t.Fatalf("set 0 full: %d sets, %d keys; want 2 sets, %d keys", s.sets, s.keys, w)
	}
	check(t, m)

	// Set 0 is full of keys idle at +2s: a new key takes the entry of a1,
	// the least recently used, and the table does not grow.
	at := start + int64(2*time.Second)
	m.allowHash(a(w+1), at)
	if _, ok := peek(m, a(1)); ok || s.sets != 2 || s.keys != int(w) {
		t.Fatalf("a new key among idle ones: a1 kept %v, %d sets, %d keys; want a1 gone, 2 sets, %d keys", ok, s.sets, s.keys, w)
	}
	// Now set 0 is full of busy keys (a(w+1), then a2 … aw used at +2s),
	// the table half full: a new key makes it grow, and no key is lost.
	for i := uint64(2); i <= w; i++ {
		m.allowHash(a(i), at)
	}
	m.allowHash(other, at)
	if s.sets != 4 {
		t.Fatalf("a new key among busy ones in a half-full table: %d sets, want 4", s.sets)
	}
	for i := uint64(2); i <= w+1; i++ {
		if tats, ok := peek(m, a(i)); !ok || tats[0] <= at {
			t.Fatalf("a%d lost its state in growth: %v, %v", i, tats, ok)
		}
	}
	check(t, m)
	// Under half full, a new key in full set 0 takes the least recently
	// used busy key's entry, a(w+1)'s, rather than growing the table.
	m.allowHash(a(w+2), at)
	if _, ok := peek(m, a(w+1)); ok || s.sets != 4 || s.keys != int(w)+1 {
		t.Fatalf("a new key among busy ones in a table under half full: a%d kept %v, %d sets, %d keys", w+1, ok, s.sets, s.keys)
	}
	check(t, m)
}

// Sets of fewer entries (more rates) fill sooner: a stripe of them grows
// rather than forget a busy key from a quarter full.
func TestTableGrowthPolicyFewWays(t *testing.T) {
	m := NewMemory(rates(4, 1, time.Hour, 1), MemoryOptions{MaxKeys: 1000}) // one stripe, sets of 3
	s := &m.t.stripes[0]
	if m.t.ways != 3 {
		t.Fatalf("4 rates: %d entries a set, want 3", m.t.ways)
	}
	// Top bits: the a keys 000, b 1, c 01, d 001.
	a := func(i uint64) uint64 { return i << 8 }
	b, c, d := uint64(1)<<63|a(50), uint64(1)<<62|a(51), uint64(1)<<61|a(52)
	steps := []struct {
		h          uint64
		sets, keys int
	}{
		{a(1), 1, 1}, {a(2), 1, 2}, {a(3), 1, 3}, // set 0 full, of busy keys
		{b, 2, 4},
		{c, 4, 5},
		{d, 8, 6}, // 5 keys in 12 entries: a quarter full, and set 0 full
	}
	for i, st := range steps {
		m.allowHash(st.h, start)
		if int(s.sets) != st.sets || s.keys != st.keys {
			t.Fatalf("step %d: %d sets, %d keys; want %d, %d", i, s.sets, s.keys, st.sets, st.keys)
		}
		check(t, m)
	}
	for _, h := range []uint64{a(1), a(2), a(3), b, c, d} {
		if _, ok := peek(m, h); !ok {
			t.Fatalf("key %#x was forgotten", h)
		}
	}
}
