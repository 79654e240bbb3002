package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/api/apitest"
	"github.com/brain-template/brain/auth"
	"github.com/brain-template/brain/internal/testclock"
	"github.com/brain-template/brain/ratelimit"
	"github.com/brain-template/brain/streams"
	"github.com/danielgtaylor/huma/v2"
)

type fakeClock = testclock.Clock

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func hourly(n int) ratelimit.Rate { return ratelimit.Rate{Limit: n, Window: time.Hour, Burst: n} }

// small are budgets a test can exhaust in a few requests.
func small(clk *fakeClock) api.Limits {
	l := api.DefaultLimits()
	l.Session = ratelimit.Rate{Limit: 3, Window: time.Minute, Burst: 3}
	l.IP = ratelimit.Rate{Limit: 2, Window: time.Minute, Burst: 2}
	l.APIKey = ratelimit.Rate{Limit: 2, Window: time.Minute, Burst: 2}
	l.Store = func(p ratelimit.Budget) ratelimit.Limiter {
		m := ratelimit.NewMemory(p, ratelimit.MemoryOptions{})
		m.Now = clk.Now
		return m
	}
	return l
}

// limitedServer is the whole server with small budgets, a fake clock and a
// test-only operation that names the "trial" budget, as the memory
// endpoints will. It returns ada's session cookie and API key.
func limitedServer(t *testing.T) (*api.Server, *fakeClock, string, string) {
	t.Helper()
	clk := testclock.New(t0)
	svc := MustAuth(t)
	s, _ := mustRawServer(t, api.Config{Auth: svc, Limits: small(clk), Now: clk.Now})
	huma.Register(s.API, api.WithBudget(huma.Operation{OperationID: "test-budgeted", Method: http.MethodPost, Path: "/api/v1/test/budgeted"}, api.Budget{Name: "trial", Default: "5/h; 2/s"}),
		func(ctx context.Context, _ *struct{}) (*struct{}, error) { return nil, nil })
	cookie, key := loginAndKey(t, svc)
	return s, clk, cookie, key
}

type call struct {
	code int
	hdr  http.Header
	env  apitest.Refusal
}

func send(t *testing.T, h http.Handler, method, path, cookie, key string) call {
	t.Helper()
	return sendContext(t, context.Background(), h, method, path, cookie, key)
}

// sendContext is send under ctx: a stream answers until ctx ends.
func sendContext(t *testing.T, ctx context.Context, h http.Handler, method, path, cookie, key string) call {
	t.Helper()
	req := httptest.NewRequestWithContext(ctx, method, path, strings.NewReader("{}"))
	req.Header.Set("Content-Type", "application/json")
	req.RemoteAddr = "203.0.113.9:4000"
	if cookie != "" {
		req.Header.Set("Cookie", cookie)
	}
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	c := call{code: rec.Code, hdr: rec.Header()}
	_ = json.Unmarshal(rec.Body.Bytes(), &c.env)
	return c
}

