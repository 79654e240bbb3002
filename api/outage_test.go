package api_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/brain-template/brain/auth"
	"github.com/brain-template/brain/internal/testclock"
	"github.com/brain-template/brain/store"
	"github.com/brain-template/brain/store/storetest"
)

// With the database not answering (PostgreSQL black-holed; SQLite's write
// lock held by another connection), requests that need it answer an error
// envelope within the store timeout, not when the client gives up.
//
// Login is asserted to be a 5xx: 500 while store errors map to internal,
// 503 once they map to unavailable. A session or API-key request that
// cannot be resolved is 503 already.
func TestStoreOutageAnswersWithinTheDeadline(t *testing.T) {
	const timeout = 300 * time.Millisecond
	const bound = timeout + time.Second // and room for a busy machine
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			db, stall := storetest.OpenStallable(t, d)
			db.Timeout = timeout
			srv, _ := liveServer(t, db, auth.Config{})
			ctx := context.Background()
			// Logged in on another replica: the server has not seen the
			// session or the key, so its requests look them up.
			other := auth.NewService(store.NewAuthStore(db), auth.Config{Argon2: cheap})
			token, _, u, err := other.Login(ctx, "ada", "correct horse battery", "setup")
			if err != nil {
				t.Fatal(err)
			}
			_, key, err := other.CreateAPIKey(ctx, u.ID, "ci")
			if err != nil {
				t.Fatal(err)
			}
			cookie := "Cookie: brain_session=" + token
			type request struct {
				name, method, path, body, header string
				status                           int // 0: any 5xx
			}
			requests := []request{{"login", "POST", "/api/v1/auth/login", `{"username":"ada","password":"correct horse battery"}`, "", 0}}
			if d == store.Postgres {
				requests = append(requests,
					request{"apikey", "GET", "/api/v1/auth/me", "", "X-API-Key: " + key, 503},
					request{"session", "GET", "/api/v1/auth/me", "", cookie, 503})
			} else { // SQLite's readers do not wait: a write does
				requests = append(requests, request{"create_key", "POST", "/api/v1/apikeys", `{"name":"laptop"}`, cookie, 0})
			}

			stall.Start()
			defer stall.Stop()
			for _, rq := range requests {
				r := httpCall(t, srv, rq.method, rq.path, rq.body, rq.header)
				t.Logf("%s with the database stalled: %d after %v", rq.name, r.Status, r.Took.Round(time.Millisecond))
				want := "a 5xx"
				if rq.status != 0 {
					want = strconv.Itoa(rq.status)
				}
				if r.Took > bound || r.Status < 500 || (rq.status != 0 && r.Status != rq.status) || r.Code() == "" {
					t.Errorf("%s: %d %q after %v; want %s with the error envelope within %v", rq.name, r.Status, r.Body, r.Took, want, bound)
				}
			}
		})
	}
}

// A request whose session is cached needs no database, even when the
// session's last-seen time is due to be written: the write is queued for
// Flush, so a stalled database cannot hold the request. Flush writes it
// once the database answers.
func TestSessionTouchNeverHoldsARequest(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(string(d), func(t *testing.T) {
			db, stall := storetest.OpenStallable(t, d)
			db.Timeout = 20 * time.Second // an inline write would take this long
			clk := testclock.New(t0)
			srv, svc := liveServer(t, db, auth.Config{Now: clk.Now, CacheTTL: time.Hour, TouchInterval: time.Minute})
			cookie := loginCookie(t, srv)
			if r := httpCall(t, srv, "GET", "/api/v1/auth/me", "", cookie); r.Status != 200 { // now cached
				t.Fatalf("me: %d %s", r.Status, r.Body)
			}
			clk.Advance(2 * time.Minute) // the last-seen time is due; the cache entry is not stale

			stall.Start()
			r := httpCall(t, srv, "GET", "/api/v1/auth/me", "", cookie)
			if r.Status != 200 || r.Took > 10*time.Second { // half the store's deadline: room for a loaded machine
				t.Fatalf("me with the database stalled: %d after %v; want 200 before the store's deadline", r.Status, r.Took)
			}
			stall.Stop()

			if err := svc.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
			token := strings.TrimPrefix(cookie, "Cookie: brain_session=")
			sum := sha256.Sum256([]byte(token)) // what the store keeps of a token
			se, _, err := store.NewAuthStore(db).SessionByTokenHash(context.Background(), hex.EncodeToString(sum[:]))
			if err != nil || !se.LastSeenAt.Equal(clk.Now()) {
				t.Fatalf("stored last-seen time = %v, %v; want %v after Flush", se.LastSeenAt, err, clk.Now())
			}
		})
	}
}
