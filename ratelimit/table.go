package ratelimit

import (
	"math/bits"
	"sync"
	"unsafe"
)

// A table holds the state of a [Memory]'s keys. It is a set-associative
// cache, laid out as a CPU's caches are: a key's hash picks one set of
// 128 bytes, aligned to two cache lines, and the key's entry can only be
// in that set. An entry is a tag (the key's hash, with the entry's rank
// in its low bits), then one TAT per rate:
//
//	one rate:    8 entries of 16 bytes
//	two rates:   5 entries of 24 bytes (8 bytes unused)
//	three:       4 entries of 32 bytes
//	four:        3 entries of 40 bytes (8 bytes unused)
//
// A decision reads and writes one set and nothing else of the table.
// The set's two lines can be fetched together, their addresses known at
// once, so a decision waits for about one miss of the cache; a hash map
// pointing to separate storage waits for two, one after the other.
// Measured beside 64-byte sets (one line: 4 entries for one rate, 2 for
// two or three, 1 for four), 128-byte sets decide as fast or faster for
// one to three rates, and their larger sets forget far fewer keys.
//
// A set's entries are ranked from 0, the most recently used, to ways-1,
// the least; the ranks are always a permutation, empty entries included.
// A new key takes, in this order of preference, the first empty entry
// (so a set's first keys sit in its first line), the least recently
// used of the idle entries (keys whose buckets are all full again,
// which hold nothing a new entry would not), or the least recently used
// entry. So the table forgets a key only when its set is full, and then
// the key that loses least.
//
// The sets are split into stripes, each with its own lock, its own
// array of sets and its own share of MaxKeys. A stripe starts with one
// set and doubles (every key moved to its new set, under the stripe's
// lock, O(1) amortized per key) when three quarters full, or earlier
// (from half full for one rate, a quarter for more) when a new key would
// otherwise take a busy key's entry; below that, a full set makes room
// by forgetting an idle key, which costs nothing, and seldom a busy one.
// Doubling moves each set's entries into two sets, in their order of
// use, so every key keeps its state. The last step, to the stripe's
// share, is not a doubling: a set given more entries than it holds
// keeps the most recently used.
type table struct {
	stripes     []stripe
	stripeShift uint // a tag's stripe is tag >> stripeShift
	stripeBits  uint // 64 - stripeShift: the bits of a tag that its stripe uses
	stride      int  // words per entry: the tag, then one TAT per rate
	ways        int  // entries per set
	busyGrowth  int  // a stripe 1/busyGrowth full grows rather than forget a busy key
	maxKeys     int  // as asked, before rounding
}

// A stripe is a lock and the sets it guards. It fills one cache line,
// so that two cores deciding in two stripes do not share one.
type stripe struct {
	mu      sync.Mutex
	words   []int64 // sets × setWords, aligned to 128 bytes
	sets    uint64
	maxSets uint64 // the stripe's share of MaxKeys, in sets
	keys    int    // entries in use
	_       [8]byte
}

const (
	// setWords is the words of a set: 128 bytes.
	setWords = 16
	// rankBits of a tag word hold the entry's rank; the rest hold the
	// key's hash. A set has at most 1<<rankBits entries.
	rankBits = 3
	rankMask = 1<<rankBits - 1
	// A table has a stripe per keysPerStripe keys of MaxKeys, at most
	// maxStripes (a power of two).
	keysPerStripe = 1024
	maxStripes    = 64
)

// newTable returns a table for rates rates that holds at most maxKeys
// keys (rounded down to whole sets). It starts with one set a stripe.
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

// tagOf returns the tag of a key's hash: the hash with the rank's bits
// clear, and never zero, which marks an empty entry.
func tagOf(h uint64) uint64 {
	if t := h &^ rankMask; t != 0 {
		return t
	}
	return 1 << rankBits
}

// stripe returns the stripe of tag.
func (t *table) stripe(tag uint64) *stripe { return &t.stripes[tag>>t.stripeShift] }

// set returns the set of tag in s, of s.sets: the tag's bits below the
// stripe's, read as a fraction of 1 and scaled by s.sets. That is a
// multiplication instead of a division, and it makes doubling split
// set i into sets 2i and 2i+1.
func (t *table) set(s *stripe, tag uint64) []int64 {
	i, _ := bits.Mul64(tag<<t.stripeBits, s.sets)
	o := int(i) * setWords
	return s.words[o : o+setWords]
}

// entry returns the state of tag, the key's TATs, with s locked: the
// key's entry if it has one, else a new entry with its buckets full.
// The entry becomes its set's most recently used.
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

// insert gives tag, absent from its set, an entry with its buckets full.
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

// touch makes entry i its set's most recently used: rank 0, and every
// entry that was more recent than it one rank older.
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
	empty = iota // no key
	idle         // a key whose buckets are all full again: no state
	busy         // a key with state
)

// mustGrow reports whether s grows before a new key takes an entry of
// class c: when three quarters full, or when the key would take a busy
// key's entry and s is half full (sets of 8 entries: one rate) or a
// quarter full (sets of 3 to 5, which fill sooner). Between growths a
// stripe is at least a quarter or an eighth full, which bounds the
// memory a key costs.
func (t *table) mustGrow(s *stripe, c int) bool {
	if s.sets == s.maxSets {
		return false
	}
	slots := int(s.sets) * t.ways
	return 4*s.keys >= 3*slots || c == busy && t.busyGrowth*s.keys >= slots
}

// victim returns the entry of set a new key takes, and its class: the
// first empty one, else the least recently used of the idle ones (their
// buckets full again at now), else the least recently used.
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

// full reports whether every bucket of tats is full at now.
func full(tats []int64, now int64) bool {
	for _, tat := range tats {
		if tat > now {
			return false
		}
	}
	return true
}

// grow doubles s's sets (or takes them to s.maxSets), moving every
// entry to its set in the new array. Entries are moved from each old
// set's most recently used to its least, and each takes the first empty
// entry of its new set, whose rank is its position, so every new set
// keeps its keys' order of use. When doubling, a new set takes entries
// of one old set only and always has room; in the last step, to
// maxSets, one that is full drops the entries that come after.
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

// newSets returns n empty sets, each entry i of each set at rank i. The
// sets are aligned to 128 bytes, so that each fills two whole cache
// lines. Go's allocator already aligns a block whose size is a multiple
// of 128 bytes to 128 bytes; should it not, the block is padded.
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

// len returns how many keys t holds.
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
