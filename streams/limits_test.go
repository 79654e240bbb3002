// Tests of the stream plane's limits together, on a clock the test moves:
// the open budget, the caller's cap and the user's, and what each refusal
// takes (nothing).

package streams_test

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/api/apitest"
	"github.com/brain-template/brain/internal/testclock"
	"github.com/brain-template/brain/ratelimit"
	"github.com/brain-template/brain/streams"
)

// clockedStore makes in-memory limiters on clk, so a test moves time
// instead of sleeping.
func clockedStore(clk *testclock.Clock) func(ratelimit.Budget) ratelimit.Limiter {
	return func(p ratelimit.Budget) ratelimit.Limiter {
		m := ratelimit.NewMemory(p, ratelimit.MemoryOptions{})
		m.Now = clk.Now
		return m
	}
}

// refusedBy checks that r is the stream plane's 429 refused by policy,
// of limit and window, with retry as its Retry-After: JSON, never a
// stream.
func refusedBy(tb testing.TB, r apitest.Reply, policy string, limit, window, retry int) {
	tb.Helper()
	var env apitest.Refusal
	if err := json.Unmarshal([]byte(r.Body), &env); err != nil || r.Status != 429 || env.Code != "rate-limited" {
		tb.Fatalf("%d %s, want 429 rate-limited", r.Status, r.Body)
	}
	d := env.Details
	if d.Scope != "stream" || d.Policy != policy || d.Limit != limit || d.WindowS != window || d.RetryAfterS != retry ||
		r.Header.Get("Retry-After") != strconv.Itoa(retry) || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		tb.Fatalf("refused with %s, Retry-After %q, Content-Type %q; want scope stream, policy %s, limit %d, window_s %d, retry %d s",
			r.Body, r.Header.Get("Retry-After"), r.Header.Get("Content-Type"), policy, limit, window, retry)
	}
}

// The open budget: a caller opens its burst of 20 streams at one instant,
// and the 21st is refused (scope stream, policy stream-opens) with the
// true wait until the budget admits an open. The refusal took neither of
// the caller's slots nor its user's; once the wait has passed, one open
// is admitted again.
func TestStreamOpenBudget(t *testing.T) {
	for _, tc := range []struct {
		name    string
		budget  ratelimit.Rate
		retry   int           // after the 21st
		advance time.Duration // then the clock moves this much
		later   int           // and the wait is this
	}{
		{"default", api.DefaultLimits().StreamOpens, 1, 400 * time.Millisecond, 1},
		{"6/min,burst=20", ratelimit.Rate{Limit: 6, Window: time.Minute, Burst: 20}, 10, 3500 * time.Millisecond, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := testclock.New(t0)
			s := apitest.Start(t, api.Config{Now: clk.Now, Limits: api.Limits{StreamOpens: tc.budget, Store: clockedStore(clk)}},
				apitest.Streams(streams.Config{Cap: streams.NewMemoryCap(32)}))
			ada := s.Session()
			for i := range 20 {
				st, r := s.OpenStream("/api/v1/events", ada)
				if st == nil {
					t.Fatalf("open %d of the burst: %d %s", i+1, r.Status, r.Body)
				}
				if want := `"stream-opens";r=` + strconv.Itoa(19-i) + ";"; !strings.Contains(r.Header.Get("RateLimit"), want) {
					t.Fatalf("open %d: RateLimit %q, want %s", i+1, r.Header.Get("RateLimit"), want)
				}
			}
			_, r := s.OpenStream("/api/v1/events", ada)
			refusedBy(t, r, "stream-opens", tc.budget.Limit, 60, tc.retry)
			if got, want := r.Header.Get("RateLimit"), `"streams";r=12, "streams-per-user";r=44, "stream-opens";r=0;t=`; !strings.HasPrefix(got, want) {
				t.Fatalf("the refusal's RateLimit %q, want %s...: its slots given back", got, want)
			}
			clk.Advance(tc.advance)
			_, r = s.OpenStream("/api/v1/system/live", ada) // every stream endpoint draws from it
			refusedBy(t, r, "stream-opens", tc.budget.Limit, 60, tc.later)

			clk.Advance(time.Duration(tc.later) * time.Second)
			st, r := s.OpenStream("/api/v1/events", ada)
			if st == nil {
				t.Fatalf("once the wait has passed: %d %s", r.Status, r.Body)
			}
			// 21 streams: the refused opens took no slot.
			if got, want := r.Header.Get("RateLimit"), `"streams";r=11, "streams-per-user";r=43, "stream-opens";r=0;`; !strings.HasPrefix(got, want) {
				t.Fatalf("RateLimit %q, want %s...", got, want)
			}
		})
	}
}