func TestPlanes(t *testing.T) {
	tests := []struct {
		name, method, path string
		cookie, key        bool
		admitted           int // requests admitted at one instant: the burst
		scope, policy      string
		limit, window      int
		retry              int // seconds
		policyHeader       string
	}{
		{"session", "GET", "/api/v1/auth/me", true, false, 3, "session", "session", 3, 60, 20, `"session";q=3;w=60`},
		{"apikey_default", "GET", "/api/v1/auth/me", false, true, 2, "apikey", "apikey", 2, 60, 30, `"apikey";q=2;w=60`},
		{"ip_on_login", "POST", "/api/v1/auth/login", false, false, 2, "ip", "ip", 2, 60, 30, `"ip";q=2;w=60`},
		{"apikey_operation_budget", "POST", "/api/v1/test/budgeted", false, true, 2, "apikey", "trial-burst", 2, 1, 1, `"trial";q=5;w=3600, "trial-burst";q=2;w=1`},
		{"session_on_budgeted_operation", "POST", "/api/v1/test/budgeted", true, false, 3, "session", "session", 3, 60, 20, `"session";q=3;w=60`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, _, cookie, key := limitedServer(t)
			if !tc.cookie {
				cookie = ""
			}
			if !tc.key {
				key = ""
			}
			for i := range tc.admitted {
				c := send(t, s, tc.method, tc.path, cookie, key)
				if c.code == 429 {
					t.Fatalf("request %d of the burst was refused", i+1)
				}
				if c.hdr.Get("RateLimit-Policy") != tc.policyHeader || c.hdr.Get("RateLimit") == "" || c.hdr.Get("X-RateLimit-Remaining") == "" || c.hdr.Get("X-RateLimit-Reset") == "" || c.hdr.Get("X-RateLimit-Limit") == "" {
					t.Fatalf("request %d (%d): headers %v", i+1, c.code, c.hdr)
				}
				if c.hdr.Get("Retry-After") != "" {
					t.Fatalf("Retry-After on an admitted request")
				}
			}
			c := send(t, s, tc.method, tc.path, cookie, key)
			d := c.env.Details
			if c.code != 429 || c.env.Code != "rate-limited" || d.Scope != tc.scope || d.Policy != tc.policy || d.Limit != tc.limit || d.WindowS != tc.window || d.RetryAfterS != tc.retry {
				t.Fatalf("over the budget: %d %+v", c.code, c.env)
			}
			if len(c.hdr.Values("Retry-After")) != 1 || c.hdr.Get("Retry-After") != strconv.Itoa(tc.retry) || c.hdr.Get("X-RateLimit-Remaining") != "0" || c.hdr.Get("RateLimit-Policy") != tc.policyHeader {
				t.Fatalf("429 headers: %v", c.hdr)
			}
		})
	}
}

// The per-operation budget: 2/s AND 5/h, decided together.
func TestOperationBudgetCombinesHourlyAndPerSecond(t *testing.T) {
	s, clk, _, key := limitedServer(t)
	admitted := 0
	for range 10 { // 5 seconds, 2 requests a second: the hourly 5 runs out
		for range 2 {
			if send(t, s, "POST", "/api/v1/test/budgeted", "", key).code != 429 {
				admitted++
			}
		}
		clk.Advance(500 * time.Millisecond)
	}
	if admitted != 5 {
		t.Fatalf("%d admitted, want the hourly budget of 5", admitted)
	}
	c := send(t, s, "POST", "/api/v1/test/budgeted", "", key)
	if c.code != 429 || c.env.Details.Policy != "trial" || c.env.Details.WindowS != 3600 {
		t.Fatalf("after the hourly budget: %d %+v", c.code, c.env)
	}
	// 5/h is a token every 720 s; refused requests took nothing.
	if ra, _ := strconv.Atoi(c.hdr.Get("Retry-After")); ra < 1 || ra > 720 {
		t.Fatalf("Retry-After = %d", ra)
	}
}

func TestExemptOperations(t *testing.T) {
	s, _, cookie, _ := limitedServer(t)
	for range 50 {
		for _, path := range []string{"/api/v1/health", "/api/v1/ready", "/openapi.json", "/docs"} {
			c := send(t, s, "GET", path, cookie, "")
			if c.code != 200 || c.hdr.Get("RateLimit") != "" {
				t.Fatalf("%s: %d %v: exempt paths are never limited and carry no rate-limit headers", path, c.code, c.hdr)
			}
		}
	}
}

// recorder records which budget each decision consulted.
type recorder struct {
	mu    sync.Mutex
	calls []string
}

func (r *recorder) store(clk *fakeClock) func(ratelimit.Budget) ratelimit.Limiter {
	return func(p ratelimit.Budget) ratelimit.Limiter {
		m := ratelimit.NewMemory(p, ratelimit.MemoryOptions{})
		m.Now = clk.Now
		return recordingLimiter{m, r}
	}
}

type recordingLimiter struct {
	*ratelimit.Memory
	r *recorder
}

func (l recordingLimiter) Allow(ctx context.Context, key string) (ratelimit.Decision, error) {
	l.r.mu.Lock()
	l.r.calls = append(l.r.calls, l.Budget().Name)
	l.r.mu.Unlock()
	return l.Memory.Allow(ctx, key)
}

func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.calls
	r.calls = nil
	return c
}

