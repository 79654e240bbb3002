package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/brain-template/brain/api"
	"github.com/brain-template/brain/api/apitest"
	"github.com/brain-template/brain/auth"
	"github.com/brain-template/brain/auth/account"
	"github.com/brain-template/brain/store"
	"github.com/brain-template/brain/store/storetest"
	"github.com/brain-template/brain/streams"
	"github.com/danielgtaylor/huma/v2"
)

const secret = "hunter2-SECRET"

type echoInput struct {
	Body struct {
		Text string `json:"text" maxLength:"20"`
		Link string `json:"link,omitempty" format:"uri" maxLength:"100"`
		N    int    `json:"n,omitempty"`
	}
}

type echoOutput struct {
	Body struct {
		Text string `json:"text"`
	}
}

// cheap keeps password hashing fast in tests.
var cheap = auth.Argon2Params{Memory: 64, Time: 1, Threads: 1, KeyLen: 32, SaltLen: 16}

// MustAuth returns an auth service on a fresh SQLite database with the
// user ada (password "correct horse battery").
func MustAuth(tb testing.TB) *auth.Service {
	tb.Helper()
	db := storetest.Open(tb, store.SQLite)
	svc := auth.NewService(store.NewAuthStore(db), auth.Config{Argon2: cheap})
	if _, err := svc.AddUser(context.Background(), "ada", "correct horse battery"); err != nil {
		tb.Fatal(err)
	}
	return svc
}

// mustKey returns a new API key of ada's.
func mustKey(tb testing.TB, svc *auth.Service) string {
	tb.Helper()
	ctx := context.Background()
	_, _, u, err := svc.Login(ctx, "ada", "correct horse battery", "test")
	if err != nil {
		tb.Fatal(err)
	}
	_, key, err := svc.CreateAPIKey(ctx, u.ID, "test")
	if err != nil {
		tb.Fatal(err)
	}
	return key
}

// withKey sends every request with ada's API key.
func withKey(tb testing.TB, s *api.Server, svc *auth.Service) http.Handler {
	tb.Helper()
	key := mustKey(tb, svc)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Set("X-API-Key", key)
		s.ServeHTTP(w, r)
	})
}

// MustServer returns a server with test-only operations that reach each
// error path: a JSON body with a small limit, a panic and an internal
// error. Its handler sends ada's API key with every request; the server
// itself takes any request.
func MustServer(tb testing.TB, cfg api.Config) (http.Handler, *apitest.Logs) {
	if cfg.Auth == nil {
		cfg.Auth = MustAuth(tb)
	}
	s, logs := mustRawServer(tb, cfg)
	return withKey(tb, s, cfg.Auth), logs
}

func mustRawServer(tb testing.TB, cfg api.Config) (*api.Server, *apitest.Logs) {
	tb.Helper()
	logs := &apitest.Logs{}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	}
	if cfg.Auth == nil {
		cfg.Auth = MustAuth(tb)
	}
	s := api.New(withAccount(cfg))
	testOperations(s)
	return s, logs
}

// testOperations registers the operations that reach each error path: a
// JSON body with a small limit, a panic, a wrapped 404, a 500 and an
// internal error, each holding secret where it must never be answered.
func testOperations(s *api.Server) {
	huma.Register(s.API, huma.Operation{
		OperationID: "test-echo", Method: http.MethodPost, Path: "/api/v1/test/echo", MaxBodyBytes: 256,
	}, func(ctx context.Context, in *echoInput) (*echoOutput, error) {
		out := &echoOutput{}
		out.Body.Text = in.Body.Text
		return out, nil
	})
	huma.Register(s.API, huma.Operation{OperationID: "test-panic", Method: http.MethodGet, Path: "/api/v1/test/panic"},
		func(ctx context.Context, _ *struct{}) (*echoOutput, error) { panic("boom " + secret) })
	huma.Register(s.API, huma.Operation{OperationID: "test-wrapped-404", Method: http.MethodGet, Path: "/api/v1/test/wrapped"},
		func(ctx context.Context, _ *struct{}) (*echoOutput, error) {
			return nil, huma.Error404NotFound("no such thing", errors.New("sql: no rows for "+secret))
		})
	huma.Register(s.API, huma.Operation{OperationID: "test-500", Method: http.MethodGet, Path: "/api/v1/test/500"},
		func(ctx context.Context, _ *struct{}) (*echoOutput, error) {
			return nil, huma.Error500InternalServerError("db query failed", errors.New("cause "+secret))
		})
	huma.Register(s.API, huma.Operation{OperationID: "test-fail", Method: http.MethodGet, Path: "/api/v1/test/fail"},
		func(ctx context.Context, _ *struct{}) (*echoOutput, error) {
			return nil, errors.New("dial db: password " + secret)
		})
}

