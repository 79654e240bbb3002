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
	prefix := redistest.Prefix(t)
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
	for _, src := range []string{capScript} {
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
	if a.capacity() != 3 {
		t.Fatalf("Max() = %d, want 3", a.capacity())
	}
	a1 := mustReserve(t, a, "alice", 1)
	mustReserve(t, a, "alice", 2)
	mustReserve(t, b, "alice", 3)
	mustRefuse(t, b, "alice", 3)
	mustRefuse(t, a, "alice", 3)

	// A slot released on one replica is taken on the other, once.
	a1.release()
	a1.release() // a second release frees nothing more
	mustReserve(t, b, "alice", 3)
	mustRefuse(t, a, "alice", 3)

	// Keys are independent; the set lives a lease, not forever.
	bob := mustReserve(t, a, "bob", 1)
	ttl, err := rc.Do(context.Background(), rc.B().Pttl().Key(prefix+"streams:alice").Build()).AsInt64()
	if err != nil || ttl <= 0 || ttl > time.Minute.Milliseconds() {
		t.Fatalf("PTTL of alice's set = %d, %v; want within the lease (60000 ms)", ttl, err)
	}
	bob.release()
	if exists(t, rc, prefix+"streams:bob") {
		t.Fatal("bob's set outlived his last stream")
	}

	// Each replica counts the streams it holds, whoever admitted them.
	if na, nb := a.fallback.live("alice"), b.fallback.live("alice"); na != 1 || nb != 2 {
		t.Fatalf("the replicas count %d and %d of alice's streams, want the 1 and 2 they hold", na, nb)
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
		if err := kept.refresh(ctx); err != nil {
			t.Fatalf("Refresh of a live slot: %v", err)
		}
		mustRefuse(t, b, "kept", 1)
	}
	// dead was never refreshed: its set expired with its lease, and its
	// place is free for another stream. Its own Refresh, late, finds the
	// place taken.
	if exists(t, rc, prefix+"streams:dead") {
		t.Fatal("an unrefreshed slot's set outlived its lease")
	}
	mustReserve(t, b, "dead", 1)
	if err := dead.refresh(ctx); !errors.Is(err, errSlotLost) {
		t.Fatalf("Refresh of an expired slot whose place was taken = %v, want errSlotLost", err)
	}

	kept.release()
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
	if err := late.refresh(ctx); err != nil {
		t.Fatal(err)
	}
	mustReserve(t, b, "k", 2) // early's member is still in the set, but its lease ended: 1 live, then 2
	if err := early.refresh(ctx); !errors.Is(err, errSlotLost) {
		t.Fatalf("Refresh of a slot whose lease ended, its key full = %v, want errSlotLost", err)
	}
}

// A stream whose lease ended (its refreshes could not reach Redis for a
// lease) but whose key has room is counted again at its next Refresh.
func TestRedisCapExpiredLeaseTakenBack(t *testing.T) {
	t.Parallel()
	const lease = 300 * time.Millisecond
	caps, rc, prefix := replicas(t, 1, 2, lease)
	s := mustReserve(t, caps[0], "k", 1)
	time.Sleep(lease + 100*time.Millisecond)
	if exists(t, rc, prefix+"streams:k") {
		t.Fatal("an unrefreshed slot's set outlived its lease")
	}
	if err := s.refresh(context.Background()); err != nil {
		t.Fatalf("Refresh of an expired slot whose key has room = %v, want nil", err)
	}
	if n := zcard(t, rc, prefix+"streams:k"); n != 1 {
		t.Fatalf("the key's set holds %d leases, want the 1 taken back", n)
	}
}

