package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/api/apitest"
	"github.com/brain-template/brain/internal/testclock"
	"github.com/brain-template/brain/ratelimit"
	"github.com/danielgtaylor/huma/v2"
)

// The login back-off is decided before the ip budget: a client retrying
// a held-back username gets 429 scope login and takes no token from its
// address, so others behind the same address keep their budget.
func TestLoginBackoffTakesNoIPToken(t *testing.T) {
	l, _, clk, _ := limitedHTTPServer(t, ratelimit.Rate{Limit: 10, Window: time.Minute, Burst: 10})
	for i := range 5 { // five failures for ada: the back-off starts
		if r := l.Login("ada", "wrong password!"); r.Status != 401 || r.Header.Get("RateLimit") == "" {
			t.Fatalf("failure %d: %d, RateLimit %q", i+1, r.Status, r.Header.Get("RateLimit"))
		}
	}
	for range 30 { // three times the ip budget
		r := l.Login("ada", "correct horse battery")
		// One refusal for every plane: a back-off has no window, and
		// says its wait once.
		if env := r.Refusal(t); r.Status != 429 || env.Details.Scope != "login" || env.Details.WindowS != 0 || env.Details.RetryAfterS != 1 || len(r.Header.Values("Retry-After")) != 1 || r.Header.Get("Retry-After") != "1" {
			t.Fatalf("held back: %d %+v Retry-After %q; want 429 scope login, 1 s", r.Status, env, r.Header.Get("Retry-After"))
		}
		if r.Header.Get("RateLimit") != "" {
			t.Fatalf("a back-off refusal shows a budget it did not charge: %q", r.Header.Get("RateLimit"))
		}
	}
	// The address spent 5 of its 10 tokens, not 35: grace logs in, and
	// the answer shows 4 left.
	if r := l.Login("grace", "no such user, wrong"); r.Status != 401 || !strings.Contains(r.Header.Get("RateLimit"), `"ip";r=4;`) {
		t.Fatalf("after the refusals: %d RateLimit %q, want 401 with 4 ip tokens left", r.Status, r.Header.Get("RateLimit"))
	}
	clk.Advance(time.Second) // the back-off is over; the right password works
	if r := l.Login("ada", "correct horse battery"); r.Status != 200 || !strings.Contains(r.Header.Get("RateLimit"), `"ip";r=3;`) {
		t.Fatalf("after the back-off: %d RateLimit %q", r.Status, r.Header.Get("RateLimit"))
	}
}

// A login the ip plane refuses is not counted by the back-off either: a
// refused request consumes from no budget.
func TestLoginRefusedByIPIsNoFailure(t *testing.T) {
	l, _, _, _ := limitedHTTPServer(t, ratelimit.Rate{Limit: 1, Window: time.Hour, Burst: 1})
	l.Login("ada", "wrong password!").Want(t, 401, "first")
	for range 10 {
		if r := l.Login("ada", "wrong password!"); r.Status != 429 || r.Refusal(t).Details.Scope != "ip" {
			t.Fatalf("past the ip budget: %d %s, want 429 scope ip", r.Status, r.Body)
		}
	}
	// Had the ten refused attempts counted, ada's eleven failures would
	// hold her back; from another address the right password works.
	l.Login("ada", "correct horse battery", "X-Forwarded-For: 198.51.100.7").Want(t, 200, "the right password from another address")
}

// Changing the password runs the same back-off, decided before the
// session budget: its refusal takes no session token, and the spec says
// so.
func TestPasswordChangeBackoffTakesNoSessionToken(t *testing.T) {
	l, _, _, _ := limitedHTTPServer(t, ratelimit.Rate{Limit: 10, Window: time.Minute, Burst: 10})
	cookie := l.Login("ada", "correct horse battery").Want(t, 200, "login").Cookie(t)
	wrong := map[string]string{"current": "not my password", "new": "a brand new password"}
	for i := range 5 {
		l.Call("POST", "/api/v1/auth/password", wrong, cookie).Want(t, 403, fmt.Sprintf("wrong current password %d", i+1))
	}
	left := l.Call("GET", "/api/v1/auth/me", nil, cookie).Want(t, 200, "me").Header.Get("RateLimit")
	for range 20 {
		r := l.Call("POST", "/api/v1/auth/password", wrong, cookie)
		if r.Status != 429 || r.Refusal(t).Details.Scope != "login" || r.Header.Get("RateLimit") != "" {
			t.Fatalf("held back: %d %s RateLimit %q; want 429 scope login, no budget charged", r.Status, r.Body, r.Header.Get("RateLimit"))
		}
	}
	// me took one token before and one now: 20 refusals took none.
	now := l.Call("GET", "/api/v1/auth/me", nil, cookie).Want(t, 200, "me").Header.Get("RateLimit")
	if !strings.Contains(left, `r=94;`) || !strings.Contains(now, `r=93;`) {
		t.Fatalf("session budget before the refusals %q, after %q: want 94 then 93 left", left, now)
	}
}