func do(tb testing.TB, h http.Handler, method, path, contentType, body string) *httptest.ResponseRecorder {
	tb.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestErrorEnvelope(t *testing.T) {
	s, logs := MustServer(t, api.Config{})
	big := `{"text":"` + strings.Repeat(secret, 30) + `"}`
	tests := []struct {
		name, method, path, ctype, body string
		status                          int
		code                            string
		location                        string // of details.errors[0], when there should be one
	}{
		{"unknown_route", "GET", "/api/v1/nope", "", "", 404, "not-found", ""},
		{"unknown_root", "GET", "/favicon.ico", "", "", 404, "not-found", ""},
		{"wrong_method", "DELETE", "/api/v1/health", "", "", 405, "method-not-allowed", ""},
		{"malformed_json", "POST", "/api/v1/test/echo", "application/json", `{"text": "` + secret, 400, "invalid-request", "body"},
		{"not_json_at_all", "POST", "/api/v1/test/echo", "application/json", secret, 400, "invalid-request", "body"},
		{"missing_body", "POST", "/api/v1/test/echo", "application/json", "", 400, "invalid-request", ""},
		{"too_large", "POST", "/api/v1/test/echo", "application/json", big, 413, "payload-too-large", ""},
		{"wrong_content_type", "POST", "/api/v1/test/echo", "text/plain", `{"text":"` + secret + `"}`, 415, "unsupported-media-type", ""},
		{"schema_violation", "POST", "/api/v1/test/echo", "application/json", `{"text":"` + strings.Repeat("x", 21) + `"}`, 422, "unprocessable", "body.text"},
		{"unknown_member", "POST", "/api/v1/test/echo", "application/json", `{"text":"a","` + secret + `":1}`, 422, "unprocessable", "body"},
		{"format_error_quotes_input", "POST", "/api/v1/test/echo", "application/json", `{"text":"a","link":"http://[` + secret + `"}`, 422, "unprocessable", "body.link"},
		{"number_too_big", "POST", "/api/v1/test/echo", "application/json", `{"text":"a","n":1e30}`, 422, "unprocessable", "body"},
		{"wrapped_cause", "GET", "/api/v1/test/wrapped", "", "", 404, "not-found", ""},
		{"long_unknown_path", "GET", "/api/v1/" + strings.Repeat(secret, 300), "", "", 404, "not-found", ""},
		{"panic", "GET", "/api/v1/test/panic", "", "", 500, "internal", ""},
		{"handler_500", "GET", "/api/v1/test/500", "", "", 500, "internal", ""},
		{"internal_error", "GET", "/api/v1/test/fail", "", "", 500, "internal", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := do(t, s, tc.method, tc.path, tc.ctype, tc.body)
			if rec.Code != tc.status {
				t.Fatalf("status = %d, want %d; body %s", rec.Code, tc.status, rec.Body)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q, want application/json", ct)
			}
			if rec.Header().Get("X-Request-Id") == "" {
				t.Error("no X-Request-Id header")
			}
			var env apitest.Envelope
			dec := json.NewDecoder(bytes.NewReader(rec.Body.Bytes()))
			dec.DisallowUnknownFields() // exactly {code, message, details}
			if err := dec.Decode(&env); err != nil {
				t.Fatalf("body is not the envelope: %v: %s", err, rec.Body)
			}
			if env.Code != tc.code || env.Message == "" {
				t.Errorf("code, message = %q, %q; want code %q and a message", env.Code, env.Message, tc.code)
			}
			if tc.location != "" && (len(env.Details.Errors) == 0 || env.Details.Errors[0].Location != tc.location) {
				t.Errorf("details.errors = %+v, want the first at %q", env.Details.Errors, tc.location)
			}
			// Nothing of a request may come back, not even the name of
			// an unknown member.
			body := rec.Body.String()
			if strings.Contains(body, secret) || strings.Contains(body, "hunter2") || strings.Contains(body, "Go ") || strings.Contains(body, "json:") {
				t.Errorf("the response echoes the request or an internal error: %s", rec.Body)
			}
		})
	}
	if !strings.Contains(logs.String(), "boom "+secret) || !strings.Contains(logs.String(), "dial db") || !strings.Contains(logs.String(), "db query failed") {
		t.Errorf("the panic and the internal error should be in the log with their causes:\n%s", logs)
	}
}

