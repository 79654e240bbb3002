package api_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
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
	"github.com/danielgtaylor/huma/v2"
)

// downStore is a real auth store whose lookups fail with err while it is
// set, as when the database stops answering.
type downStore struct {
	auth.Store
	mu  sync.Mutex
	err error
}

func (d *downStore) set(err error) { d.mu.Lock(); d.err = err; d.mu.Unlock() }
func (d *downStore) down() error   { d.mu.Lock(); defer d.mu.Unlock(); return d.err }

func (d *downStore) UserByUsername(ctx context.Context, name string) (auth.User, error) {
	if err := d.down(); err != nil {
		return auth.User{}, err
	}
	return d.Store.UserByUsername(ctx, name)
}

func (d *downStore) APIKeyByHash(ctx context.Context, h string) (auth.APIKey, auth.User, error) {
	if err := d.down(); err != nil {
		return auth.APIKey{}, auth.User{}, err
	}
	return d.Store.APIKeyByHash(ctx, h)
}

// mustDownStore returns ada's auth service over a downStore.
func mustDownStore(tb testing.TB) (*auth.Service, *downStore) {
	tb.Helper()
	st := &downStore{Store: store.NewAuthStore(storetest.Open(tb, store.SQLite))}
	svc := auth.NewService(st, auth.Config{Argon2: cheap})
	if _, err := svc.AddUser(context.Background(), "ada", "correct horse battery"); err != nil {
		tb.Fatal(err)
	}
	return svc, st
}

// failingLimiter is a rate-limit store that does not answer.
type failingLimiter struct{ p ratelimit.Budget }

func (f failingLimiter) Budget() ratelimit.Budget { return f.p }
func (f failingLimiter) Allow(context.Context, string) (ratelimit.Decision, error) {
	return ratelimit.Decision{}, errors.New("redis: connection refused")
}
func (f failingLimiter) Refund(context.Context, string, *ratelimit.Decision) error {
	return errors.New("redis: connection refused")
}

// Every way the server answers 503 says when to retry: the readiness
// probe, the rate limiter's "closed" policy, credentials that could not be
// checked, an operation whose store failed, and an error a middleware
// writes.
func TestEvery503CarriesRetryAfter(t *testing.T) {
	svc, st := mustDownStore(t)
	ready := []api.Check{{Name: "database", Check: func(context.Context) error { return st.down() }}}
	s := live503(t, api.Config{Auth: svc, Ready: ready})
	st.set(errors.New("connection refused"))

	s.Call("GET", "/api/v1/ready", nil).WantUnavailable(t, "ready with the database down")
	s.Login("ada", "correct horse battery").WantUnavailable(t, "login with the database down")
	s.Call("GET", "/api/v1/auth/me", nil, "X-API-Key: "+auth.KeyPrefix+strings.Repeat("k", 32)).
		WantUnavailable(t, "an API key that could not be checked")

	closed := api.DefaultLimits()
	closed.Store = func(p ratelimit.Budget) ratelimit.Limiter { return failingLimiter{p} }
	limited := live503(t, api.Config{Auth: MustAuth(t), Limits: closed})
	limited.Login("ada", "correct horse battery").WantUnavailable(t, "login while the rate limiter does not answer")

	rec := httptest.NewRecorder()
	api.WriteError(rec, api.NewError(http.StatusServiceUnavailable, ""))
	if got := rec.Header().Get("Retry-After"); rec.Code != 503 || got != "5" {
		t.Fatalf("WriteError(503): %d Retry-After=%q, want 503 with Retry-After: 5", rec.Code, got)
	}
}

func live503(tb testing.TB, cfg api.Config) *apitest.Client {
	tb.Helper()
	cfg.Logger = slog.New(slog.DiscardHandler)
	return apitest.Serve(tb, api.New(withAccount(cfg)))
}

