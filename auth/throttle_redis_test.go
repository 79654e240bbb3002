package auth_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/brain-template/brain/auth"
	"github.com/brain-template/brain/ratelimit"
	"github.com/brain-template/brain/ratelimit/redistest"
	"github.com/redis/rueidis"
)

// Two replicas' back-offs on one Redis (a single server, and a Redis
// Cluster, where a username's count and an address's are in different
// slots) decide from the same counts: of 64 concurrent guesses at one
// username, half through each replica, exactly 5 are admitted; once they
// failed, both refuse the next for 1 s; and an address's 20 failures are
// 20 across both. The counts expire on their own.
func TestRedisBackoffReplicas(t *testing.T) {
	run := func(t *testing.T, opt rueidis.ClientOption) {
		th, prefix := auth.NewLoginThrottle(), redistest.Prefix(t)
		replicas := []auth.Backoff{
			redisBackoff(t, redistest.Client(t, opt), prefix, th, ratelimit.Closed),
			redisBackoff(t, redistest.Client(t, opt), prefix, th, ratelimit.Closed),
		}
		var mu sync.Mutex
		var admitted []auth.Attempt
		var wg sync.WaitGroup
		for i := range 64 {
			wg.Go(func() {
				a, err := replicas[i%2].Begin(t.Context(), "ada", fmt.Sprint("198.51.100.", i), t0)
				var te *auth.ThrottledError
				switch {
				case err == nil:
					mu.Lock()
					admitted = append(admitted, a)
					mu.Unlock()
				case !errors.As(err, &te) || te.Key != "username":
					t.Errorf("guess %d: %v, want admitted or refused by the username's count", i, err)
				}
			})
		}
		wg.Wait()
		if len(admitted) != 5 {
			t.Fatalf("%d of 64 concurrent guesses admitted across two replicas, want exactly 5", len(admitted))
		}
		for i, a := range admitted {
			replicas[i%2].Fail(a) // settled by either replica: the counts are Redis's
		}
		for i, b := range replicas {
			if got := retryAfter(b.Begin(t.Context(), "ada", "203.0.113.1", t0.Add(time.Millisecond))); got != time.Second-time.Millisecond {
				t.Fatalf("replica %d after 5 failures: retry after %v, want the rest of 1 s", i, got)
			}
		}
		for i := range 20 { // one address, 20 usernames, both replicas
			if err := fail(replicas[i%2], fmt.Sprint("user", i), "203.0.113.2", t0); err != nil {
				t.Fatalf("failure %d from one address: %v", i+1, err)
			}
		}
		var te *auth.ThrottledError
		if err := replicas[0].Check(t.Context(), "grace", "203.0.113.2", t0); !errors.As(err, &te) || te.Key != "ip" || te.Failures != 20 {
			t.Fatalf("after 20 failures from one address over two replicas: %v, want the ip back-off", err)
		}
		c := redistest.Client(t, opt)
		for _, key := range []string{prefix + "user:ada", prefix + "ip:203.0.113.2"} {
			if ttl, err := c.Do(t.Context(), c.B().Pttl().Key(key).Build()).AsInt64(); err != nil || ttl <= 0 || ttl > (24*time.Hour).Milliseconds() {
				t.Fatalf("%s: PTTL %d %v, want it to expire within the 24 h a username is remembered", key, ttl, err)
			}
		}
	}
	t.Run("single", func(t *testing.T) { run(t, redistest.Option(t)) })
	t.Run("cluster", func(t *testing.T) { run(t, redistest.StartCluster(t).Option()) })
}

// An attempt whose settling never reached Redis (its replica died) counts
// as in flight for 5 minutes, then no more.
func TestRedisBackoffUnsettled(t *testing.T) {
	b := redisBackoff(t, redistest.Client(t, redistest.Option(t)), redistest.Prefix(t), auth.NewLoginThrottle(), ratelimit.Closed)
	for range 5 {
		if _, err := b.Begin(t.Context(), "ada", "198.51.100.1", t0); err != nil { // never settled
			t.Fatal(err)
		}
	}
	if err := b.Check(t.Context(), "ada", "198.51.100.1", t0); err == nil {
		t.Fatal("5 attempts in flight: admitted, want them to count")
	}
	for i := range 5 { // had the five still counted, the second would wait 2 s
		if _, err := b.Begin(t.Context(), "ada", "198.51.100.1", t0.Add(5*time.Minute)); err != nil {
			t.Fatalf("attempt %d, 5 minutes after five that were never settled: %v", i+1, err)
		}
	}
}

// While Redis fails, the back-off decides as the outage policy says:
// local counts on this replica, open admits, closed fails with
// ErrUnavailable (a 503, never a 500). An attempt admitted in Redis
// settles quietly when Redis has failed since.
func TestRedisBackoffOutage(t *testing.T) {
	healthy := redistest.Client(t, redistest.Option(t))
	down := redistest.Client(t, redistest.Option(t))
	prefix := redistest.Prefix(t)
	inRedis, err := redisBackoff(t, down, prefix, auth.NewLoginThrottle(), ratelimit.Closed).Begin(t.Context(), "ada", "198.51.100.1", t0)
	if err != nil {
		t.Fatal(err)
	}
	down.Close()

	local := redisBackoff(t, down, prefix, auth.NewLoginThrottle(), ratelimit.Local)
	local.Fail(inRedis) // Redis is gone: nothing to do, nothing to fail
	for i := range 5 {
		if err := fail(local, "grace", "198.51.100.2", t0); err != nil {
			t.Fatalf("local: failure %d: %v", i+1, err)
		}
	}
	if got := retryAfter(local.Begin(t.Context(), "grace", "198.51.100.2", t0)); got != time.Second {
		t.Fatalf("local: after 5 failures counted on this replica: retry after %v, want 1s", got)
	}
	open := redisBackoff(t, down, prefix, auth.NewLoginThrottle(), ratelimit.Open)
	for i := range 10 {
		if err := fail(open, "grace", "198.51.100.2", t0); err != nil {
			t.Fatalf("open: attempt %d: %v, want every attempt admitted", i+1, err)
		}
	}
	closed := redisBackoff(t, down, prefix, auth.NewLoginThrottle(), ratelimit.Closed)
	if _, err := closed.Begin(t.Context(), "grace", "198.51.100.2", t0); !errors.Is(err, auth.ErrUnavailable) {
		t.Fatalf("closed: Begin: %v, want ErrUnavailable", err)
	}
	if err := closed.Check(t.Context(), "grace", "198.51.100.2", t0); !errors.Is(err, auth.ErrUnavailable) {
		t.Fatalf("closed: Check: %v, want ErrUnavailable", err)
	}
	// The attempt admitted before the outage still counts in Redis: it
	// was never settled there.
	h := redisBackoff(t, healthy, prefix, auth.NewLoginThrottle(), ratelimit.Closed)
	for i := range 4 {
		if err := fail(h, "ada", "198.51.100.1", t0); err != nil {
			t.Fatalf("failure %d beside the attempt in flight: %v", i+1, err)
		}
	}
	if err := h.Check(t.Context(), "ada", "198.51.100.1", t0); err == nil {
		t.Fatal("4 failures and an attempt in flight: admitted, want the 5 to count")
	}
}