// Every operation that checks a password shows the back-off in its
// x-rate-limit and declares the 429 that may come without budget headers.
func TestSpecShowsLoginBackoff(t *testing.T) {
	s, _ := mustRawServer(t, api.Config{})
	for _, path := range []string{"/api/v1/auth/login", "/api/v1/auth/password"} {
		op := s.API.OpenAPI().Paths[path].Post
		if r := op.Responses["429"]; r == nil || r.Ref != "#/components/responses/RateLimitedOrBackedOff" {
			t.Errorf("%s: 429 = %+v, want RateLimitedOrBackedOff", path, r)
		}
		entries, _ := op.Extensions["x-rate-limit"].([]api.RateLimitEntry)
		found := false
		for _, e := range entries {
			found = found || (e.Plane == "login" && e.Failures == 5 && e.IPFailures == 20)
		}
		if !found {
			t.Errorf("%s: x-rate-limit %+v shows no login back-off", path, entries)
		}
	}
}

// In an operation that charges from its handler, a refusal stands even
// when the handler ignores what ChargeNow returned, and a response that
// starts with its body is charged like one that starts with its status.
func TestDeferredChargeRefusalStands(t *testing.T) {
	clk := testclock.New(t0)
	l := small(clk) // the session budget is 3
	svc := MustAuth(t)
	s, _ := mustRawServer(t, api.Config{Auth: svc, Limits: l, Now: clk.Now})
	huma.Register(s.API, api.WithLoginBackoff(huma.Operation{OperationID: "test-careless", Method: http.MethodGet, Path: "/api/v1/test/careless"}),
		func(ctx context.Context, _ *struct{}) (*echoOutput, error) {
			_ = api.ChargeNow(ctx) // a careless handler: the refusal is dropped
			out := &echoOutput{}
			out.Body.Text = "served"
			return out, nil
		})
	cookie := apitest.Serve(t, s).Login("ada", "correct horse battery").Want(t, 200, "login").Cookie(t)
	live := apitest.Serve(t, s)
	for i := range 3 {
		live.Call("GET", "/api/v1/test/careless", nil, cookie).Want(t, 200, fmt.Sprintf("request %d of the burst", i+1))
	}
	r := live.Call("GET", "/api/v1/test/careless", nil, cookie)
	if r.Status != 429 || strings.Contains(r.Body, "served") || r.Refusal(t).Details.Scope != "session" {
		t.Fatalf("past the budget: %d %s; want the 429 envelope, not the handler's answer", r.Status, r.Body)
	}
}

// The login entry in x-rate-limit is the back-off the server runs: tuned,
// the spec shows the new numbers and the server enforces them.
func TestSpecLoginEntryIsTheRunningThrottle(t *testing.T) {
	svc := MustAuth(t)
	svc.Throttle.UserFailures, svc.Throttle.BaseDelay = 2, 3*time.Second
	s, _ := mustRawServer(t, api.Config{Auth: svc})
	entries, _ := s.API.OpenAPI().Paths["/api/v1/auth/login"].Post.Extensions["x-rate-limit"].([]api.RateLimitEntry)
	var login *api.RateLimitEntry
	for i, e := range entries {
		if e.Plane == "login" {
			login = &entries[i]
		}
	}
	if login == nil || login.Failures != 2 || login.BackoffS[0] != 3 || login.BackoffS[1] != 900 {
		t.Fatalf("login entry %+v, want failures 2 and backoff_s [3 900] from the running throttle", login)
	}
	l := apitest.Serve(t, s)
	for range 2 {
		l.Login("ada", "wrong password!").Want(t, 401, "a failure")
	}
	if r := l.Login("ada", "wrong password!"); r.Status != 429 || r.Header.Get("Retry-After") != "3" {
		t.Fatalf("after 2 failures: %d Retry-After %q, want 429 and 3 s", r.Status, r.Header.Get("Retry-After"))
	}
}