func TestErrorBounds(t *testing.T) {
	var members []string
	for i := range 300 {
		members = append(members, `"`+strings.Repeat("m", 500)+strconv.Itoa(i)+`":1`)
	}
	svc := MustAuth(t)
	s, _ := mustRawServer(t, api.Config{Auth: svc})
	huma.Register(s.API, huma.Operation{OperationID: "test-big", Method: http.MethodPost, Path: "/api/v1/test/big", MaxBodyBytes: 1 << 20},
		func(ctx context.Context, in *echoInput) (*echoOutput, error) { return nil, nil })
	rec := do(t, withKey(t, s, svc), "POST", "/api/v1/test/big", "application/json", `{"text":"a",`+strings.Join(members, ",")+`}`)
	var env apitest.Envelope
	if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil || rec.Code != 422 {
		t.Fatalf("%d %v", rec.Code, err)
	}
	if len(env.Details.Errors) > 100 {
		t.Errorf("details.errors has %d items; the schema allows 100", len(env.Details.Errors))
	}
	for _, e := range env.Details.Errors {
		if len(e.Location) > 256 || len(e.Message) > 1024 {
			t.Fatalf("a detail breaks the schema's bounds: %d-byte location", len(e.Location))
		}
	}
}

func TestHead(t *testing.T) {
	s, _ := MustServer(t, api.Config{})
	for _, path := range []string{"/api/v1/health", "/openapi.json", "/docs"} {
		rec := do(t, s, "HEAD", path, "", "")
		if rec.Code != 200 {
			t.Errorf("HEAD %s = %d, want 200", path, rec.Code)
		}
	}
}

func TestMethodNotAllowedListsAllow(t *testing.T) {
	s, _ := MustServer(t, api.Config{})
	rec := do(t, s, "POST", "/api/v1/health", "application/json", "{}")
	if rec.Code != 405 || !strings.Contains(rec.Header().Get("Allow"), "GET") {
		t.Fatalf("status %d, Allow %q; want 405 with GET allowed", rec.Code, rec.Header().Get("Allow"))
	}
}

func TestPanicLogCarriesRequestID(t *testing.T) {
	s, logs := MustServer(t, api.Config{})
	req := httptest.NewRequest("GET", "/api/v1/test/panic", nil)
	req.Header.Set("X-Request-Id", "trace-42")
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Header().Get("X-Request-Id") != "trace-42" {
		t.Fatalf("X-Request-Id = %q, want the caller's trace-42", rec.Header().Get("X-Request-Id"))
	}
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "msg=panic") && strings.Contains(line, "request_id=trace-42") {
			return
		}
	}
	t.Fatalf("no panic log line with request_id=trace-42:\n%s", logs)
}

func TestRequestID(t *testing.T) {
	s, _ := MustServer(t, api.Config{})
	tests := []struct {
		name, in string
		keep     bool
	}{
		{"kept", "abc-123_x.y", true},
		{"absent", "", false},
		{"too_long", strings.Repeat("a", 65), false},
		{"bad_chars", "a b<script>", false},
	}
	seen := map[string]bool{}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest("GET", "/api/v1/health", nil)
			if tc.in != "" {
				req.Header.Set("X-Request-Id", tc.in)
			}
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, req)
			got := rec.Header().Get("X-Request-Id")
			if tc.keep && got != tc.in {
				t.Fatalf("X-Request-Id = %q, want %q kept", got, tc.in)
			}
			if !tc.keep && (got == tc.in || len(got) != 16 || seen[got]) {
				t.Fatalf("X-Request-Id = %q, want a fresh 16-hex id", got)
			}
			seen[got] = true
		})
	}
}

