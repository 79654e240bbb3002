package api_test

import (
	"encoding/json"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/api/apitest"
	"github.com/brain-template/brain/auth"
	"github.com/brain-template/brain/store"
	"github.com/brain-template/brain/store/storetest"
)

// outageServer is the API over svc, logging to logs.
func outageServer(tb testing.TB, svc *auth.Service) (*apitest.Client, *apitest.Logs) {
	tb.Helper()
	if _, err := svc.AddUser(tb.Context(), "ada", "correct horse battery"); err != nil {
		tb.Fatal(err)
	}
	logs := &apitest.Logs{}
	return apitest.Serve(tb, api.New(withAccount(api.Config{Auth: svc, Logger: slog.New(slog.NewTextHandler(logs, nil))}))), logs
}

// While PostgreSQL does not answer, every auth-backed operation answers
// 503 with Retry-After: never 500, and never 429 however often the right
// password is tried, since an outage is no failed login. The moment the
// database is back, the right password logs in.
func TestAuthPostgresOutage(t *testing.T) {
	db, proxy := proxiedPostgres(t)
	s, logs := outageServer(t, auth.NewService(store.NewAuthStore(db), auth.Config{Argon2: cheap}))
	cookie := s.Login("ada", "correct horse battery").Want(t, 200, "login").Cookie(t)
	s.Call("GET", "/api/v1/auth/me", nil, cookie).Want(t, 200, "me") // the session is now cached for 10 s
	key := s.Call("POST", "/api/v1/apikeys", map[string]string{"name": "laptop"}, cookie).Want(t, 201, "create key")
	var created struct{ ID, Key string }
	if err := json.Unmarshal([]byte(key.Body), &created); err != nil {
		t.Fatal(err)
	}

	proxy.Cut()
	for i := range 3 * auth.NewLoginThrottle().UserFailures {
		s.Login("ada", "correct horse battery").WantUnavailable(t, "the right password, try "+strconv.Itoa(i+1))
	}
	s.Login("ada", "a wrong password").WantUnavailable(t, "a wrong password")
	s.Call("GET", "/api/v1/auth/me", nil, "X-API-Key: "+created.Key).WantUnavailable(t, "an API key that cannot be looked up")
	// The cached session gets past authentication: each operation's own
	// store call fails.
	s.Call("GET", "/api/v1/apikeys", nil, cookie).WantUnavailable(t, "list keys")
	s.Call("POST", "/api/v1/apikeys", map[string]string{"name": "phone"}, cookie).WantUnavailable(t, "create key")
	s.Call("DELETE", "/api/v1/apikeys/"+created.ID, nil, cookie).WantUnavailable(t, "delete key")
	s.Call("POST", "/api/v1/auth/password", map[string]string{"current": "correct horse battery", "new": "a brand new password"}, cookie).
		WantUnavailable(t, "change password")
	s.Call("POST", "/api/v1/auth/logout", nil, cookie).WantUnavailable(t, "logout")

	proxy.Restore()
	s.Login("ada", "correct horse battery").Want(t, 200, "the right password once the database is back")
	s.Call("GET", "/api/v1/auth/me", nil, "X-API-Key: "+created.Key).Want(t, 200, "the API key once the database is back")

	if strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("an outage is no error of brain's:\n%s", logs)
	}
	if n := strings.Count(logs.String(), "unavailable: answering 503"); n == 0 || n > 10 {
		t.Errorf("%d log lines for 23 requests failed by one outage, want a few:\n%s", n, logs)
	}
}

// On SQLite, another connection holding the write lock stalls every write
// until the store's deadline; then the write fails, and the answer is 503,
// not 500. Reads go on. Released, the right password logs in at once.
func TestAuthSQLiteLocked(t *testing.T) {
	db, stall := storetest.OpenStallable(t, store.SQLite)
	db.Timeout = 300 * time.Millisecond
	s, _ := outageServer(t, auth.NewService(store.NewAuthStore(db), auth.Config{Argon2: cheap}))
	cookie := s.Login("ada", "correct horse battery").Want(t, 200, "login").Cookie(t)

	stall.Start()
	release := stall.Stop
	writes := map[string]struct {
		method, path string
		body         any
	}{ // each waits out the deadline: sent together
		"login (a new session)": {"POST", "/api/v1/auth/login", map[string]string{"username": "ada", "password": "correct horse battery"}},
		"create key":            {"POST", "/api/v1/apikeys", map[string]string{"name": "phone"}},
		"change password":       {"POST", "/api/v1/auth/password", map[string]string{"current": "correct horse battery", "new": "a brand new password"}},
	}
	var mu sync.Mutex
	replies := map[string]apitest.Reply{}
	var wg sync.WaitGroup
	for what, w := range writes {
		wg.Go(func() {
			r, err := s.CallContext(t.Context(), w.method, w.path, w.body, cookie)
			if err != nil {
				t.Errorf("%s: %v", what, err)
			}
			mu.Lock()
			replies[what] = r
			mu.Unlock()
		})
	}
	s.Call("GET", "/api/v1/apikeys", nil, cookie).Want(t, 200, "list keys (a read) meanwhile")
	wg.Wait()
	for what, r := range replies {
		r.WantUnavailable(t, what+" while another connection holds the write lock")
	}

	release()
	s.Login("ada", "correct horse battery").Want(t, 200, "the right password once the lock is released")
}
