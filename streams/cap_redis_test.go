package streams

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/brain-template/brain/internal/testproxy"
	"github.com/brain-template/brain/ratelimit/redistest"
	"github.com/redis/rueidis"
)

// replicas returns n RedisCaps sharing one prefix, each on a client of its
// own, as n replicas of one deployment would be, and a client to look at
// their keys.
func replicas(t *testing.T, n, max int, lease time.Duration) ([]*RedisCap, rueidis.Client, string) {
	t.Helper()
	prefix := redistest.Prefix()
	caps := make([]*RedisCap, n)
	for i := range caps {
		caps[i] = NewRedisCap(redistest.Client(t, redistest.Option(t)), prefix, max, lease, NewMemoryCap(max))
		caps[i].Timeout = time.Second // Redis is up: a loaded machine must not look like an outage
		caps[i].OnError = func(err error) { t.Errorf("OnError(%v) with Redis up", err) }
	}
	rc := redistest.Client(t, redistest.Option(t))
	loadScripts(t, rc)
	return caps, rc, prefix
}

// loadScripts loads the cap's scripts into Redis without a timeout, so a
// test's first call does not spend its 100 ms loading one.
func loadScripts(t *testing.T, c rueidis.Client) {
	t.Helper()
	for _, src := range []string{reserveScript, refreshScript} {
		if err := c.Do(context.Background(), c.B().ScriptLoad().Script(src).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	}
}

func exists(t *testing.T, c rueidis.Client, key string) bool {
	t.Helper()
	n, err := c.Do(context.Background(), c.B().Exists().Key(key).Build()).AsInt64()
	if err != nil {
		t.Fatal(err)
	}
	return n == 1
}

func TestRedisCapSharedByReplicas(t *testing.T) {
	t.Parallel()
	caps, rc, prefix := replicas(t, 2, 3, time.Minute)
	a, b := caps[0], caps[1]
	if a.Max() != 3 {
		t.Fatalf("Max() = %d, want 3", a.Max())
	}
	a1 := mustReserve(t, a, "alice", 1)
	mustReserve(t, a, "alice", 2)
	mustReserve(t, b, "alice", 3)
	mustRefuse(t, b, "alice", 3)
	mustRefuse(t, a, "alice", 3)

	// A slot released on one replica is taken on the other, once.
	a1.Release()
	a1.Release() // a second release frees nothing more
	mustReserve(t, b, "alice", 3)
	mustRefuse(t, a, "alice", 3)

	// Keys are independent; the set lives a lease, not forever.
	bob := mustReserve(t, a, "bob", 1)
	ttl, err := rc.Do(context.Background(), rc.B().Pttl().Key(prefix+"streams:alice").Build()).AsInt64()
	if err != nil || ttl <= 0 || ttl > time.Minute.Milliseconds() {
		t.Fatalf("PTTL of alice's set = %d, %v; want within the lease (60000 ms)", ttl, err)
	}
	bob.Release()
	if exists(t, rc, prefix+"streams:bob") {
		t.Fatal("bob's set outlived his last stream")
	}

	// The slots are Redis's: the fallbacks counted none of them.
	if n := a.fallback.live("alice") + b.fallback.live("alice"); n != 0 {
		t.Fatalf("the fallbacks count %d streams with Redis up, want 0", n)
	}
}

// A slot that is not refreshed expires a lease after it was taken, as the
// slots of a replica that died do; a refreshed one stays.
func TestRedisCapLease(t *testing.T) {
	t.Parallel()
	const lease = 300 * time.Millisecond
	caps, rc, prefix := replicas(t, 2, 1, lease)
	a, b := caps[0], caps[1]
	ctx := context.Background()

	dead := mustReserve(t, a, "dead", 1) // a replica that dies holding it
	kept := mustReserve(t, a, "kept", 1)
	mustRefuse(t, b, "dead", 1)
	// Refreshed every lease/3 for over three leases, kept stays.
	for range 10 {
		time.Sleep(lease / 3)
		if err := kept.Refresh(ctx); err != nil {
			t.Fatalf("Refresh of a live slot: %v", err)
		}
		mustRefuse(t, b, "kept", 1)
	}
	// dead was never refreshed: its set expired with its lease, and its
	// place is free.
	if exists(t, rc, prefix+"streams:dead") {
		t.Fatal("an unrefreshed slot's set outlived its lease")
	}
	if err := dead.Refresh(ctx); !errors.Is(err, ErrSlotLost) {
		t.Fatalf("Refresh of an expired slot = %v, want ErrSlotLost", err)
	}
	mustReserve(t, b, "dead", 1)

	kept.Release()
	mustReserve(t, b, "kept", 1)
}

// A lease that ended is dropped by the next Reserve even while the set
// lives on through another stream's lease.
func TestRedisCapExpiredMemberDropped(t *testing.T) {
	t.Parallel()
	const lease = 400 * time.Millisecond
	caps, _, _ := replicas(t, 2, 2, lease)
	a, b := caps[0], caps[1]
	ctx := context.Background()
	early := mustReserve(t, a, "k", 1) // never refreshed
	time.Sleep(lease / 2)
	late := mustReserve(t, b, "k", 2) // keeps the set alive past early's lease
	time.Sleep(lease/2 + 100*time.Millisecond)
	if err := late.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	// early's member is still in the set, but its lease ended: it is not
	// brought back.
	if err := early.Refresh(ctx); !errors.Is(err, ErrSlotLost) {
		t.Fatalf("Refresh of a slot whose lease ended = %v, want ErrSlotLost", err)
	}
	mustReserve(t, b, "k", 2) // early dropped: 1 live, then 2
}

// proxied returns a RedisCap whose Redis traffic goes through a proxy the
// test breaks, with a fallback of its own and the errors it reported.
func proxied(t *testing.T, max int, fallback *MemoryCap) (*RedisCap, *testproxy.Proxy, func() []error) {
	t.Helper()
	opt := redistest.Option(t)
	p := testproxy.New(t, opt.InitAddress[0])
	opt.InitAddress = []string{p.Addr()}
	opt.DisableRetry = true
	client := redistest.Client(t, opt)
	loadScripts(t, client)
	c := NewRedisCap(client, redistest.Prefix(), max, time.Minute, fallback)
	c.Timeout = time.Second // while Redis is up; a test of the timeout sets it back
	// Cut before the client closes, which would wait on a stalled proxy.
	t.Cleanup(p.Cut)
	var mu sync.Mutex
	var errs []error
	c.OnError = func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	return c, p, func() []error {
		mu.Lock()
		defer mu.Unlock()
		return append([]error(nil), errs...)
	}
}

func TestRedisCapFallsBackWhenRedisIsDown(t *testing.T) {
	t.Parallel()
	fallback := NewMemoryCap(2)
	c, p, errs := proxied(t, 2, fallback)
	ctx := context.Background()
	inRedis := mustReserve(t, c, "k", 1)
	if fallback.live("k") != 0 {
		t.Fatal("the fallback counted a slot Redis gave")
	}

	p.Cut()
	s := mustReserve(t, c, "k", 1) // the fallback's count, not Redis's
	if len(errs()) == 0 {
		t.Fatal("OnError was not called when Redis failed")
	}
	if s.owner != fallback || fallback.live("k") != 1 {
		t.Fatalf("the slot taken during the outage is not the fallback's (owner %T, fallback live %d)", s.owner, fallback.live("k"))
	}
	mustReserve(t, c, "k", 2)
	mustRefuse(t, c, "k", 2) // the fallback caps too

	// Refresh returns Redis's error; Release ignores it but reports it.
	if err := inRedis.Refresh(ctx); err == nil || errors.Is(err, ErrSlotLost) {
		t.Fatalf("Refresh with Redis down = %v, want Redis's error", err)
	}
	before := len(errs())
	inRedis.Release()
	if len(errs()) != before+1 {
		t.Fatal("a Release that could not reach Redis was not reported to OnError")
	}
	s.Release()
	if fallback.live("k") != 1 {
		t.Fatalf("fallback live after releasing its slot = %d, want 1", fallback.live("k"))
	}

	// Back up: Reserve asks Redis again, where inRedis still holds its place.
	p.Restore()
	deadline := time.Now().Add(2 * time.Second)
	for {
		s, live, ok, err := c.Reserve(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		if s.owner != fallback { // Redis answered
			if !ok || live != 2 {
				t.Fatalf("Reserve after Restore = live %d, ok %v; want 2 (inRedis's lease and this one)", live, ok)
			}
			break
		}
		s.Release()
		if time.Now().After(deadline) {
			t.Fatal("Reserve still falls back 2 s after Redis came back")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestRedisCapStalledRedisTimesOut(t *testing.T) {
	t.Parallel()
	fallback := NewMemoryCap(1)
	c, p, errs := proxied(t, 1, fallback)
	if s := mustReserve(t, c, "warm", 1); s.owner != c { // the connection is open before it stalls
		t.Fatalf("Reserve with Redis up took the fallback's slot: %v", errs())
	}
	p.Stall()
	c.Timeout = redisTimeout
	start := time.Now()
	s := mustReserve(t, c, "k", 1)
	if took := time.Since(start); took > redisTimeout+200*time.Millisecond {
		t.Fatalf("Reserve against a stalled Redis took %v, want about %v", took, redisTimeout)
	}
	if s.owner != fallback || len(errs()) != 1 {
		t.Fatalf("Reserve against a stalled Redis: owner %T, errors reported %v; want the fallback's slot and 1 error", s.owner, errs())
	}
}

func TestRedisCapWithoutFallbackReturnsTheError(t *testing.T) {
	t.Parallel()
	c, p, _ := proxied(t, 1, nil)
	p.Cut()
	if _, _, ok, err := c.Reserve(context.Background(), "k"); err == nil || ok {
		t.Fatalf("Reserve with Redis down and no fallback = ok %v, err %v; want an error", ok, err)
	}
}

// A caller that gives up is not an outage: no fallback, no OnError.
func TestRedisCapCallerGivesUp(t *testing.T) {
	t.Parallel()
	fallback := NewMemoryCap(1)
	c, _, errs := proxied(t, 1, fallback)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, ok, err := c.Reserve(ctx, "k"); !errors.Is(err, context.Canceled) || ok {
		t.Fatalf("Reserve with a canceled context = ok %v, err %v; want context.Canceled", ok, err)
	}
	if len(errs()) != 0 || fallback.live("k") != 0 {
		t.Fatal("a canceled Reserve was taken for an outage")
	}
}
