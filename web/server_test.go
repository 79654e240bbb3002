// Tests of the dashboard and the docs UI through the whole server (api.New
// with Config.Static and Config.Docs), over real HTTP: the API keeps its
// paths, and no rate plane sees a static request.

package web_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/auth/account"
	"github.com/brain-template/brain/internal/testclock"
	"github.com/brain-template/brain/ratelimit"
	"github.com/brain-template/brain/web"
)

// countingLimiter counts the decisions asked of a plane.
type countingLimiter struct {
	*ratelimit.Memory
	n *atomic.Int64
}

func (l countingLimiter) Allow(ctx context.Context, key string) (ratelimit.Decision, error) {
	l.n.Add(1)
	return l.Memory.Allow(ctx, key)
}

// server is the whole API with site's dashboard and docs UI, an ip budget
// of 3 a minute on a clock that stands still, and the count of every
// rate-limit decision taken.
func server(t *testing.T, fsys fstest.MapFS) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	site := mustSite(t, fsys)
	clk := testclock.New(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	decisions := &atomic.Int64{}
	l := api.DefaultLimits()
	l.IP = ratelimit.Rate{Limit: 3, Window: time.Minute, Burst: 3}
	l.Store = func(p ratelimit.Budget) ratelimit.Limiter {
		m := ratelimit.NewMemory(p, ratelimit.MemoryOptions{})
		m.Now = clk.Now
		return countingLimiter{m, decisions}
	}
	s := api.New(api.Config{Logger: slog.New(slog.DiscardHandler), Now: clk.Now, Limits: l, Static: site, Docs: site.Docs(),
		Features: []api.Feature{account.Feature(nil, account.Config{})}}) // GET /api/v1/auth/me, which needs a caller
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return srv, decisions
}

type response struct {
	code   int
	header http.Header
	body   string
}

func fetch(t *testing.T, method, url string, headers ...string) response {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Add(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return response{res.StatusCode, res.Header, string(b)}
}

// isEnvelope reports whether r is the API's JSON error envelope of code.
func isEnvelope(r response, status int, code string) bool {
	var env struct{ Code, Message string }
	return r.code == status && r.header.Get("Content-Type") == "application/json" &&
		json.Unmarshal([]byte(r.body), &env) == nil && env.Code == code && env.Message != ""
}

// A file or the spec fetched with an If-Match that names another version
// answers 412 in the error envelope (http.ServeContent's is an empty
// text/html); with its own ETag, or *, it is served.
func TestIfMatchIsAnEnvelope(t *testing.T) {
	srv, _ := server(t, build(t))
	for _, p := range []string{"/docs", "/", "/openapi.json"} {
		etag := fetch(t, "GET", srv.URL+p).header.Get("ETag")
		if r := fetch(t, "GET", srv.URL+p, `If-Match: "another"`); !isEnvelope(r, http.StatusPreconditionFailed, "precondition-failed") {
			t.Errorf("GET %s with another If-Match = %d %q %.80q, want the 412 envelope", p, r.code, r.header.Get("Content-Type"), r.body)
		}
		for _, im := range []string{etag, "*", `"another", ` + etag} {
			if r := fetch(t, "GET", srv.URL+p, "If-Match: "+im); r.code != 200 {
				t.Errorf("GET %s with If-Match: %s = %d, want 200", p, im, r.code)
			}
		}
	}
}

func TestServerKeepsTheAPIsPaths(t *testing.T) {
	srv, _ := server(t, build(t))
	// Unknown API paths, however spelled, and other methods stay the API's 404.
	for _, c := range []struct{ method, path string }{
		{"GET", "/api/unknown"}, {"GET", "/api/v1/nope"}, {"GET", "/api"}, {"HEAD", "/api/v1/nope"},
		{"GET", "/keys/../api/v1/nope"}, {"GET", "/api%2fv1%2fnope"}, {"POST", "/"}, {"DELETE", "/keys/42"},
	} {
		r := fetch(t, c.method, srv.URL+c.path)
		if c.method == "HEAD" {
			if r.code != 404 || r.header.Get("Content-Type") != "application/json" {
				t.Errorf("HEAD %s = %d %q, want the envelope's 404", c.path, r.code, r.header.Get("Content-Type"))
			}
			continue
		}
		if !isEnvelope(r, 404, "not-found") {
			t.Errorf("%s %s = %d %q %s, want the 404 envelope", c.method, c.path, r.code, r.header.Get("Content-Type"), r.body)
		}
	}
	// The spec is the API's, never the dashboard's.
	for _, p := range []string{"/openapi.json", "/openapi.yaml"} {
		r := fetch(t, "GET", srv.URL+p)
		if r.code != 200 || strings.Contains(r.body, `id="root"`) || !strings.Contains(r.body, "openapi") {
			t.Errorf("GET %s = %d, not the spec: %.80q", p, r.code, r.body)
		}
	}
	if r := fetch(t, "GET", srv.URL+"/api/v1/health"); r.code != 200 || !strings.Contains(r.body, `"ok"`) {
		t.Errorf("GET /api/v1/health = %d %s", r.code, r.body)
	}
	// /docs is the docs UI; its missing files are 404s, not the dashboard.
	if r := fetch(t, "GET", srv.URL+"/docs"); r.code != 200 || r.body != docsHTML {
		t.Errorf("GET /docs = %d %.80q, want the docs UI", r.code, r.body)
	}
	if r := fetch(t, "GET", srv.URL+"/docs/swagger-ui.css"); r.code != 200 || r.header.Get("Cache-Control") != "no-cache" {
		t.Errorf("GET /docs/swagger-ui.css = %d %q", r.code, r.header.Get("Cache-Control"))
	}
	// The dashboard, its fallback and HEAD, with the server's security headers.
	for _, c := range []struct{ method, path, cache string }{
		{"GET", "/", "no-cache"}, {"GET", "/keys/42", "no-cache"}, {"HEAD", "/keys/42", "no-cache"},
		{"GET", "/assets/index-abc123.js", "public, max-age=31536000, immutable"}, {"HEAD", "/assets/index-abc123.js", "public, max-age=31536000, immutable"},
	} {
		r := fetch(t, c.method, srv.URL+c.path)
		if r.code != 200 || r.header.Get("Cache-Control") != c.cache || (c.method == "HEAD") != (r.body == "") {
			t.Errorf("%s %s = %d %q, %d bytes", c.method, c.path, r.code, r.header.Get("Cache-Control"), len(r.body))
		}
		if r.header.Get("X-Content-Type-Options") != "nosniff" || r.header.Get("Content-Security-Policy") != web.CSP || r.header.Get("X-Request-Id") == "" {
			t.Errorf("%s %s lacks the security headers: %v", c.method, c.path, r.header)
		}
	}
	// The dashboard's and the docs UI's 404s are the API's envelope, as
	// every answer that is no success is (they were Go's text/plain "404
	// page not found").
	for _, p := range []string{"/..%2f..%2fetc/passwd", "/assets/../../go.mod", "/assets/missing.js", "/.gitkeep", "/favicon.ico", "/docs/x", "/docs/nope.js"} {
		if r := fetch(t, "GET", srv.URL+p); !isEnvelope(r, 404, "not-found") || r.header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s = %d %q %.80q, want the 404 envelope", p, r.code, r.header.Get("Content-Type"), r.body)
		}
	}
}

