package api_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/brain-template/brain/api"
	"github.com/danielgtaylor/huma/v2"
)

// TestErrorsCarryNoSniff checks X-Content-Type-Options: nosniff on errors
// from every writer: the router, huma (400, 413, 415, 422, 500),
// requireCaller (401, 403, 503) and the recoverer.
func TestErrorsCarryNoSniff(t *testing.T) {
	svc := MustAuth(t)
	s, _ := mustRawServer(t, api.Config{Auth: svc})
	srv := httptest.NewServer(s)
	defer srv.Close()
	key := mustKey(t, svc)
	down, st := mustDownStore(t)
	st.set(errors.New("connection refused"))
	sDown, _ := mustRawServer(t, api.Config{Auth: down})
	srvDown := httptest.NewServer(sDown)
	defer srvDown.Close()

	for _, tc := range []struct {
		name, base, method, path, ctype, body string
		withKey                               bool
		status                                int
	}{
		{"router_404", srv.URL, "GET", "/api/v1/nope", "", "", false, 404},
		{"router_405", srv.URL, "DELETE", "/api/v1/health", "", "", false, 405},
		{"huma_400", srv.URL, "POST", "/api/v1/auth/login", "application/json", `{"username":`, false, 400},
		{"huma_413", srv.URL, "POST", "/api/v1/auth/login", "application/json", `{"username":"` + strings.Repeat("a", 40<<10) + `"}`, false, 413},
		{"huma_415", srv.URL, "POST", "/api/v1/auth/login", "text/html", `{}`, false, 415},
		{"huma_422", srv.URL, "POST", "/api/v1/auth/login", "application/json", `{"username":""}`, false, 422},
		{"huma_500", srv.URL, "GET", "/api/v1/test/fail", "", "", true, 500},
		{"panic_500", srv.URL, "GET", "/api/v1/test/panic", "", "", true, 500},
		{"caller_401", srv.URL, "GET", "/api/v1/auth/me", "", "", false, 401},
		{"caller_403", srv.URL, "GET", "/api/v1/apikeys", "", "", true, 403},
		{"caller_503", srvDown.URL, "GET", "/api/v1/auth/me", "", "", true, 503},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, tc.base+tc.path, strings.NewReader(tc.body))
			if tc.ctype != "" {
				req.Header.Set("Content-Type", tc.ctype)
			}
			if tc.withKey {
				req.Header.Set("X-API-Key", key)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
			if got := resp.Header.Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("X-Content-Type-Options = %q, want nosniff", got)
			}
			if got := resp.Header.Get("Content-Type"); got != "application/json" {
				t.Errorf("Content-Type = %q, want application/json", got)
			}
		})
	}
}

// TestSecretsAreNotStored checks Cache-Control: no-store on the two
// responses that carry a secret (the session cookie, a new API key), and
// that the spec declares it.
func TestSecretsAreNotStored(t *testing.T) {
	s, _ := mustRawServer(t, api.Config{})
	srv := httptest.NewServer(s)
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/api/v1/auth/login", "application/json", strings.NewReader(`{"username":"ada","password":"correct horse battery"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || len(resp.Cookies()) == 0 || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("login: %d, cookies %v, Cache-Control %q; want 200, the session and no-store", resp.StatusCode, resp.Cookies(), resp.Header.Get("Cache-Control"))
	}
	req, _ := http.NewRequest("POST", srv.URL+"/api/v1/apikeys", strings.NewReader(`{"name":"laptop"}`))
	req.Header.Set("Content-Type", "application/json")
	req.AddCookie(resp.Cookies()[0])
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 201 || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("create API key: %d, Cache-Control %q; want 201 and no-store", resp.StatusCode, resp.Header.Get("Cache-Control"))
	}

	oapi := s.API.OpenAPI()
	for path, status := range map[string]string{"/api/v1/auth/login": "200", "/api/v1/apikeys": "201"} {
		h := oapi.Paths[path].Post.Responses[status].Headers["Cache-Control"]
		if h != nil && h.Ref != "" {
			h = oapi.Components.Headers[strings.TrimPrefix(h.Ref, "#/components/headers/")]
		}
		if h == nil || h.Schema == nil || len(h.Schema.Enum) != 1 || h.Schema.Enum[0] != "no-store" {
			t.Errorf("POST %s: the spec does not declare Cache-Control: no-store on %s", path, status)
		}
	}
}

// Every answer to an authenticated request carries Cache-Control:
// no-store, whatever its status, its caller (a session, an API key) or
// its operation (a stream too), so no cache keeps a user's data; and the
// spec declares it, required, on every success of every operation that
// needs a caller. An answer that authenticated nobody (a public
// operation, a 401) is not marked.
func TestAuthenticatedAnswersAreNotStored(t *testing.T) {
	s, l, svc := streamServer(t, api.Config{})
	ada, key := l.Login("ada", "correct horse battery").Cookie(t), "X-API-Key: "+mustKey(t, svc)
	for _, c := range []struct {
		method, path, caller string
		status               int
	}{
		{"GET", "/api/v1/auth/me", ada, 200},
		{"GET", "/api/v1/auth/me", key, 200},
		{"GET", "/api/v1/apikeys", ada, 200},
		{"GET", "/api/v1/apikeys?limit=0", ada, 422},
		{"DELETE", "/api/v1/apikeys/00000000000000000000000000000000", ada, 404},
		{"GET", "/api/v1/apikeys", key, 403},
	} {
		r := l.Call(c.method, c.path, nil, c.caller)
		if r.Status != c.status || r.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("%s %s: %d Cache-Control %q, want %d and no-store", c.method, c.path, r.Status, r.Header.Get("Cache-Control"), c.status)
		}
	}
	for _, caller := range []string{ada, key} {
		st, r := l.OpenStream("/api/v1/events", caller)
		if st == nil || r.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("GET /api/v1/events: %d Cache-Control %q, want a stream and no-store", r.Status, r.Header.Get("Cache-Control"))
		}
	}
	for _, path := range []string{"/api/v1/health", "/api/v1/auth/me"} {
		if r := l.Call("GET", path, nil); r.Header.Get("Cache-Control") == "no-store" {
			t.Errorf("GET %s without credentials: %d Cache-Control: no-store; nobody's data is in it", path, r.Status)
		}
	}

	oapi := s.API.OpenAPI()
	n := 0
	for path, item := range oapi.Paths {
		for _, op := range []*huma.Operation{item.Get, item.Head, item.Post, item.Put, item.Patch, item.Delete} {
			if op == nil || len(op.Security) == 0 {
				continue
			}
			for status, res := range op.Responses {
				if status[0] != '2' {
					continue
				}
				n++
				ref := res.Headers["Cache-Control"]
				if h := oapi.Components.Headers["Cache-Control"]; ref == nil || ref.Ref != "#/components/headers/Cache-Control" || !h.Required || h.Schema.Enum[0] != "no-store" {
					t.Errorf("%s %s %s does not declare Cache-Control: no-store, required", op.Method, path, status)
				}
			}
		}
	}
	if n < 8 {
		t.Fatalf("only %d successes of operations that need a caller", n)
	}
}
