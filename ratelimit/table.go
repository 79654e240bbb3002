package ratelimit

import (
	"math/bits"
	"sync"
	"unsafe"
)

// A table holds a [Memory]'s keys: a set-associative cache of 128-byte
// sets, entries of a tag (hash, LRU rank in the low bits) then a TAT per
// rate. A new key takes an empty entry, else the least recently used idle
// one, else the least recently used. Locked stripes of sets double when
// three quarters full, or sooner rather than forget a busy key.
type table struct {
	stripes     []stripe
	stripeShift uint // a tag's stripe is tag >> stripeShift
	stripeBits  uint // 64 - stripeShift
	stride      int  // words per entry
	ways        int  // entries per set
	busyGrowth  int  // a stripe 1/busyGrowth full grows rather than forget a busy key
	maxKeys     int  // as asked, before rounding
}

type stripe struct {
	mu      sync.Mutex
	words   []int64 // sets × setWords, aligned to 128 bytes
	sets    uint64
	maxSets uint64 // the stripe's share of MaxKeys, in sets
	keys    int    // entries in use
	_       [8]byte
}

const (
	setWords      = 16 // 128 bytes
	rankBits      = 3  // of a tag word, the entry's rank
	rankMask      = 1<<rankBits - 1
	keysPerStripe = 1024
	maxStripes    = 64
)

func newTable(rates, maxKeys int) table {
	t := table{stride: rates + 1, maxKeys: maxKeys}
	t.ways = min(setWords/t.stride, maxKeys)
	t.busyGrowth = 4
	if t.ways >= 8 {
		t.busyGrowth = 2
	}
	n := 1
	for n < maxStripes && n*keysPerStripe < maxKeys {
		n *= 2
	}
	t.stripeBits = uint(bits.TrailingZeros(uint(n)))
	t.stripeShift = 64 - t.stripeBits
	t.stripes = make([]stripe, n)
	sets := max(maxKeys/t.ways, 1)
	for i := range t.stripes {
		s := &t.stripes[i]
		s.maxSets = uint64(sets / n)
		if i < sets%n {
			s.maxSets++
		}
		s.maxSets = max(s.maxSets, 1)
		s.sets = 1
		s.words = t.newSets(1)
	}
	return t
}

// tagOf returns a hash's tag: rank bits clear, never zero (empty).
func tagOf(h uint64) uint64 {
	if t := h &^ rankMask; t != 0 {
		return t
	}
	return 1 << rankBits
}

func (t *table) stripe(tag uint64) *stripe { return &t.stripes[tag>>t.stripeShift] }

// set returns tag's set in s; doubling s splits set i into 2i and 2i+1.
func (t *table) set(s *stripe, tag uint64) []int64 {
	i, _ := bits.Mul64(tag<<t.stripeBits, s.sets)
	o := int(i) * setWords
	return s.words[o : o+setWords]
}

// entry returns the TATs of tag, with s locked, making it most recently used.
func (t *table) entry(s *stripe, tag uint64, now int64) []int64 {
	set, stride := t.set(s, tag), t.stride
	for i := 0; i < t.ways; i++ {
		if e := set[i*stride : i*stride+stride]; uint64(e[0])&^rankMask == tag {
			t.touch(set, i)
			return e[1:]
		}
	}
	return t.insert(s, set, tag, now)
}

func (t *table) insert(s *stripe, set []int64, tag uint64, now int64) []int64 {
	i, class := t.victim(set, now)
	if t.mustGrow(s, class) {
		t.grow(s)
		set = t.set(s, tag)
		i, _ = t.victim(set, now)
	}
	e := set[i*t.stride : i*t.stride+t.stride]
	if uint64(e[0])&^rankMask == 0 {
		s.keys++
	}
	clear(e[1:])
	e[0] = int64(tag | uint64(e[0])&rankMask)
	t.touch(set, i)
	return e[1:]
}

func (t *table) touch(set []int64, i int) {
	r := set[i*t.stride] & rankMask
	if r == 0 {
		return
	}
	for j := 0; j < t.ways; j++ {
		if w := &set[j*t.stride]; *w&rankMask < r {
			*w++
		}
	}
	set[i*t.stride] &^= rankMask
}

// The classes of entry a new key can take, in order of preference.
const (
	empty = iota
	idle  // buckets all full again: no state
	busy
)

func (t *table) mustGrow(s *stripe, c int) bool {
	if s.sets == s.maxSets {
		return false
	}
	slots := int(s.sets) * t.ways
	return 4*s.keys >= 3*slots || c == busy && t.busyGrowth*s.keys >= slots
}

func (t *table) victim(set []int64, now int64) (int, int) {
	best, bestClass, bestRank := 0, busy+1, int64(-1)
	for i := 0; i < t.ways; i++ {
		e := set[i*t.stride : i*t.stride+t.stride]
		class := busy
		if uint64(e[0])&^rankMask == 0 {
			class = empty
		} else if full(e[1:], now) {
			class = idle
		}
		if r := e[0] & rankMask; class < bestClass || class == bestClass && class != empty && r > bestRank {
			best, bestClass, bestRank = i, class, r
		}
	}
	return best, bestClass
}

func full(tats []int64, now int64) bool {
	for _, tat := range tats {
		if tat > now {
			return false
		}
	}
	return true
}

// grow doubles s's sets (up to maxSets), moving entries from most to least
// recently used so their order of use is kept.
func (t *table) grow(s *stripe) {
	old := s.words
	s.sets = min(2*s.sets, s.maxSets)
	s.words = t.newSets(s.sets)
	s.keys = 0
	for r := int64(0); r < int64(t.ways); r++ {
		for o := 0; o < len(old); o += setWords {
			for i := 0; i < t.ways; i++ {
				e := old[o+i*t.stride : o+i*t.stride+t.stride]
				tag := uint64(e[0]) &^ rankMask
				if e[0]&rankMask != r || tag == 0 {
					continue
				}
				set := t.set(s, tag)
				for j := 0; j < t.ways; j++ {
					if d := set[j*t.stride : j*t.stride+t.stride]; uint64(d[0])&^rankMask == 0 {
						copy(d[1:], e[1:])
						d[0] |= int64(tag)
						s.keys++
						break
					}
				}
			}
		}
	}
}

// newSets returns n empty sets, aligned to 128 bytes.
func (t *table) newSets(n uint64) []int64 {
	const size = setWords * 8
	words := make([]int64, int(n)*setWords)
	if addr := uintptr(unsafe.Pointer(&words[0])); addr%size != 0 {
		buf := make([]int64, len(words)+setWords-1)
		skip := int((size - uintptr(unsafe.Pointer(&buf[0]))%size) % size / 8)
		words = buf[skip : skip+len(words) : skip+len(words)]
	}
	for o := 0; o < len(words); o += setWords {
		for i := 0; i < t.ways; i++ {
			words[o+i*t.stride] = int64(i)
		}
	}
	return words
}

func (t *table) len() int {
	n := 0
	for i := range t.stripes {
		s := &t.stripes[i]
		s.mu.Lock()
		n += s.keys
		s.mu.Unlock()
	}
	return n
}