func zcard(t *testing.T, c rueidis.Client, key string) int64 {
	t.Helper()
	n, err := c.Do(context.Background(), c.B().Zcard().Key(key).Build()).AsInt64()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// proxied returns a RedisCap whose Redis traffic goes through a proxy the
// test breaks, with a fallback of its own and the errors it reported.
func proxied(t *testing.T, max int, fallback *MemoryCap) (*RedisCap, *testproxy.Proxy, func() []error) {
	t.Helper()
	return proxiedAt(t, redistest.Prefix(t), max, time.Minute, fallback)
}

// proxiedAt is proxied with a prefix and a lease of the test's.
func proxiedAt(t *testing.T, prefix string, max int, lease time.Duration, fallback *MemoryCap) (*RedisCap, *testproxy.Proxy, func() []error) {
	t.Helper()
	opt := redistest.Option(t)
	p := testproxy.New(t, opt.InitAddress[0])
	opt.InitAddress = []string{p.Addr()}
	opt.DisableRetry = true
	client := redistest.Client(t, opt)
	loadScripts(t, client)
	c := NewRedisCap(client, prefix, max, lease, fallback)
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
	rc := redistest.Client(t, redistest.Option(t))
	ctx := context.Background()
	inRedis := mustReserve(t, c, "k", 1)
	if fallback.live("k") != 1 {
		t.Fatal("the fallback does not count a slot Redis gave")
	}

	p.Cut()
	s := mustReserve(t, c, "k", 2) // the replica's count: its stream in Redis, and this one
	if len(errs()) == 0 {
		t.Fatal("OnError was not called when Redis failed")
	}
	mustRefuse(t, c, "k", 2) // the stream already in Redis counts: the replica holds 2

	// Refresh returns Redis's error; Release ignores it but reports it.
	if err := inRedis.refresh(ctx); err == nil || errors.Is(err, errSlotLost) {
		t.Fatalf("Refresh with Redis down = %v, want Redis's error", err)
	}
	before := len(errs())
	inRedis.release()
	if len(errs()) != before+1 {
		t.Fatal("a Release that could not reach Redis was not reported to OnError")
	}
	if fallback.live("k") != 1 {
		t.Fatalf("fallback live after releasing a slot = %d, want 1", fallback.live("k"))
	}

	// Back up: the stream admitted during the outage takes a lease at its
	// refresh, and the release that failed is done.
	p.Restore()
	eventually(t, 2*time.Second, "Redis counts the 1 stream open, at its heartbeats", func() bool {
		return s.refresh(ctx) == nil && zcard(t, rc, c.prefix+"k") == 1
	})
	mustReserve(t, c, "k", 2)
}

// eventually retries f every 20 ms for up to d, failing the test with
// what if it never returns true.
func eventually(t *testing.T, d time.Duration, what string, f func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !f(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", d, what)
		}
	}
}

// During a cut a key never holds more than max streams on a replica: its
// count starts from the streams the replica holds in Redis. After the
// cut the counts reconcile: the streams admitted during it take leases,
// the leases of those that ended are removed, and Redis counts exactly
// the streams open.
func TestRedisCapOutageKeepsTheCap(t *testing.T) {
	t.Parallel()
	const max = 4
	prefix := redistest.Prefix(t)
	c, p, _ := proxiedAt(t, prefix, max, time.Minute, NewMemoryCap(max))
	other := NewRedisCap(redistest.Client(t, redistest.Option(t)), prefix, max, time.Minute, NewMemoryCap(max)) // a replica Redis still answers
	other.Timeout = time.Second
	rc := redistest.Client(t, redistest.Option(t))
	ctx := context.Background()
	var open []capSlot
	for i := range max {
		open = append(open, mustReserve(t, c, "k", i+1))
	}

	p.Cut()
	mustRefuse(t, c, "k", max) // not 0 + 1: the 4 in Redis are this replica's
	open[0].release()          // Redis does not hear of these two
	open[1].release()
	open = append(open[2:], mustReserve(t, c, "k", max-1), mustReserve(t, c, "k", max))
	mustRefuse(t, c, "k", max)
	if n := zcard(t, rc, prefix+"streams:k"); n != max {
		t.Fatalf("during the cut Redis counts %d streams of k, want the %d it admitted", n, max)
	}

	p.Restore()
	eventually(t, 2*time.Second, "Redis counts the streams open, at their heartbeats", func() bool {
		ok := true
		for i, s := range open {
			err := s.refresh(ctx)
			if errors.Is(err, errSlotLost) {
				t.Fatalf("stream %d lost its slot: its key had room", i+1)
			}
			ok = ok && err == nil
		}
		return ok && zcard(t, rc, prefix+"streams:k") == max
	})
	mustRefuse(t, other, "k", max)
	open[0].release()
	mustReserve(t, other, "k", max)
}

