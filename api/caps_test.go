package api_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/api/apitest"
	"github.com/brain-template/brain/auth"
	"github.com/brain-template/brain/internal/testclock"
	"github.com/brain-template/brain/ratelimit"
	"github.com/brain-template/brain/store"
	"github.com/brain-template/brain/store/storetest"
)

// liveServer serves the whole API over real HTTP, on db, with the user ada
// ("correct horse battery"). The session budget is raised so that tests
// firing many requests from one session measure the caps, not the limiter.
func liveServer(tb testing.TB, db *store.DB, cfg auth.Config) (*httptest.Server, *auth.Service) {
	tb.Helper()
	cfg.Argon2 = cheap
	svc := auth.NewService(store.NewAuthStore(db), cfg)
	if _, err := svc.AddUser(context.Background(), "ada", "correct horse battery"); err != nil {
		tb.Fatal(err)
	}
	limits := api.DefaultLimits()
	limits.Session = ratelimit.Rate{Limit: 10_000, Window: time.Minute, Burst: 10_000}
	srv := httptest.NewServer(api.New(withAccount(api.Config{Auth: svc, Limits: limits, Now: cfg.Now})))
	tb.Cleanup(srv.Close)
	return srv, svc
}

// httpCall sends a request to srv with a JSON body (when not "") and
// headers as "Name: value" ("" for none). A client gives up after 20 s, so
// a server that hangs fails the test instead of stalling it; the error is
// then the reply's body.
func httpCall(tb testing.TB, srv *httptest.Server, method, path, body string, headers ...string) apitest.Reply {
	tb.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	r, err := apitest.Exchange(context.Background(), &http.Client{Timeout: 20 * time.Second}, method, srv.URL+path, rd, headers...)
	if err != nil {
		r.Body = err.Error()
	}
	return r
}

// loginCookie logs ada in over HTTP and returns the Cookie header.
func loginCookie(tb testing.TB, srv *httptest.Server) string {
	tb.Helper()
	return httpCall(tb, srv, "POST", "/api/v1/auth/login", `{"username":"ada","password":"correct horse battery"}`).Want(tb, 200, "login").Cookie(tb)
}

// Concurrent creates cannot pass the cap together: of 100 at once with a
// cap of 5, at most 5 succeed and the rest get 409 conflict. On a loaded
// machine a write may outlast the store's deadline: that create is
// answered 503 with Retry-After and leaves no key, so the creates after
// the burst take the user to exactly 5 keys, then 409.
func TestAPIKeyCapHoldsUnderConcurrency(t *testing.T) {
	storetest.Run(t, func(t *testing.T, db *store.DB) {
		srv, _ := liveServer(t, db, auth.Config{MaxAPIKeys: 5})
		cookie := loginCookie(t, srv)
		create := func(i int) apitest.Reply {
			r := httpCall(t, srv, "POST", "/api/v1/apikeys", fmt.Sprintf(`{"name":"key %d"}`, i), cookie)
			switch r.Status {
			case 201:
			case 409:
				if r.Code() != "conflict" || !strings.Contains(r.Body, "5 API keys") {
					t.Errorf("409 body = %s; want the conflict envelope naming the cap", r.Body)
				}
			case 503: // past the store's deadline
				if r.Code() != "unavailable" || r.Header.Get("Retry-After") == "" {
					t.Errorf("503 Retry-After=%q %s; want the unavailable envelope with Retry-After", r.Header.Get("Retry-After"), r.Body)
				}
			default:
				t.Errorf("create: %d %s; want 201, 409 or (overloaded) 503", r.Status, r.Body)
			}
			return r
		}
		keys := func() int { // the user's keys, asked again after a 503
			r := httpCall(t, srv, "GET", "/api/v1/apikeys?limit=100", "", cookie)
			for try := 0; r.Status == 503 && try < 10; try++ {
				r.WantUnavailable(t, "a list past the store's deadline")
				r = httpCall(t, srv, "GET", "/api/v1/apikeys?limit=100", "", cookie)
			}
			var page struct{ Keys []struct{ ID string } }
			r.Want(t, 200, "list keys").Decode(t, &page)
			return len(page.Keys)
		}
		var mu sync.Mutex
		statuses := map[int]int{}
		var wg sync.WaitGroup
		for i := range 100 {
			wg.Go(func() {
				r := create(i)
				mu.Lock()
				statuses[r.Status]++
				mu.Unlock()
			})
		}
		wg.Wait()
		if statuses[201] > 5 || statuses[201]+statuses[409]+statuses[503] != 100 {
			t.Fatalf("100 concurrent creates with a cap of 5 answered %v; want at most 5 × 201, the rest 409 (or 503)", statuses)
		}
		if statuses[201] < 5 && statuses[503] == 0 {
			t.Fatalf("100 concurrent creates with a cap of 5 answered %v; want 5 × 201, the rest 409", statuses)
		}
		if n := keys(); n != statuses[201] {
			t.Fatalf("the user has %d keys after %d creates answered 201; a 503 must leave no key", n, statuses[201])
		}
		// The cap still holds exactly: creates one at a time (again after a
		// 503) reach 5 keys, then 409.
		created, last := statuses[201], 0
		for i := 100; last != 409 && i < 200; i++ {
			if last = create(i).Status; last == 201 {
				created++
			}
		}
		if n := keys(); last != 409 || n != 5 || created != 5 {
			t.Fatalf("the user has %d keys (%d creates answered 201), want 5", n, created)
		}
	})
}

