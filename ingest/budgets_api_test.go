package ingest_test

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/api/apitest"
	"github.com/brain-template/brain/ingest"
	"github.com/brain-template/brain/ratelimit"
	"github.com/brain-template/brain/streams"
)

// budgetServer serves the whole API over real HTTP with the budgets it
// ships with (api.DefaultLimits and the memory operations' defaults), on
// one fake clock for the limiter and the ingest service; it returns ada's
// session cookie (as a header) and two API keys of hers.
func budgetServer(t *testing.T) (l *live, clk *fakeClock, cookie string, keys [2]string) {
	t.Helper()
	clk = apitest.NewClock(t0)
	db := apitest.OpenDB(t)
	svc := apitest.NewAuth(t, db)
	hub := streams.NewMemoryHub(64, 64)
	memory := ingest.NewService(ingest.NewSQLStore(db, nil), ingest.Config{Now: clk.Now, Publish: ingest.Publisher(hub)})
	limits := api.DefaultLimits()
	limits.Store = func(p ratelimit.Budget) ratelimit.Limiter {
		m := ratelimit.NewMemory(p, ratelimit.MemoryOptions{})
		m.Now = clk.Now
		return m
	}
	l = apitest.Start(t, api.Config{Auth: svc, Features: []api.Feature{ingest.Feature(memory)}, Limits: limits, Now: clk.Now}, apitest.Streams(streams.Config{Hub: hub}))
	c, k0 := loginAndKey(t, svc)
	_, k1 := loginAndKey(t, svc)
	return l, clk, "Cookie: " + c, [2]string{"X-API-Key: " + k0, "X-API-Key: " + k1}
}

// note is a batch of one item of its own, so that no two are replays.
func note(i int) map[string]any {
	return map[string]any{"project": "p", "items": []map[string]string{{"text": fmt.Sprintf("note %d", i)}}}
}

// wantRefused fails the test unless r is the 429 envelope of policy, with
// a Retry-After of at least one second that its details repeat; it
// returns the Retry-After.
func wantRefused(t *testing.T, r reply, policy, what string) time.Duration {
	t.Helper()
	env := r.Refusal(t)
	after, err := strconv.Atoi(r.Header.Get("Retry-After"))
	if r.Status != http.StatusTooManyRequests || env.Details.Policy != policy || err != nil || after < 1 || env.Details.RetryAfterS != after {
		t.Fatalf("%s: %d Retry-After=%q %s; want 429 of policy %s", what, r.Status, r.Header.Get("Retry-After"), r.Body, policy)
	}
	return time.Duration(after) * time.Second
}

// An API key's eleventh query within one second is refused by the query
// budget's 10/s (its policy query-burst), and its Retry-After is honest:
// a query that waits that long is answered.
func TestEleventhQueryInASecond(t *testing.T) {
	l, clk, _, keys := budgetServer(t)
	for i := range 10 {
		l.Call("GET", "/api/v1/memory/query?q=note", nil, keys[0]).Want(t, 200, fmt.Sprintf("query %d", i+1))
	}
	after := wantRefused(t, l.Call("GET", "/api/v1/memory/query?q=note", nil, keys[0]), "query-burst", "the 11th query in a second")
	clk.Advance(after)
	l.Call("GET", "/api/v1/memory/query?q=note", nil, keys[0]).Want(t, 200, "a query after Retry-After")
}