// When a cut let each replica admit a key's streams on its own, the
// cluster held more than max; once Redis is back, the streams that find
// no place at their refresh are told to end (errSlotLost), and the key
// is at its cap again.
func TestRedisCapOutageOverCapReconciles(t *testing.T) {
	t.Parallel()
	const max = 3
	prefix := redistest.Prefix(t)
	c, p, _ := proxiedAt(t, prefix, max, time.Minute, NewMemoryCap(max))
	other := NewRedisCap(redistest.Client(t, redistest.Option(t)), prefix, max, time.Minute, NewMemoryCap(max))
	other.Timeout = time.Second
	rc := redistest.Client(t, redistest.Option(t))
	ctx := context.Background()
	p.Cut()
	var cut []capSlot
	for i := range max {
		cut = append(cut, mustReserve(t, c, "k", i+1)) // this replica's own count
	}
	mustReserve(t, other, "k", 1) // Redis's: the other replica does not see the cut one's
	p.Restore()
	lost := 0
	for _, s := range cut {
		eventually(t, 2*time.Second, "a refresh reaches Redis again", func() bool {
			err := s.refresh(ctx)
			if errors.Is(err, errSlotLost) {
				lost++
				s.release() // the stream ends
				return true
			}
			return err == nil
		})
	}
	if lost != 1 {
		t.Fatalf("%d of the streams admitted during the cut lost their slots, want 1: the key had room for 2", lost)
	}
	if n := zcard(t, rc, prefix+"streams:k"); n != max {
		t.Fatalf("Redis counts %d streams of k, want %d", n, max)
	}
	mustRefuse(t, other, "k", max)
}

func TestRedisCapStalledRedisTimesOut(t *testing.T) {
	t.Parallel()
	fallback := NewMemoryCap(1)
	c, p, errs := proxied(t, 1, fallback)
	if mustReserve(t, c, "warm", 1); len(errs()) != 0 { // the connection is open before it stalls
		t.Fatalf("Reserve with Redis up: %v", errs())
	}
	p.Stall()
	c.Timeout = redisTimeout
	start := time.Now()
	mustReserve(t, c, "k", 1)
	// Ended by Timeout: a stalled call never ends of itself, and rueidis's
	// own write timeout (10 s) ends it later than this bound.
	if took := time.Since(start); took > redisTimeout+5*time.Second {
		t.Fatalf("Reserve against a stalled Redis took %v, want about %v (its Timeout)", took, redisTimeout)
	}
	if fallback.live("k") != 1 || len(errs()) != 1 {
		t.Fatalf("Reserve against a stalled Redis: the replica counts %d, errors reported %v; want 1 and 1 error", fallback.live("k"), errs())
	}
}

func TestRedisCapWithoutFallbackReturnsTheError(t *testing.T) {
	t.Parallel()
	c, p, _ := proxied(t, 1, nil)
	p.Cut()
	if _, _, ok, err := c.reserve(context.Background(), "k"); err == nil || ok {
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
	if _, _, ok, err := c.reserve(ctx, "k"); !errors.Is(err, context.Canceled) || ok {
		t.Fatalf("Reserve with a canceled context = ok %v, err %v; want context.Canceled", ok, err)
	}
	if len(errs()) != 0 || fallback.live("k") != 0 {
		t.Fatal("a canceled Reserve was taken for an outage")
	}
}