// The contract exempts the spec, /docs and static dashboard assets from
// every rate plane: a flood of them is never refused, asks no plane, and
// leaves an API caller's ip budget whole.
func TestStaticRequestsSpendNoBudget(t *testing.T) {
	srv, decisions := server(t, build(t))
	paths := []string{"/", "/keys/42", "/assets/index-abc123.js", "/favicon.svg", "/docs", "/docs/swagger-ui-bundle.js", "/openapi.json", "/openapi.yaml"}
	flood := func() {
		t.Helper()
		for i := range 200 {
			p := paths[i%len(paths)]
			r := fetch(t, "GET", srv.URL+p)
			if r.code != 200 {
				t.Fatalf("static request %d, GET %s = %d %s", i, p, r.code, r.body)
			}
			if r.header.Get("RateLimit") != "" || r.header.Get("RateLimit-Policy") != "" {
				t.Fatalf("GET %s carries rate-limit headers: %v", p, r.header)
			}
		}
	}
	flood()
	if n := decisions.Load(); n != 0 {
		t.Fatalf("200 static requests asked the planes %d times, want 0", n)
	}
	// The same address's anonymous API calls still find all 3 tokens...
	for i := range 3 {
		r := fetch(t, "GET", srv.URL+"/api/v1/auth/me")
		if !isEnvelope(r, 401, "unauthenticated") {
			t.Fatalf("anonymous call %d = %d %s, want 401 (the flood spent its budget?)", i+1, r.code, r.body)
		}
		if want := `"ip";r=` + string(rune('2'-i)); !strings.Contains(r.header.Get("RateLimit"), want) {
			t.Errorf("anonymous call %d: RateLimit %q, want %s", i+1, r.header.Get("RateLimit"), want)
		}
	}
	if r := fetch(t, "GET", srv.URL+"/api/v1/auth/me"); !isEnvelope(r, 429, "rate-limited") {
		t.Fatalf("the 4th anonymous call = %d %s, want 429", r.code, r.body)
	}
	// ...and an address the ip plane refuses still gets every static file.
	before := decisions.Load()
	flood()
	if n := decisions.Load() - before; n != 0 {
		t.Fatalf("static requests from a refused address asked the planes %d times", n)
	}
}

func TestServerWithoutABuild(t *testing.T) {
	srv, _ := server(t, fstest.MapFS{".gitkeep": {}})
	if r := fetch(t, "GET", srv.URL+"/"); r.code != 200 || !strings.Contains(r.body, "make web") {
		t.Errorf("GET / = %d %.80q, want the page saying how to build the dashboard", r.code, r.body)
	}
	// /docs is the page the api package renders, with every operation.
	if r := fetch(t, "GET", srv.URL+"/docs"); r.code != 200 || !strings.Contains(r.body, `id="op-get-health"`) {
		t.Errorf("GET /docs = %d %.80q, want the server-rendered reference", r.code, r.body)
	}
	if r := fetch(t, "GET", srv.URL+"/docs/swagger-ui.css"); !isEnvelope(r, 404, "not-found") {
		t.Errorf("GET /docs/swagger-ui.css = %d %.80q, want the 404 envelope", r.code, r.body)
	}
	if r := fetch(t, "GET", srv.URL+"/api/v1/health"); r.code != 200 {
		t.Errorf("GET /api/v1/health = %d", r.code)
	}
	if r := fetch(t, "GET", srv.URL+"/api/v1/nope"); !isEnvelope(r, 404, "not-found") {
		t.Errorf("GET /api/v1/nope = %d %s", r.code, r.body)
	}
}