// The per-user open budget counts the opens of all of a user's sessions
// and API keys: over 5 keys, each with opens of its own to spare, the
// user's 31st open is refused (policy stream-opens-per-user, the true
// wait), and the refusal takes nothing: neither the key's open, which
// its budget shows back, nor a slot. Once the wait has passed, an open is
// admitted again, and the key's budget shows the refused open never
// counted.
func TestStreamUserOpenBudget(t *testing.T) {
	clk := testclock.New(t0)
	s := apitest.Start(t, api.Config{Now: clk.Now, Limits: api.Limits{StreamOpens: api.DefaultLimits().StreamOpens,
		StreamUserOpens: ratelimit.Rate{Limit: 120, Window: time.Minute, Burst: 30}, Store: clockedStore(clk)}})
	var keys []string
	for range 5 {
		keys = append(keys, s.Key())
	}
	for i := range 30 {
		if st, r := s.OpenStream("/api/v1/events", keys[i%5]); st == nil {
			t.Fatalf("open %d: %d %s", i+1, r.Status, r.Body)
		}
	}
	_, r := s.OpenStream("/api/v1/events", keys[0])
	refusedBy(t, r, "stream-opens-per-user", 120, 60, 1)
	// 6 streams of the key's 16 and 30 of the user's 64; 6 opens of the
	// key's 20 (a second each to come back), 30 of the user's (half one).
	if got, want := r.Header.Get("RateLimit"), `"streams";r=10, "streams-per-user";r=34, "stream-opens";r=14;t=6, "stream-opens-per-user";r=0;t=15`; got != want {
		t.Fatalf("the refusal's RateLimit %q, want %q: its slots and the key's open given back", got, want)
	}
	if r.Header.Get("X-RateLimit-Limit") != "120" || r.Header.Get("X-RateLimit-Remaining") != "0" {
		t.Fatalf("the refusal's X-RateLimit-Limit %q, Remaining %q: want the refusing budget's", r.Header.Get("X-RateLimit-Limit"), r.Header.Get("X-RateLimit-Remaining"))
	}
	clk.Advance(time.Second) // the user's budget: 2 opens; the key's: 1
	st, r := s.OpenStream("/api/v1/events", keys[0])
	if st == nil {
		t.Fatalf("once the wait has passed: %d %s", r.Status, r.Body)
	}
	if got, want := r.Header.Get("RateLimit"), `"streams";r=9, "streams-per-user";r=33, "stream-opens";r=14;t=6, "stream-opens-per-user";r=1;t=15`; got != want {
		t.Fatalf("RateLimit %q, want %q: the refused open took none of the key's", got, want)
	}
}

// A stream the caller's cap refuses takes no token of its open budget.
func TestStreamCapRefusalTakesNoOpen(t *testing.T) {
	clk := testclock.New(t0)
	s := apitest.Start(t, api.Config{Now: clk.Now, Limits: api.Limits{StreamOpens: api.DefaultLimits().StreamOpens, Store: clockedStore(clk)}},
		apitest.Streams(streams.Config{Cap: streams.NewMemoryCap(2)}))
	ada := s.Session()
	first, _ := s.OpenStream("/api/v1/events", ada)
	s.OpenStream("/api/v1/events", ada)
	for range 10 {
		_, r := s.OpenStream("/api/v1/events", ada)
		refusedBy(t, r, "streams", 2, 0, 5)
		if got := r.Header.Get("RateLimit"); got != `"streams";r=0` {
			t.Fatalf("the cap's refusal: RateLimit %q, want only the cap that refused", got)
		}
	}
	first.Close()
	var r apitest.Reply
	apitest.Eventually(t, 2*time.Second, "a closed stream frees its slot", func() bool {
		var st *apitest.Stream
		st, r = s.OpenStream("/api/v1/events", ada)
		return st != nil
	})
	// The clock stood still: 3 opens admitted, of a burst of 20.
	if got := r.Header.Get("RateLimit"); !strings.Contains(got, `"stream-opens";r=17;`) {
		t.Fatalf("after 10 refusals by the cap, RateLimit %q; want 17 opens left: the refusals took none", got)
	}
}