// TestSpecIsWhatIsEnforced walks every operation in the served spec and,
// for each kind of caller, checks that the budget the server consulted is
// one the operation's x-rate-limit shows for that caller's plane, and that
// an operation showing a plane consults it. Nothing is enforced that the
// spec does not show, and nothing shown goes unenforced.
func TestSpecIsWhatIsEnforced(t *testing.T) {
	clk := testclock.New(t0)
	rec := &recorder{}
	l := api.DefaultLimits()
	l.Store = rec.store(clk)
	l.StreamOpens = ratelimit.Rate{Limit: 7, Window: time.Minute, Burst: 5} // not the defaults: the spec shows what is configured
	l.StreamUserOpens = ratelimit.Rate{Limit: 11, Window: time.Minute, Burst: 200}
	drawn := 0 // the opens of ada's streams: every caller is ada, and the clock stands still
	// A roomy ip budget: every operation's anonymous request draws from
	// the one address's budget on a clock that stands still, and once it
	// is spent a new API key's first lookup is refused with it
	// (requireCaller spares the store for a refused address). The walk
	// stays short of the default's 30, but not by much.
	l.IP = ratelimit.Rate{Limit: 1000, Window: time.Minute, Burst: 1000}
	svc := MustAuth(t)
	s, _ := mustRawServer(t, api.Config{Auth: svc, Limits: l, Now: clk.Now,
		Features: []api.Feature{streams.New(streams.Config{Cap: streams.NewMemoryCap(5), UserCap: streams.NewMemoryCap(9)}).Feature}})
	huma.Register(s.API, api.WithBudget(huma.Operation{OperationID: "test-budgeted", Method: http.MethodPost, Path: "/api/v1/test/budgeted"}, api.Budget{Name: "trial", Default: "100/h; 10/s"}),
		func(ctx context.Context, _ *struct{}) (*struct{}, error) { return nil, nil })
	spec, _ := s.Spec()
	var doc struct {
		Paths map[string]map[string]struct {
			XRateLimit []api.RateLimitEntry `json:"x-rate-limit"`
			Responses  map[string]struct {
				Content map[string]any `json:"content"`
			} `json:"responses"`
		}
	}
	if err := json.Unmarshal(spec, &doc); err != nil {
		t.Fatal(err)
	}
	ops := 0
	for path, item := range doc.Paths {
		for method, op := range item {
			ops++
			for _, caller := range []string{"anonymous", "session", "apikey"} {
				ctx := context.Background()
				var cookie, key string
				if caller != "anonymous" {
					token, _, u, err := svc.Login(ctx, "ada", "correct horse battery", "walk")
					if err != nil {
						t.Fatal(err)
					}
					if caller == "session" {
						cookie = "brain_session=" + token
					} else {
						_, key, _ = svc.CreateAPIKey(ctx, u.ID, "walk")
					}
				}
				rec.take()
				// A stream (a GET, or its HEAD) draws from the stream plane.
				stream := slices.ContainsFunc(op.XRateLimit, func(e api.RateLimitEntry) bool { return e.Plane == "stream" })
				ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond) // a stream answers until it ends
				c := sendContext(t, ctx, s, strings.ToUpper(method), strings.ReplaceAll(path, "{id}", "x"), cookie, key)
				cancel()
				consulted := rec.take()
				if stream && caller != "anonymous" {
					// A stream draws from the stream plane only: it shows
					// the caps and the open budgets it enforces, exactly
					// as the headers of its response describe them, and
					// the 429 it answers past them.
					drawn++
					var policy, left []string
					for _, e := range op.XRateLimit {
						switch {
						case e.Plane == "stream" && e.Concurrent > 0:
							policy = append(policy, fmt.Sprintf(`"%s";q=%d;qu="concurrent-requests"`, e.Policy, e.Concurrent))
							left = append(left, fmt.Sprintf(`"%s";r=%d`, e.Policy, e.Concurrent-1))
						case e.Plane == "stream" && e.Policy == api.StreamUserOpensBudget:
							policy = append(policy, fmt.Sprintf(`"%s";q=%d;w=%d`, e.Policy, e.Limit, e.WindowS))
							left = append(left, fmt.Sprintf(`"%s";r=%d;`, e.Policy, e.Burst-drawn)) // every open of the user's so far
						case e.Plane == "stream":
							policy = append(policy, fmt.Sprintf(`"%s";q=%d;w=%d`, e.Policy, e.Limit, e.WindowS))
							left = append(left, fmt.Sprintf(`"%s";r=%d;`, e.Policy, e.Burst-1)) // a new caller's first open
						}
					}
					want := `"streams";q=5;qu="concurrent-requests", "streams-per-user";q=9;qu="concurrent-requests", "stream-opens";q=7;w=60, "stream-opens-per-user";q=11;w=60`
					// Admitted by the stream's admission (a path naming no job is then 404 or 422).
					admitted := c.code == 200 || c.code == 404 || c.code == 422
					if !admitted || strings.Join(policy, ", ") != want || c.hdr.Get("RateLimit-Policy") != want {
						t.Errorf("%s %s as %s: %d %v; x-rate-limit %v, want the stream plane's caps and open budgets, %s", method, path, caller, c.code, c.hdr, op.XRateLimit, want)
					}
					for _, l := range left {
						if !strings.Contains(c.hdr.Get("RateLimit")+";", l) {
							t.Errorf("%s %s as %s: RateLimit %q, want %s as x-rate-limit says", method, path, caller, c.hdr.Get("RateLimit"), l)
						}
					}
					if _, ok := op.Responses["429"]; !ok {
						t.Errorf("%s %s: a stream declares no 429", method, path)
					}
				}
				plane := map[string]string{"anonymous": "ip", "session": "session", "apikey": "apikey"}[caller]
				if stream && caller != "anonymous" {
					plane = "stream"
				}
				var shown []string
				for _, e := range op.XRateLimit {
					if e.Plane == "ip" || e.Plane == plane {
						shown = append(shown, e.Policy)
					}
				}
				where := method + " " + path + " as " + caller
				if len(consulted) > 1 && !(plane == "stream" && slices.Equal(consulted, []string{api.StreamOpensBudget, api.StreamUserOpensBudget})) {
					t.Errorf("%s: consulted %v: one budget per request (a stream's admission: its two open budgets)", where, consulted)
				}
				for _, b := range consulted {
					if !containsPrefix(shown, b) {
						t.Errorf("%s: enforced budget %q, but x-rate-limit shows %v for this caller", where, b, shown)
					}
				}
				if len(consulted) > 0 {
					if _, ok := op.Responses["429"]; !ok {
						t.Errorf("%s: enforced a limit but declares no 429", where)
					}
				}
				refusedFirst := c.code == 403 // a caller's 403 comes before its plane; a 401 draws from the ip plane
				if len(consulted) == 0 && len(shown) > 0 && !refusedFirst && !stream {
					t.Errorf("%s: x-rate-limit shows %v but nothing was enforced (status %d)", where, shown, c.code)
				}
			}
		}
	}
	if ops < 10 {
		t.Fatalf("walked only %d operations", ops)
	}
}