// A login beyond the session cap ends the user's oldest session at once on
// this replica, though this replica had it cached.
func TestSessionCapEvictsOldest(t *testing.T) {
	storetest.Run(t, func(t *testing.T, db *store.DB) {
		// Each reading of the clock is a second later, so the three logins
		// have an order (in one millisecond, which is "oldest" is arbitrary).
		var mu sync.Mutex
		now := time.Now()
		tick := func() time.Time { mu.Lock(); defer mu.Unlock(); now = now.Add(time.Second); return now }
		srv, _ := liveServer(t, db, auth.Config{MaxSessions: 2, Now: tick, IdleTimeout: time.Hour})
		first := loginCookie(t, srv)
		if r := httpCall(t, srv, "GET", "/api/v1/auth/me", "", first); r.Status != 200 { // now cached
			t.Fatalf("the first session: %d %s", r.Status, r.Body)
		}
		second := loginCookie(t, srv)
		third := loginCookie(t, srv)
		for _, tc := range []struct {
			name, cookie string
			want         int
		}{{"first", first, 401}, {"second", second, 200}, {"third", third, 200}} {
			if r := httpCall(t, srv, "GET", "/api/v1/auth/me", "", tc.cookie); r.Status != tc.want {
				t.Errorf("the %s session after 3 logins with a cap of 2: %d, want %d", tc.name, r.Status, tc.want)
			}
		}
	})
}

// Every time the API shows has at most millisecond precision, last_used_at
// included, though the clock has nanoseconds.
func TestAPIKeyTimesInMilliseconds(t *testing.T) {
	clk := testclock.New(t0.Add(1234567891 * time.Nanosecond))
	srv, _ := liveServer(t, storetest.Open(t, store.SQLite), auth.Config{Now: clk.Now})
	cookie := loginCookie(t, srv)
	var k struct{ Key string }
	httpCall(t, srv, "POST", "/api/v1/apikeys", `{"name":"ci"}`, cookie).Decode(t, &k)
	clk.Advance(time.Second)
	if r := httpCall(t, srv, "GET", "/api/v1/auth/me", "", "X-API-Key: "+k.Key); r.Status != 200 {
		t.Fatalf("me with the key: %d %s", r.Status, r.Body)
	}
	var page struct {
		Keys []struct {
			CreatedAt  string `json:"created_at"`
			LastUsedAt string `json:"last_used_at"`
		}
	}
	httpCall(t, srv, "GET", "/api/v1/apikeys", "", cookie).Decode(t, &page)
	if len(page.Keys) != 1 || page.Keys[0].CreatedAt != "2026-11-30T12:00:01.234Z" || page.Keys[0].LastUsedAt != "2026-11-30T12:00:02.234Z" {
		t.Fatalf("keys = %+v; want created_at 2026-11-30T12:00:01.234Z and last_used_at 2026-11-30T12:00:02.234Z", page.Keys)
	}
}
