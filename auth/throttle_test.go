package auth_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/brain-template/brain/auth"
	"github.com/brain-template/brain/ratelimit"
	"github.com/brain-template/brain/ratelimit/redistest"
	"github.com/redis/rueidis"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func retryAfter(_ auth.Attempt, err error) time.Duration {
	var te *auth.ThrottledError
	if errors.As(err, &te) {
		return te.RetryAfter
	}
	return 0
}

// fail records a failed attempt: admitted, then its password checked wrong.
func fail(b auth.Backoff, username, ip string, at time.Time) error {
	a, err := b.Begin(context.Background(), username, ip, at)
	if err == nil {
		b.Fail(a)
	}
	return err
}

// eachBackoff runs test on each place the back-off keeps its counts, with
// the default throttle th: in memory (b is th), and in Redis, deciding at
// the time each call is given (with BRAIN_TEST_REDIS_URL; the outage
// policy closed, so a Redis error is no silent fallback).
func eachBackoff(t *testing.T, test func(t *testing.T, th *auth.LoginThrottle, b auth.Backoff)) {
	t.Run("memory", func(t *testing.T) {
		th := auth.NewLoginThrottle()
		test(t, th, th)
	})
	t.Run("redis", func(t *testing.T) {
		th := auth.NewLoginThrottle()
		test(t, th, redisBackoff(t, redistest.Client(t, redistest.Option(t)), redistest.Prefix(t), th, ratelimit.Closed))
	})
}

// redisBackoff is th's counts in Redis under prefix, deciding at the time
// each call is given.
func redisBackoff(t *testing.T, c rueidis.Client, prefix string, th *auth.LoginThrottle, mode ratelimit.OnStoreError) *auth.RedisBackoff {
	t.Helper()
	r := auth.NewRedisBackoff(c, prefix, th, mode, ratelimit.NewBreaker())
	r.UseNow = true
	r.Timeout = 5 * time.Second // a loaded machine's Redis calls are no outage
	return r
}

func TestLoginThrottleBackOff(t *testing.T) {
	eachBackoff(t, func(t *testing.T, th *auth.LoginThrottle, b auth.Backoff) {
		for i := range 5 {
			if _, err := b.Begin(t.Context(), "ada", "ip1", t0); err != nil {
				t.Fatalf("failure %d refused: %v", i+1, err)
			}
		}
		// The 6th attempt at once waits 1 s; then 2 s, 4 s... after each failure.
		steps := []struct {
			at   time.Duration
			wait time.Duration // 0: admitted
		}{
			{0, time.Second},
			{500 * time.Millisecond, 500 * time.Millisecond},
			{time.Second, 0}, // 6th failure at t0+1s
			{2 * time.Second, time.Second},
			{3 * time.Second, 0}, // 7th at t0+3s
			{6 * time.Second, time.Second},
			{7 * time.Second, 0}, // 8th at t0+7s: next wait 8 s
			{14 * time.Second, time.Second},
		}
		for i, st := range steps {
			got := retryAfter(b.Begin(t.Context(), "ada", "ip1", t0.Add(st.at)))
			if got != st.wait {
				t.Fatalf("step %d: at +%v retry-after = %v, want %v", i, st.at, got, st.wait)
			}
		}
		// Another username is not held back by ada's count.
		if _, err := b.Begin(t.Context(), "grace", "ip1", t0.Add(14*time.Second)); err != nil {
			t.Fatalf("another username refused: %v", err)
		}
		// A success resets the username.
		a, err := b.Begin(t.Context(), "ada", "ip1", t0.Add(15*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		b.Succeed(a)
		if _, err := b.Begin(t.Context(), "ada", "ip1", t0.Add(15*time.Second)); err != nil {
			t.Fatalf("after a success: %v", err)
		}
	})
}

func TestLoginThrottleCap(t *testing.T) {
	eachBackoff(t, func(t *testing.T, th *auth.LoginThrottle, b auth.Backoff) {
		now := t0
		for range 40 {
			if w := retryAfter(auth.Attempt{}, fail(b, "ada", "ip-"+now.String(), now)); w > 0 {
				if w > 15*time.Minute {
					t.Fatalf("wait %v exceeds the 15 min cap", w)
				}
				now = now.Add(w)
				if err := fail(b, "ada", "ip-"+now.String(), now); err != nil {
					t.Fatalf("refused after waiting: %v", err)
				}
			}
		}
		if w := retryAfter(b.Begin(t.Context(), "ada", "x", now)); w != 15*time.Minute {
			t.Fatalf("after 40 failures the wait is %v, want the 15 min cap", w)
		}
	})
}

func TestLoginThrottleIP(t *testing.T) {
	eachBackoff(t, func(t *testing.T, th *auth.LoginThrottle, b auth.Backoff) {
		for i := range 20 {
			if _, err := b.Begin(t.Context(), string(rune('a'+i)), "ip1", t0); err != nil {
				t.Fatalf("attempt %d from ip1 refused: %v", i+1, err)
			}
		}
		var te *auth.ThrottledError
		if _, err := b.Begin(t.Context(), "fresh", "ip1", t0); !errors.As(err, &te) || te.Key != "ip" || te.RetryAfter != time.Second {
			t.Fatalf("21st failure from one IP: %v, want an ip back-off of 1s", err)
		}
		if _, err := b.Begin(t.Context(), "fresh", "ip2", t0); err != nil {
			t.Fatalf("another IP refused: %v", err)
		}
		// 15 minutes without failures reset the IP.
		if _, err := b.Begin(t.Context(), "fresh2", "ip1", t0.Add(15*time.Minute)); err != nil {
			t.Fatalf("after 15 quiet minutes: %v", err)
		}
	})
}

// Successful logins from an IP do not hold off its reset: it counts from
// the last failure.
func TestLoginThrottleIPResetIgnoresSuccesses(t *testing.T) {
	eachBackoff(t, func(t *testing.T, th *auth.LoginThrottle, b auth.Backoff) {
		for i := range 21 {
			fail(b, string(rune('a'+i)), "ip1", t0)
		}
		for m := 10; m <= 40; m += 10 { // a success every 10 minutes
			now := t0.Add(time.Duration(m) * time.Minute)
			a, err := b.Begin(t.Context(), "ada", "ip1", now)
			if err != nil {
				t.Fatalf("+%dm: %v", m, err)
			}
			b.Succeed(a)
		}
		now := t0.Add(40 * time.Minute)
		for i := range 3 {
			if _, err := b.Begin(t.Context(), "x", "ip1", now); err != nil {
				t.Fatalf("attempt %d at +40m: %v: 40 minutes without a failure reset the IP", i+1, err)
			}
		}
	})
}

func TestLoginThrottleConcurrent(t *testing.T) {
	eachBackoff(t, func(t *testing.T, th *auth.LoginThrottle, b auth.Backoff) {
		var admitted atomic.Int32
		var wg sync.WaitGroup
		for range 64 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := b.Begin(t.Context(), "ada", "ip1", t0); err == nil {
					admitted.Add(1)
				}
			}()
		}
		wg.Wait()
		if admitted.Load() != 5 {
			t.Fatalf("%d concurrent guesses admitted, want exactly 5", admitted.Load())
		}
	})
}

