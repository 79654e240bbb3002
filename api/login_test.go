package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/brain-template/brain/ratelimit"
)

func login(t *testing.T, base, username, password string, xff ...string) (*http.Response, envelope429) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"username": username, "password": password})
	req, _ := http.NewRequest("POST", base+"/api/v1/auth/login", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	for _, a := range xff {
		req.Header.Set("X-Forwarded-For", a)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var env envelope429
	_ = json.NewDecoder(res.Body).Decode(&env)
	return res, env
}

// The login back-off is decided before the ip budget: a client retrying
// a held-back username gets 429 scope login and takes no token from its
// address, so others behind the same address keep their budget.
func TestLoginBackoffTakesNoIPToken(t *testing.T) {
	base, _, clk, _ := limitedHTTPServer(t, ratelimit.Budget{Limit: 10, Window: time.Minute, Burst: 10})
	for i := range 5 { // five failures for ada: the back-off starts
		if res, _ := login(t, base, "ada", "wrong password!"); res.StatusCode != 401 || res.Header.Get("RateLimit") == "" {
			t.Fatalf("failure %d: %d, RateLimit %q", i+1, res.StatusCode, res.Header.Get("RateLimit"))
		}
	}
	for range 30 { // three times the ip budget
		res, env := login(t, base, "ada", "correct horse battery")
		if res.StatusCode != 429 || env.Details.Scope != "login" || res.Header.Get("Retry-After") != "1" {
			t.Fatalf("held back: %d %+v Retry-After %q; want 429 scope login, 1 s", res.StatusCode, env, res.Header.Get("Retry-After"))
		}
		if res.Header.Get("RateLimit") != "" {
			t.Fatalf("a back-off refusal shows a budget it did not charge: %q", res.Header.Get("RateLimit"))
		}
	}
	// The address spent 5 of its 10 tokens, not 35: grace logs in, and
	// the answer shows 4 left.
	res, _ := login(t, base, "grace", "no such user, wrong")
	if res.StatusCode != 401 || !strings.Contains(res.Header.Get("RateLimit"), `"ip";r=4;`) {
		t.Fatalf("after the refusals: %d RateLimit %q, want 401 with 4 ip tokens left", res.StatusCode, res.Header.Get("RateLimit"))
	}
	clk.Advance(time.Second) // the back-off is over; the right password works
	if res, _ := login(t, base, "ada", "correct horse battery"); res.StatusCode != 200 || !strings.Contains(res.Header.Get("RateLimit"), `"ip";r=3;`) {
		t.Fatalf("after the back-off: %d RateLimit %q", res.StatusCode, res.Header.Get("RateLimit"))
	}
}

// A login the ip plane refuses is not counted by the back-off either: a
// refused request consumes from no budget.
func TestLoginRefusedByIPIsNoFailure(t *testing.T) {
	base, _, _, _ := limitedHTTPServer(t, ratelimit.Budget{Limit: 1, Window: time.Hour, Burst: 1})
	if res, _ := login(t, base, "ada", "wrong password!"); res.StatusCode != 401 {
		t.Fatalf("first: %d", res.StatusCode)
	}
	for range 10 {
		if res, env := login(t, base, "ada", "wrong password!"); res.StatusCode != 429 || env.Details.Scope != "ip" {
			t.Fatalf("past the ip budget: %d %+v, want 429 scope ip", res.StatusCode, env)
		}
	}
	// Had the ten refused attempts counted, ada's eleven failures would
	// hold her back; from another address the right password works.
	if res, env := login(t, base, "ada", "correct horse battery", "198.51.100.7"); res.StatusCode != 200 {
		t.Fatalf("the right password from another address: %d %+v, want 200", res.StatusCode, env)
	}
}
