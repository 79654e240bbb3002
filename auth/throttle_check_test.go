package auth_test

import (
	"testing"
	"time"

	"github.com/brain-template/brain/auth"
)

// Check answers what Begin would, for the username and the IP count, and
// counts nothing however often it is asked.
func TestLoginThrottleCheck(t *testing.T) {
	eachBackoff(t, func(t *testing.T, th *auth.LoginThrottle, b auth.Backoff) {
		for range 5 {
			if err := b.Check(t.Context(), "ada", "ip1", t0); err != nil {
				t.Fatalf("Check before the threshold: %v", err)
			}
			if _, err := b.Begin(t.Context(), "ada", "ip1", t0); err != nil {
				t.Fatal(err)
			}
		}
		for range 100 { // asking does not count
			if got := retryAfter(auth.Attempt{}, b.Check(t.Context(), "ada", "ip1", t0)); got != time.Second {
				t.Fatalf("Check after 5 failures: retry after %v, want 1s", got)
			}
		}
		if got := retryAfter(b.Begin(t.Context(), "ada", "ip1", t0)); got != time.Second {
			t.Fatalf("Begin after 100 Checks: retry after %v, want 1s (Check counted failures)", got)
		}
		if err := b.Check(t.Context(), "ada", "ip1", t0.Add(time.Second)); err != nil {
			t.Fatalf("Check once the wait is over: %v", err)
		}
		if err := b.Check(t.Context(), "grace", "ip1", t0); err != nil {
			t.Fatalf("another username: %v", err)
		}
		// The IP count: 20 failures from one address over many usernames.
		for i := range 15 {
			if _, err := b.Begin(t.Context(), string(rune('a'+i))+"x", "ip1", t0.Add(time.Second)); err != nil {
				t.Fatal(err)
			}
		}
		if err := b.Check(t.Context(), "grace", "ip1", t0.Add(time.Second)); err == nil {
			t.Fatal("Check ignored the IP count")
		}
		if err := b.Check(t.Context(), "grace", "ip1", t0.Add(time.Second+th.IPReset)); err != nil {
			t.Fatalf("Check after the IP reset: %v", err)
		}
	})
}