// containsPrefix: a budget "notes" is shown as the entries "notes" and
// "notes-burst".
func containsPrefix(shown []string, policy string) bool {
	for _, s := range shown {
		if s == policy || strings.TrimSuffix(s, "-burst") == policy {
			return true
		}
	}
	return false
}

// A budget is declared on its operations with defaults; configuration
// replaces it by name; two operations naming it share it; a mistake is an
// error of the server, never a panic.
func TestOperationBudgets(t *testing.T) {
	clk := testclock.New(t0)
	l := small(clk)
	l.Override = func(name string) ([]ratelimit.Rate, bool, error) {
		if name == "notes" {
			return []ratelimit.Rate{hourly(3)}, true, nil
		}
		return nil, false, nil
	}
	svc := MustAuth(t)
	s, _ := mustRawServer(t, api.Config{Auth: svc, Limits: l, Now: clk.Now})
	ok := func(ctx context.Context, _ *struct{}) (*struct{}, error) { return nil, nil }
	notes := api.Budget{Name: "notes", Default: "100/h; 10/s"}
	huma.Register(s.API, api.WithBudget(huma.Operation{OperationID: "test-notes-a", Method: http.MethodPost, Path: "/api/v1/test/notes/a"}, notes), ok)
	huma.Register(s.API, api.WithBudget(huma.Operation{OperationID: "test-notes-b", Method: http.MethodPost, Path: "/api/v1/test/notes/b"}, notes), ok)
	if err := s.Err(); err != nil || !slices.Contains(s.Budgets(), "notes") {
		t.Fatalf("Err = %v, Budgets = %v", err, s.Budgets())
	}
	_, key := loginAndKey(t, svc)
	for i, path := range []string{"a", "b", "a"} { // the override's 3/h, shared by both
		if c := send(t, s, "POST", "/api/v1/test/notes/"+path, "", key); c.code == 429 || c.hdr.Get("RateLimit-Policy") != `"notes";q=3;w=3600` {
			t.Fatalf("request %d: %d %q", i+1, c.code, c.hdr.Get("RateLimit-Policy"))
		}
	}
	if c := send(t, s, "POST", "/api/v1/test/notes/b", "", key); c.code != 429 || c.env.Details.Policy != "notes" {
		t.Fatalf("the fourth on the shared budget: %d %+v", c.code, c.env)
	}

	// Mistakes: another default for the same budget, a reserved name, an
	// invalid budget, a default that does not parse. Each is reported; none
	// panics.
	huma.Register(s.API, api.WithBudget(huma.Operation{OperationID: "test-notes-c", Method: http.MethodPost, Path: "/api/v1/test/notes/c"}, api.Budget{Name: "notes", Default: "5/h"}), ok)
	huma.Register(s.API, api.WithBudget(huma.Operation{OperationID: "test-ip", Method: http.MethodPost, Path: "/api/v1/test/ipbudget"}, api.Budget{Name: "ip", Default: "5/h"}), ok)
	huma.Register(s.API, api.WithBudget(huma.Operation{OperationID: "test-huge", Method: http.MethodPost, Path: "/api/v1/test/huge"}, api.Budget{Name: "huge", Default: "1/h,burst=10000000"}), ok)
	// A budget is for the API-key callers of a Caller operation: declared
	// elsewhere it would be dropped, so it is a mistake too.
	huma.Register(api.WithAccess(s.API, api.Session), api.WithBudget(huma.Operation{OperationID: "test-session-budget", Method: http.MethodPost, Path: "/api/v1/test/sb"}, api.Budget{Name: "sb", Default: "5/h"}), ok)
	huma.Register(api.WithAccess(s.API, api.Public), api.WithBudget(huma.Operation{OperationID: "test-public-budget", Method: http.MethodPost, Path: "/api/v1/test/pb"}, api.Budget{Name: "pb", Default: "5/h"}), ok)
	huma.Register(s.API, api.WithBudget(huma.Operation{OperationID: "test-typo", Method: http.MethodPost, Path: "/api/v1/test/typo"}, api.Budget{Name: "typo", Default: "100/hour"}), ok)
	huma.Register(s.API, api.WithBudget(huma.Operation{OperationID: "test-nodefault", Method: http.MethodPost, Path: "/api/v1/test/nodefault"}, api.Budget{Name: "nodefault"}), ok)
	err := s.Err()
	for _, want := range []string{"test-notes-c", "test-ip", "test-huge", "test-session-budget", "test-public-budget", "test-typo", "test-nodefault"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Err = %v, want it to name %s", err, want)
		}
	}
}

