package ratelimit

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/brain-template/brain/internal/testclock"
)

// fakeStore answers with err (when set), or a decision; local marks it as
// replayed from a deny cache. Block, when set, holds calls until the
// caller's context ends.
type fakeStore struct {
	mu    sync.Mutex
	err   error
	local bool
	block bool
	calls int
}

func (f *fakeStore) Budget() Budget {
	return Budget{Name: "p", Limits: []Limit{{Name: "p", Rate: Rate{Limit: 1, Window: time.Second, Burst: 1}}}}
}

func (f *fakeStore) Refund(context.Context, string, *Decision) error { return nil }

func (f *fakeStore) Allow(ctx context.Context, _ string) (Decision, error) {
	f.mu.Lock()
	f.calls++
	err, local, block := f.err, f.local, f.block
	f.mu.Unlock()
	if block {
		<-ctx.Done()
		return Decision{}, ctx.Err()
	}
	if err != nil {
		return Decision{}, err
	}
	return Decision{Allowed: true, local: local}, nil
}

func (f *fakeStore) set(fn func(*fakeStore)) { f.mu.Lock(); fn(f); f.mu.Unlock() }

var tb0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

type fakeClock = testclock.Clock

func newTestResilient(store Limiter) (*Resilient, *Breaker, *fakeClock) {
	clk := testclock.New(tb0)
	b := NewBreaker()
	b.Now = clk.Now
	r := NewResilient(store, NewMemory(store.Budget(), MemoryOptions{}), Open, b)
	r.Timeout = 20 * time.Millisecond
	return r, b, clk
}

func open(t *testing.T, r *Resilient, f *fakeStore, b *Breaker) {
	t.Helper()
	f.set(func(f *fakeStore) { f.err = errors.New("down") })
	for range 3 {
		r.Allow(context.Background(), "k")
	}
	if _, isOpen := b.Stats(); !isOpen {
		t.Fatal("the breaker did not open after 3 failures")
	}
}

// A probe whose caller gives up hands its turn back: the breaker can still
// close when the store returns.
func TestBreakerProbeAbandoned(t *testing.T) {
	f := &fakeStore{}
	r, b, clk := newTestResilient(f)
	open(t, r, f, b)
	clk.Advance(2 * time.Second)
	f.set(func(f *fakeStore) { f.err, f.block = nil, true })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	r.Allow(ctx, "k") // the probe; its caller gives up
	cancel()
	f.set(func(f *fakeStore) { f.block = false })
	r.Allow(context.Background(), "k") // the next probe
	if _, isOpen := b.Stats(); isOpen {
		t.Fatal("the breaker stays open after an abandoned probe")
	}
}

// Answers the store gave without asking Redis (the deny cache) are neither
// successes nor probes.
func TestBreakerIgnoresLocalAnswers(t *testing.T) {
	f := &fakeStore{}
	r, b, clk := newTestResilient(f)
	f.set(func(f *fakeStore) { f.err = errors.New("down") })
	for range 10 { // failures interleaved with deny-cache answers
		r.Allow(context.Background(), "k")
		f.set(func(f *fakeStore) { f.err, f.local = nil, true })
		r.Allow(context.Background(), "hot")
		f.set(func(f *fakeStore) { f.err, f.local = errors.New("down"), false })
	}
	if _, isOpen := b.Stats(); !isOpen {
		t.Fatal("deny-cache answers reset the failure count: the breaker never opened")
	}
	clk.Advance(2 * time.Second)
	f.set(func(f *fakeStore) { f.err, f.local = nil, true })
	r.Allow(context.Background(), "hot") // a probe answered locally
	if _, isOpen := b.Stats(); !isOpen {
		t.Fatal("a probe answered from the deny cache closed the breaker")
	}
}

// Calls already under way when the breaker opens do not lengthen its
// cooldown: the first probe comes after Cooldown, not MaxCooldown.
func TestBreakerLateFailures(t *testing.T) {
	f := &fakeStore{}
	r, b, clk := newTestResilient(f)
	f.set(func(f *fakeStore) { f.err = errors.New("down") })
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range 50 {
		wg.Add(1)
		go func() { defer wg.Done(); <-start; r.Allow(context.Background(), "k") }()
	}
	close(start)
	wg.Wait()
	f.set(func(f *fakeStore) { f.err = nil })
	clk.Advance(1500 * time.Millisecond)
	r.Allow(context.Background(), "k")
	if _, isOpen := b.Stats(); isOpen {
		t.Fatal("still open 1.5 s after opening: late failures lengthened the cooldown")
	}
}