// A malformed Last-Event-ID is refused (422) once the stream is
// admitted, as any operation's parameters are checked after its rate
// limits: the 422 carries the plane's headers, which the spec requires on
// it (it had none), and takes an open, as any 422 takes a token; its
// slots are given back, so the caller's 16 streams all open after 3 of
// them.
func TestBadLastEventIDIsRefusedOnceAdmitted(t *testing.T) {
	clk := testclock.New(t0)
	s := apitest.Start(t, api.Config{Now: clk.Now, Limits: api.Limits{StreamOpens: api.DefaultLimits().StreamOpens, Store: clockedStore(clk)}})
	ada := s.Session()
	for i := range 3 {
		_, r := s.OpenStream("/api/v1/events", ada, "Last-Event-ID: nonsense")
		// Its slots are back: the headers say so.
		if want := fmt.Sprintf(`"streams";r=%d, "streams-per-user";r=%d, "stream-opens";r=%d;`, streams.DefaultCap, streams.DefaultUserCap, 19-i); r.Status != 422 || !strings.HasPrefix(r.Header.Get("RateLimit"), want) || r.Header.Get("RateLimit-Policy") == "" || r.Header.Get("X-RateLimit-Remaining") == "" {
			t.Fatalf("a malformed Last-Event-ID: %d RateLimit %q %s; want 422 with the plane's headers, %s", r.Status, r.Header.Get("RateLimit"), r.Body, want)
		}
	}
	for i := range streams.DefaultCap {
		if st, r := s.OpenStream("/api/v1/events", ada); st == nil {
			t.Fatalf("stream %d after 3 malformed ids: %d %s; want their slots given back", i+1, r.Status, r.Body)
		}
	}
}

// The per-user cap counts every stream of a user, whichever of its
// sessions or keys opened it: across 5 keys the 65th stream is refused
// (policy streams-per-user), and gives back the key's slot and takes no
// open; when any of the user's streams closes, the place is free again.
func TestStreamUserCap(t *testing.T) {
	clk := testclock.New(t0)
	s := apitest.Start(t, api.Config{Now: clk.Now, Limits: api.Limits{StreamOpens: api.DefaultLimits().StreamOpens, Store: clockedStore(clk)}})
	var keys []string
	for range 5 {
		keys = append(keys, s.Key())
	}
	var first *apitest.Stream
	for k, key := range keys {
		for i := range 13 {
			st, r := s.OpenStream("/api/v1/events", key)
			if k == 4 && i == 12 { // the 65th
				refusedBy(t, r, "streams-per-user", streams.DefaultUserCap, 0, 5)
				if got, want := r.Header.Get("RateLimit"), `"streams";r=4, "streams-per-user";r=0`; got != want {
					t.Fatalf("the 65th: RateLimit %q, want %q", got, want)
				}
				continue
			}
			if st == nil {
				t.Fatalf("key %d, stream %d: %d %s", k+1, i+1, r.Status, r.Body)
			}
			if first == nil {
				first = st
			}
		}
	}
	first.Close() // the first key's
	var r apitest.Reply
	apitest.Eventually(t, 2*time.Second, "a stream of another key frees the user's place", func() bool {
		var st *apitest.Stream
		st, r = s.OpenStream("/api/v1/system/live", keys[4])
		return st != nil
	})
	if got, want := r.Header.Get("RateLimit"), `"streams";r=3, "streams-per-user";r=0, "stream-opens";r=7;`; !strings.HasPrefix(got, want) {
		t.Fatalf("the fifth key's 13th stream: RateLimit %q, want %s...", got, want)
	}
}