// loginAndKey returns a session cookie and an API key of ada's.
func loginAndKey(tb testing.TB, svc *auth.Service) (string, string) {
	tb.Helper()
	ctx := context.Background()
	token, _, u, err := svc.Login(ctx, "ada", "correct horse battery", "setup")
	if err != nil {
		tb.Fatal(err)
	}
	_, key, err := svc.CreateAPIKey(ctx, u.ID, "test")
	if err != nil {
		tb.Fatal(err)
	}
	return "brain_session=" + token, key
}

// A zero budget takes its plane's default; the rest of Limits is kept (a
// Disabled or an Override given without budgets is not thrown away).
func TestLimitsZeroBudgetsTakeDefaults(t *testing.T) {
	s, _ := mustRawServer(t, api.Config{Limits: api.Limits{Disabled: true}})
	if c := send(t, s, "POST", "/api/v1/auth/login", "", ""); c.hdr.Get("RateLimit") != "" {
		t.Fatalf("Disabled was dropped: %v", c.hdr)
	}
	s, _ = mustRawServer(t, api.Config{})
	if c := send(t, s, "POST", "/api/v1/auth/login", "", ""); c.hdr.Get("RateLimit-Policy") != `"ip";q=30;w=60` {
		t.Fatalf("zero Limits: RateLimit-Policy %q, want the ip default", c.hdr.Get("RateLimit-Policy"))
	}
}
