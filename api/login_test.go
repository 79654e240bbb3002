package api_test

import (
	"strings"
	"testing"
	"time"

	"github.com/brain-template/brain/ratelimit"
)

// The login back-off is decided before the ip budget: a client retrying
// a held-back username gets 429 scope login and takes no token from its
// address, so others behind the same address keep their budget.
func TestLoginBackoffTakesNoIPToken(t *testing.T) {
	l, _, clk, _ := limitedHTTPServer(t, ratelimit.Budget{Limit: 10, Window: time.Minute, Burst: 10})
	for i := range 5 { // five failures for ada: the back-off starts
		if r := l.login("ada", "wrong password!"); r.status != 401 || r.header.Get("RateLimit") == "" {
			t.Fatalf("failure %d: %d, RateLimit %q", i+1, r.status, r.header.Get("RateLimit"))
		}
	}
	for range 30 { // three times the ip budget
		r := l.login("ada", "correct horse battery")
		if env := r.env429(t); r.status != 429 || env.Details.Scope != "login" || r.header.Get("Retry-After") != "1" {
			t.Fatalf("held back: %d %+v Retry-After %q; want 429 scope login, 1 s", r.status, env, r.header.Get("Retry-After"))
		}
		if r.header.Get("RateLimit") != "" {
			t.Fatalf("a back-off refusal shows a budget it did not charge: %q", r.header.Get("RateLimit"))
		}
	}
	// The address spent 5 of its 10 tokens, not 35: grace logs in, and
	// the answer shows 4 left.
	if r := l.login("grace", "no such user, wrong"); r.status != 401 || !strings.Contains(r.header.Get("RateLimit"), `"ip";r=4;`) {
		t.Fatalf("after the refusals: %d RateLimit %q, want 401 with 4 ip tokens left", r.status, r.header.Get("RateLimit"))
	}
	clk.Advance(time.Second) // the back-off is over; the right password works
	if r := l.login("ada", "correct horse battery"); r.status != 200 || !strings.Contains(r.header.Get("RateLimit"), `"ip";r=3;`) {
		t.Fatalf("after the back-off: %d RateLimit %q", r.status, r.header.Get("RateLimit"))
	}
}

// A login the ip plane refuses is not counted by the back-off either: a
// refused request consumes from no budget.
func TestLoginRefusedByIPIsNoFailure(t *testing.T) {
	l, _, _, _ := limitedHTTPServer(t, ratelimit.Budget{Limit: 1, Window: time.Hour, Burst: 1})
	l.login("ada", "wrong password!").want(t, 401, "first")
	for range 10 {
		if r := l.login("ada", "wrong password!"); r.status != 429 || r.env429(t).Details.Scope != "ip" {
			t.Fatalf("past the ip budget: %d %s, want 429 scope ip", r.status, r.body)
		}
	}
	// Had the ten refused attempts counted, ada's eleven failures would
	// hold her back; from another address the right password works.
	l.login("ada", "correct horse battery", "X-Forwarded-For: 198.51.100.7").want(t, 200, "the right password from another address")
}