// Every 503 the spec declares is the one shared response, which declares
// Retry-After; the operations that hash a password declare it.
func TestSpecEvery503IsUnavailable(t *testing.T) {
	doc := api.New(api.Config{Logger: slog.New(slog.DiscardHandler), Features: documented()}).API.OpenAPI()
	u := doc.Components.Responses["Unavailable"]
	if u == nil || u.Headers["Retry-After"] == nil || u.Headers["Retry-After"].Ref != "#/components/headers/Retry-After" ||
		u.Content["application/json"] == nil || u.Content["application/json"].Schema.Ref != "#/components/schemas/Error" {
		t.Fatalf("components.responses.Unavailable = %+v, want the envelope with Retry-After", u)
	}
	if h := doc.Components.Headers["Retry-After"]; h == nil || !h.Required {
		t.Fatalf("components.headers.Retry-After = %+v, want it required", h)
	}
	declared := map[string]bool{}
	for path, item := range doc.Paths {
		for method, op := range map[string]*huma.Operation{"GET": item.Get, "POST": item.Post, "PUT": item.Put, "PATCH": item.Patch, "DELETE": item.Delete} {
			if op == nil || op.Responses["503"] == nil {
				continue
			}
			declared[op.OperationID] = true
			if r := op.Responses["503"]; r.Ref != "#/components/responses/Unavailable" {
				t.Errorf("%s %s: 503 = %+v, want the shared Unavailable response", method, path, r)
			}
		}
	}
	for _, id := range []string{"get-ready", "login", "change-password", "logout", "get-me", "create-api-key", "list-api-keys", "delete-api-key"} {
		if !declared[id] {
			t.Errorf("%s does not declare its 503", id)
		}
	}
}

// An outage fails every request alike; the log says so once per cause per
// minute, at WARN, with how many requests it failed meanwhile.
func TestOutageLoggedOncePerCause(t *testing.T) {
	svc, st := mustDownStore(t)
	clk := testclock.New(t0)
	logs := &apitest.Logs{}
	lim := api.DefaultLimits()
	lim.IP.Limit, lim.IP.Burst = 1000, 1000
	s := apitest.Serve(t, api.New(withAccount(api.Config{Auth: svc, Now: clk.Now, Limits: lim, Logger: slog.New(slog.NewTextHandler(logs, nil))})))
	lines := func(cause string) []string {
		var out []string
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, cause) {
				out = append(out, l)
			}
		}
		return out
	}

	st.set(errors.New("dial tcp: connection refused"))
	for range 20 {
		s.Login("ada", "correct horse battery").WantUnavailable(t, "login with the database down")
	}
	if got := lines("connection refused"); len(got) != 1 || !strings.Contains(got[0], "level=WARN") || !strings.Contains(got[0], "repeats=0") {
		t.Fatalf("20 failures of one cause logged:\n%s\nwant one WARN line", strings.Join(got, "\n"))
	}
	st.set(errors.New("i/o timeout"))
	s.Login("ada", "correct horse battery").WantUnavailable(t, "login with the database slow")
	if got := lines("i/o timeout"); len(got) != 1 {
		t.Fatalf("another cause logged %d lines, want its own one", len(got))
	}

	clk.Advance(time.Minute)
	st.set(errors.New("dial tcp: connection refused"))
	s.Login("ada", "correct horse battery").WantUnavailable(t, "login a minute later")
	if got := lines("connection refused"); len(got) != 2 || !strings.Contains(got[1], "repeats=19") {
		t.Fatalf("a minute later:\n%s\nwant a second line counting the 19 requests since the first", strings.Join(got, "\n"))
	}
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Fatalf("an outage is not brain's error:\n%s", logs)
	}
}

// ErrorResponse, the whole response written on a connection net/http
// never serves, is what WriteError writes, and closes its connection.
func TestErrorResponseIsWriteErrors(t *testing.T) {
	busy := api.NewError(http.StatusServiceUnavailable, "too many connections")
	busy.GetHeaders().Set("Retry-After", "1")
	for _, e := range []*api.Error{busy, api.NewError(http.StatusBadRequest, "", api.FieldError{Location: "body", Message: "bad"})} {
		rec := httptest.NewRecorder()
		api.WriteError(rec, e)
		res, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(api.ErrorResponse(e))), nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		if res.StatusCode != rec.Code || !res.Close || string(body) != rec.Body.String() || res.ContentLength != int64(len(body)) {
			t.Errorf("ErrorResponse: %d close=%v %q (length %d), want %d and Connection: close with %q", res.StatusCode, res.Close, body, res.ContentLength, rec.Code, rec.Body)
		}
		for k := range rec.Header() {
			if got, want := res.Header.Get(k), rec.Header().Get(k); got != want {
				t.Errorf("ErrorResponse's %s = %q, WriteError's %q", k, got, want)
			}
		}
	}
}
