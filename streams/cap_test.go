package streams

import (
	"context"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// live is how many streams m counts for key.
func (m *MemoryCap) live(key string) int {
	h := maphash.String(m.seed, key)
	sh := &m.shards[h&(capShards-1)]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	row, ok := sh.index[h]
	if !ok {
		return 0
	}
	return int(sh.rows[int(row)*m.stride+1])
}

// keys is how many keys m holds state for.
func (m *MemoryCap) keys() int {
	n := 0
	for i := range m.shards {
		sh := &m.shards[i]
		sh.mu.Lock()
		n += len(sh.index)
		sh.mu.Unlock()
	}
	return n
}

func mustReserve(t *testing.T, c Cap, key string, wantLive int) capSlot {
	t.Helper()
	s, live, ok, err := c.reserve(context.Background(), key)
	if err != nil || !ok || live != wantLive {
		t.Fatalf("reserve(%q) = live %d, ok %v, err %v; want live %d, ok", key, live, ok, err, wantLive)
	}
	return s
}

func mustRefuse(t *testing.T, c Cap, key string, wantLive int) {
	t.Helper()
	s, live, ok, err := c.reserve(context.Background(), key)
	if err != nil || ok || live != wantLive {
		t.Fatalf("reserve(%q) = live %d, ok %v, err %v; want live %d, refused", key, live, ok, err, wantLive)
	}
	if s != (capSlot{}) {
		t.Fatalf("a refused Reserve returned slot %+v, want the zero capSlot", s)
	}
}

func TestMemoryCapUpToMax(t *testing.T) {
	m := NewMemoryCap(3)
	if m.capacity() != 3 {
		t.Fatalf("Max() = %d, want 3", m.capacity())
	}
	var slots []capSlot
	for i := 1; i <= 3; i++ {
		slots = append(slots, mustReserve(t, m, "alice", i))
	}
	mustRefuse(t, m, "alice", 3)
	mustRefuse(t, m, "alice", 3)

	// Releasing one frees exactly one.
	slots[1].release()
	if got := m.live("alice"); got != 2 {
		t.Fatalf("live after one release = %d, want 2", got)
	}
	slots[1] = mustReserve(t, m, "alice", 3)
	mustRefuse(t, m, "alice", 3)

	// Keys are independent.
	b := mustReserve(t, m, "bob", 1)
	if got := m.live("alice"); got != 3 {
		t.Fatalf("alice's live after bob's reserve = %d, want 3", got)
	}
	b.release()
	if got := m.live("bob"); got != 0 {
		t.Fatalf("bob's live = %d, want 0", got)
	}

	for _, s := range slots {
		s.release()
	}
	if got := m.keys(); got != 0 {
		t.Fatalf("keys held after every stream ended = %d, want 0", got)
	}
}

// A second Release of a slot frees nothing: not another stream's slot of
// the same key, and not a count below zero.
func TestMemoryCapDoubleRelease(t *testing.T) {
	m := NewMemoryCap(2)
	a := mustReserve(t, m, "alice", 1)
	mustReserve(t, m, "alice", 2)
	a.release()
	a.release()
	if got := m.live("alice"); got != 1 {
		t.Fatalf("live after releasing one slot twice = %d, want 1 (the other stream's)", got)
	}
	c := mustReserve(t, m, "alice", 2)
	a.release() // again, now that its place holds c
	mustRefuse(t, m, "alice", 2)

	// Once the key's state is gone, a stale slot frees nothing either.
	m2 := NewMemoryCap(1)
	s := mustReserve(t, m2, "k", 1)
	s.release()
	s.release()
	if got := m2.keys(); got != 0 {
		t.Fatalf("keys = %d, want 0", got)
	}
	mustReserve(t, m2, "k", 1)
	s.release()
	mustRefuse(t, m2, "k", 1)

	c.release()
	if got := m.live("alice"); got != 1 {
		t.Fatalf("live = %d, want 1", got)
	}
}

func TestZeroSlot(t *testing.T) {
	var s capSlot
	s.release()
	if err := s.refresh(context.Background()); err != nil {
		t.Fatalf("zero capSlot's Refresh = %v, want nil", err)
	}
	m := NewMemoryCap(1)
	s = mustReserve(t, m, "k", 1)
	if err := s.refresh(context.Background()); err != nil {
		t.Fatalf("memory Refresh = %v, want nil", err)
	}
}

func TestNewMemoryCapPanicsOnNoStreams(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("NewMemoryCap(0) did not panic")
		}
	}()
	NewMemoryCap(0)
}