// An abandoned attempt (its password never checked) leaves no trace: not in
// the counts, not in the times the back-off and the IP's reset run from.
func TestLoginThrottleAbandon(t *testing.T) {
	t.Run("never_backs_off", func(t *testing.T) {
		eachBackoff(t, func(t *testing.T, th *auth.LoginThrottle, b auth.Backoff) {
			for i := range 50 {
				a, err := b.Begin(t.Context(), "ada", "ip1", t0)
				if err != nil {
					t.Fatalf("abandoned attempt %d counted: %v", i+1, err)
				}
				b.Abandon(a)
			}
			for i := range 5 {
				if _, err := b.Begin(t.Context(), "ada", "ip1", t0); err != nil {
					t.Fatalf("failure %d refused: %v", i+1, err)
				}
			}
			if got := retryAfter(b.Begin(t.Context(), "ada", "ip1", t0)); got != time.Second {
				t.Fatalf("6th failure: retry-after %v, want the fresh 1s", got)
			}
		})
	})
	t.Run("restores_the_last_failure", func(t *testing.T) {
		eachBackoff(t, func(t *testing.T, th *auth.LoginThrottle, b auth.Backoff) {
			for range 5 {
				fail(b, "ada", "ip1", t0)
			}
			a, err := b.Begin(t.Context(), "ada", "ip1", t0.Add(time.Second)) // the back-off ran out
			if err != nil {
				t.Fatal(err)
			}
			b.Abandon(a)
			if _, err := b.Begin(t.Context(), "ada", "ip1", t0.Add(time.Second)); err != nil {
				t.Fatalf("after the abandoned attempt: %v; its time still counts as the last failure", err)
			}
		})
	})
	t.Run("restores_the_ip_reset", func(t *testing.T) {
		eachBackoff(t, func(t *testing.T, th *auth.LoginThrottle, b auth.Backoff) {
			for i := range 19 {
				fail(b, string(rune('a'+i)), "ip1", t0)
			}
			late, _ := b.Begin(t.Context(), "late", "ip1", t0.Add(10*time.Minute))
			later, _ := b.Begin(t.Context(), "later", "ip1", t0.Add(11*time.Minute))
			b.Abandon(late) // in the order they began, as an outage ends them
			b.Abandon(later)
			// 15 minutes after the last real failure the IP starts afresh.
			for i := range 20 {
				if _, err := b.Begin(t.Context(), string(rune('A'+i)), "ip1", t0.Add(15*time.Minute)); err != nil {
					t.Fatalf("attempt %d at +15m: %v; the abandoned attempt held off the IP's reset", i+1, err)
				}
			}
		})
	})
	t.Run("leaves_a_count_reset_since", func(t *testing.T) {
		eachBackoff(t, func(t *testing.T, th *auth.LoginThrottle, b auth.Backoff) {
			stale, _ := b.Begin(t.Context(), "ada", "ip1", t0)
			ok, _ := b.Begin(t.Context(), "ada", "ip2", t0)
			b.Succeed(ok) // resets ada's count; stale belonged to the old one
			for range 5 {
				b.Begin(t.Context(), "ada", "ip3", t0)
			}
			b.Abandon(stale)
			if got := retryAfter(b.Begin(t.Context(), "ada", "ip3", t0)); got != time.Second {
				t.Fatalf("6th failure since the reset: retry-after %v, want 1s; abandoning an attempt from before the reset took one off", got)
			}
		})
	})
}