func TestAccessLog(t *testing.T) {
	s, logs := MustServer(t, api.Config{})
	rec := do(t, s, "GET", "/api/v1/health", "", "")
	id := rec.Header().Get("X-Request-Id")
	var line string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "msg=request") {
			line = l
		}
	}
	for _, want := range []string{"request_id=" + id, "method=GET", "route=/api/v1/health", "status=200", "duration="} {
		if !strings.Contains(line, want) {
			t.Errorf("access log line %q lacks %q", line, want)
		}
	}
	do(t, s, "GET", "/api/v1/nope/123", "", "")
	if !strings.Contains(logs.String(), "route=- status=404") {
		t.Errorf("an unmatched request should log route=- and its 404:\n%s", logs)
	}
}

func TestHealth(t *testing.T) {
	s, _ := MustServer(t, api.Config{BuildVersion: "v9.9.9"})
	rec := do(t, s, "GET", "/api/v1/health", "", "")
	if rec.Code != 200 || rec.Body.String() != `{"status":"ok","version":"v9.9.9"}`+"\n" {
		t.Fatalf("health = %d %s", rec.Code, rec.Body)
	}
}

func TestReady(t *testing.T) {
	var down error
	s, logs := MustServer(t, api.Config{Ready: []api.Check{
		{Name: "memory", Check: func(context.Context) error { return nil }},
		{Name: "database", Check: func(context.Context) error { return down }},
	}})
	t.Run("OK", func(t *testing.T) {
		rec := do(t, s, "GET", "/api/v1/ready", "", "")
		if rec.Code != 200 || rec.Body.String() != `{"status":"ready","checks":["memory","database"]}`+"\n" {
			t.Fatalf("ready = %d %s", rec.Code, rec.Body)
		}
	})
	t.Run("ErrStoreDown", func(t *testing.T) {
		down = errors.New("connect: password " + secret)
		rec := do(t, s, "GET", "/api/v1/ready", "", "")
		var env apitest.Envelope
		_ = json.Unmarshal(rec.Body.Bytes(), &env)
		if rec.Code != 503 || env.Code != "unavailable" || len(env.Details.Errors) != 1 || env.Details.Errors[0].Location != "checks.database" {
			t.Fatalf("ready = %d %s; want 503 unavailable naming checks.database", rec.Code, rec.Body)
		}
		if strings.Contains(rec.Body.String(), secret) || !strings.Contains(logs.String(), secret) {
			t.Fatalf("the cause belongs in the log, not the body: %s", rec.Body)
		}
	})
}

func TestSpecDeclaresErrors(t *testing.T) {
	s, _ := mustRawServer(t, api.Config{})
	ops := s.API.OpenAPI().Paths
	tests := []struct {
		path, method string
		want         []string
	}{
		{"/api/v1/test/echo", "post", []string{"400", "401", "403", "413", "415", "422", "500"}},
		{"/api/v1/health", "get", []string{"500"}},
		{"/api/v1/auth/login", "post", []string{"400", "401", "413", "415", "422", "500", "503"}},
		{"/api/v1/apikeys", "get", []string{"401", "403", "500"}},
		{"/api/v1/ready", "get", []string{"500", "503"}},
	}
	for _, tc := range tests {
		op := ops[tc.path].Get
		if tc.method == "post" {
			op = ops[tc.path].Post
		}
		if _, ok := op.Responses["default"]; ok {
			t.Errorf("%s %s documents a catch-all default response", tc.method, tc.path)
		}
		for _, status := range tc.want {
			r := op.Responses[status]
			if r != nil && r.Ref != "" {
				r = s.API.OpenAPI().Components.Responses[strings.TrimPrefix(r.Ref, "#/components/responses/")]
			}
			if r == nil || r.Content["application/json"] == nil || r.Content["application/json"].Schema.Ref != "#/components/schemas/Error" {
				t.Errorf("%s %s: response %s is not the envelope: %+v", tc.method, tc.path, status, r)
			}
		}
	}
}