// An API key ingests 100 batches within an hour (ten a second, as fast
// as the per-second part allows); the 101st is refused by the hourly
// part, admitted once its Retry-After has passed, and after an hour the
// key may ingest 100 again. The key's query budget is its own: queries
// are answered while ingest is refused.
func TestHundredIngestsAnHour(t *testing.T) {
	l, clk, _, keys := budgetServer(t)
	n := 0
	ingestN := func(count int, what string) {
		t.Helper()
		for range count {
			n++
			l.Call("POST", "/api/v1/memory/ingest", note(n), keys[0]).Want(t, 202, fmt.Sprintf("%s: ingest %d", what, n))
			clk.Advance(100 * time.Millisecond)
		}
	}
	ingestN(100, "the first hour")
	after := wantRefused(t, l.Call("POST", "/api/v1/memory/ingest", note(n+1), keys[0]), "ingest", "the 101st ingest in an hour")
	if after < 20*time.Second || after > 36*time.Second {
		t.Fatalf("Retry-After %v, want the time to refill one token of 100/h less the ten seconds passed", after)
	}
	l.Call("GET", "/api/v1/memory/query?q=note", nil, keys[0]).Want(t, 200, "a query of the key whose ingest budget is spent")
	l.Call("POST", "/api/v1/memory/ingest", note(n+1), keys[1]).Want(t, 202, "an ingest of another key")

	clk.Advance(after)
	ingestN(1, "after Retry-After")
	wantRefused(t, l.Call("POST", "/api/v1/memory/ingest", note(n+1), keys[0]), "ingest", "a second ingest after Retry-After")
	clk.Advance(time.Hour)
	ingestN(100, "an hour later")
}

// Two API keys of one user, two sessions: each has a budget of its own.
// One key spending its query budget leaves the other's whole, and one
// session spending the session plane's burst leaves another session's.
func TestCallersAreIsolated(t *testing.T) {
	l, _, cookie, keys := budgetServer(t)
	for range 10 {
		l.Call("GET", "/api/v1/memory/query?q=note", nil, keys[0]).Want(t, 200, "key 1's query")
	}
	wantRefused(t, l.Call("GET", "/api/v1/memory/query?q=note", nil, keys[0]), "query-burst", "key 1's 11th query")
	for i := range 10 {
		l.Call("GET", "/api/v1/memory/query?q=note", nil, keys[1]).Want(t, 200, fmt.Sprintf("key 2's query %d", i+1))
	}

	burst := api.DefaultLimits().Session.Burst
	for i := range burst {
		l.Call("GET", "/api/v1/memory/skills", nil, cookie).Want(t, 200, fmt.Sprintf("session 1's request %d", i+1))
	}
	r := l.Call("GET", "/api/v1/memory/skills", nil, cookie)
	if env := r.Refusal(t); r.Status != 429 || env.Details.Scope != "session" {
		t.Fatalf("session 1's request %d: %d %s, want 429 of the session plane", burst+1, r.Status, r.Body)
	}
	other := l.Login("ada", "correct horse battery").Cookie(t)
	l.Call("GET", "/api/v1/memory/skills", nil, other).Want(t, 200, "another session's request")
}

// An ingest_id names its batch for 24 hours: within them the same
// id answers its job (replayed), and after 25 hours it makes a new job.
func TestIngestIDAfter25Hours(t *testing.T) {
	l, clk, _, keys := budgetServer(t)
	body := map[string]any{"ingest_id": strings.Repeat("5e", 32), "project": "p", "items": []map[string]string{{"text": "x"}}}
	var first, again, later accepted
	l.Call("POST", "/api/v1/memory/ingest", body, keys[0]).Want(t, 202, "first").Decode(t, &first)
	clk.Advance(23 * time.Hour)
	l.Call("POST", "/api/v1/memory/ingest", body, keys[0]).Want(t, 202, "after 23 h").Decode(t, &again)
	if !again.Replayed || again.JobID != first.JobID {
		t.Fatalf("after 23 h: %+v, want the first job %s, replayed", again, first.JobID)
	}
	clk.Advance(2 * time.Hour)
	l.Call("POST", "/api/v1/memory/ingest", body, keys[0]).Want(t, 202, "after 25 h").Decode(t, &later)
	if later.Replayed || later.JobID == first.JobID || later.IngestID != first.IngestID {
		t.Fatalf("after 25 h: %+v, want a new job for ingest_id %s", later, first.IngestID)
	}
}