// Churn through fresh keys leaves no state behind and, once warm,
// allocates nothing: a key's row and its index entry are reused.
func TestMemoryCapChurn(t *testing.T) {
	m := NewMemoryCap(2)
	ks := make([]string, 50_000)
	for i := range ks {
		ks[i] = fmt.Sprintf("user-%d", i)
	}
	held := make([]capSlot, 0, 64)
	churn := func(k string) {
		s, _, ok, _ := m.reserve(context.Background(), k)
		if !ok {
			t.Fatalf("a fresh key %q was refused", k)
		}
		held = append(held, s)
		if len(held) == cap(held) { // at most 64 keys hold a stream at once
			for _, s := range held {
				s.release()
			}
			held = held[:0]
		}
	}
	for _, k := range ks[:1000] {
		churn(k)
	}
	i := 1000
	allocs := testing.AllocsPerRun(len(ks)-1001, func() {
		churn(ks[i])
		i++
	})
	for _, s := range held {
		s.release()
	}
	if got := m.keys(); got != 0 {
		t.Fatalf("keys held after churn = %d, want 0", got)
	}
	if allocs != 0 {
		t.Fatalf("churn allocates %v per stream once warm, want 0", allocs)
	}
	rows := 0
	for i := range m.shards {
		rows += len(m.shards[i].rows) / m.stride
	}
	// Each shard keeps rows for its own peak of keys at once: at most 64
	// each, whereas a cap that kept a row per key would hold one for each
	// of the keys churned.
	if rows > capShards*64 {
		t.Fatalf("%d rows after churning %d keys, at most 64 at once; want at most %d", rows, len(ks), capShards*64)
	}
}

// Goroutines reserving and releasing on a few keys, each holding some
// streams for a while, never see more than max streams of one key live.
func TestMemoryCapConcurrent(t *testing.T) {
	const max, keys, workers = 3, 4, 8
	m := NewMemoryCap(max)
	var live [keys]atomic.Int32
	var over, admitted atomic.Int32
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			type held struct {
				k int
				s capSlot
			}
			var hs []held
			release := func(i int) {
				h := hs[i]
				hs[i] = hs[len(hs)-1]
				hs = hs[:len(hs)-1]
				// Uncounted before its release, as counted after its
				// reservation: the count never exceeds what the cap holds.
				live[h.k].Add(-1)
				h.s.release()
				if i%2 == 0 {
					h.s.release() // a second release must free nothing
				}
			}
			rng := rand.New(rand.NewPCG(uint64(w), 0))
			for range 3000 {
				if len(hs) > 0 && rng.IntN(2) == 0 {
					release(rng.IntN(len(hs)))
					continue
				}
				k := rng.IntN(keys)
				s, _, ok, _ := m.reserve(context.Background(), fmt.Sprint("k", k))
				if !ok {
					runtime.Gosched()
					continue
				}
				admitted.Add(1)
				if live[k].Add(1) > max {
					over.Add(1)
				}
				hs = append(hs, held{k, s})
			}
			for len(hs) > 0 {
				release(0)
			}
		}()
	}
	wg.Wait()
	if n := over.Load(); n > 0 {
		t.Fatalf("%d times more than %d streams of one key were live", n, max)
	}
	if admitted.Load() < 1000 {
		t.Fatalf("only %d reservations admitted: the test exercised little", admitted.Load())
	}
	if got := m.keys(); got != 0 {
		t.Fatalf("keys held after every stream ended = %d, want 0", got)
	}
}

func BenchmarkMemoryCapReserveRelease(b *testing.B) {
	m := NewMemoryCap(5)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		s, _, _, _ := m.reserve(ctx, "user-0123456789")
		s.release()
	}
}

// A key with streams open already: its row stays, only the reservation
// comes and goes.
func BenchmarkMemoryCapReserveReleaseHeld(b *testing.B) {
	m := NewMemoryCap(5)
	ctx := context.Background()
	mustReserve := func() { m.reserve(ctx, "user-0123456789") }
	mustReserve()
	mustReserve()
	b.ReportAllocs()
	for b.Loop() {
		s, _, _, _ := m.reserve(ctx, "user-0123456789")
		s.release()
	}
}

func BenchmarkMemoryCapReserveReleaseParallel(b *testing.B) {
	m := NewMemoryCap(5)
	ctx := context.Background()
	var n atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		key := fmt.Sprintf("user-%010d", n.Add(1)) // each goroutine its own caller
		for pb.Next() {
			s, _, _, _ := m.reserve(ctx, key)
			s.release()
		}
	})
}

// A cap of two open streams per caller: the third is refused until one of
// the two ends and releases its slot. A stream takes its slot before it
// sends anything, and releases it, deferred, when it ends for any reason.
func ExampleMemoryCap() {
	ctx := context.Background()
	streamCap := NewMemoryCap(2)

	first, live, ok, _ := streamCap.reserve(ctx, "alice") // a MemoryCap never fails
	fmt.Println("first:", ok, "live", live)
	second, live, ok, _ := streamCap.reserve(ctx, "alice")
	fmt.Println("second:", ok, "live", live)
	_, live, ok, _ = streamCap.reserve(ctx, "alice")
	fmt.Println("third:", ok, "live", live, "of", streamCap.capacity())
	_, _, ok, _ = streamCap.reserve(ctx, "bob")
	fmt.Println("bob's first:", ok)

	first.release()
	first.release() // a second release frees nothing more
	third, live, ok, _ := streamCap.reserve(ctx, "alice")
	fmt.Println("after a release:", ok, "live", live)
	second.release()
	third.release()
	// Output:
	// first: true live 1
	// second: true live 2
	// third: false live 2 of 2
	// bob's first: true
	// after a release: true live 2
}