func TestSpecDeclaresRateLimited(t *testing.T) {
	s, _ := mustRawServer(t, api.Config{})
	ops := s.API.OpenAPI().Paths
	if r := ops["/api/v1/auth/me"].Get.Responses["429"]; r == nil || r.Ref != "#/components/responses/RateLimited" {
		t.Fatalf("get-me's 429 = %+v, want the shared RateLimited response", r)
	}
	// Login's back-off refuses before any budget is charged: its 429 may
	// lack the budget headers, and says so.
	if r := ops["/api/v1/auth/login"].Post.Responses["429"]; r == nil || r.Ref != "#/components/responses/RateLimitedOrBackedOff" {
		t.Fatalf("login's 429 = %+v, want the shared RateLimitedOrBackedOff response", r)
	}
	c := s.API.OpenAPI().Components.Responses["RateLimitedOrBackedOff"]
	if c == nil || c.Headers["Retry-After"] == nil || c.Headers["RateLimit"] == nil || c.Headers["RateLimit"].Required {
		t.Fatalf("RateLimitedOrBackedOff = %+v: want Retry-After and optional rate-limit headers", c)
	}
	if r := ops["/api/v1/health"].Get.Responses["429"]; r != nil {
		t.Fatal("the health probe is exempt: it must not declare 429")
	}
}

func TestSpecDeterministic(t *testing.T) {
	a, err := api.New(api.Config{Logger: slog.New(slog.DiscardHandler), Features: documented()}).Spec()
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		b, _ := api.New(api.Config{Logger: slog.New(slog.DiscardHandler), Features: documented()}).Spec()
		if !bytes.Equal(a, b) {
			t.Fatal("two servers built alike give different specs")
		}
	}
	if !bytes.HasSuffix(a, []byte("}\n")) || !bytes.HasPrefix(a, []byte("{\n  \"")) {
		t.Fatalf("spec is not two-space indented with a trailing newline: %q...", a[:20])
	}
	var doc struct{ OpenAPI string }
	if err := json.Unmarshal(a, &doc); err != nil || doc.OpenAPI != "3.1.0" {
		t.Fatalf("openapi = %q, %v; want 3.1.0", doc.OpenAPI, err)
	}
}

func TestServedSpec(t *testing.T) {
	s := api.New(api.Config{Logger: slog.New(slog.DiscardHandler), Features: documented()})
	want, _ := s.Spec()
	rec := do(t, s, "GET", "/openapi.json", "", "")
	if rec.Code != 200 || !bytes.Equal(rec.Body.Bytes(), want) {
		t.Fatalf("/openapi.json = %d, and differs from Spec()", rec.Code)
	}
	rec = do(t, s, "GET", "/openapi.yaml", "", "")
	if rec.Code != 200 || !strings.HasPrefix(rec.Body.String(), "components:") || !strings.Contains(rec.Body.String(), "openapi: 3.1.0") {
		t.Fatalf("/openapi.yaml = %d %.80s", rec.Code, rec.Body)
	}
}

func TestDocsWorkOffline(t *testing.T) {
	s, _ := MustServer(t, api.Config{})
	rec := do(t, s, "GET", "/docs", "", "")
	if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/html") {
		t.Fatalf("/docs = %d %s", rec.Code, rec.Header().Get("Content-Type"))
	}
	page := rec.Body.String()
	for _, want := range []string{`id="op-get-health"`, `id="op-test-echo"`, "/api/v1/ready", `id="schema-Error"`, `<a href="#schema-Error">`} {
		if !strings.Contains(page, want) {
			t.Errorf("/docs lacks %q", want)
		}
	}
	// Nothing that loads: no script, stylesheet, image or frame, and no CSS
	// that fetches. (A URL in the text, such as an example's, loads nothing.)
	for _, banned := range []string{"<script", "<link", "<img", "<iframe", "<object", "<embed", " src=", "srcset=", "url(", "@import"} {
		if strings.Contains(strings.ToLower(page), banned) {
			t.Errorf("/docs contains %q: it must not load anything from elsewhere", banned)
		}
	}
}

// documented are the features the spec tests add to the platform: the
// account operations, as brain documents them (on no service), and the
// stream plane (package streams), which every brain serves; each other
// feature's tests check its own operations.
func documented() []api.Feature {
	p := streams.New(streams.Config{})
	return []api.Feature{account.Feature(nil, account.Config{Hub: p.Hub()}), p.Feature}
}

// withAccount is cfg with the account operations on cfg.Auth first among
// its features, as brain serves them: the tests log in, change passwords
// and manage keys through them.
func withAccount(cfg api.Config) api.Config {
	cfg.Features = append([]api.Feature{account.Feature(cfg.Auth, account.Config{})}, cfg.Features...)
	return cfg
}
