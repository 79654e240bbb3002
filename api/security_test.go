package api_test

import (
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/brain-template/brain/api"
	"github.com/danielgtaylor/huma/v2"
)

func TestCORS(t *testing.T) {
	s, _ := mustRawServer(t, api.Config{CORSOrigins: []string{"https://app.example.com"}})
	preflight := func(origin string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("OPTIONS", "/api/v1/apikeys", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "content-type")
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		return rec
	}
	ok := preflight("https://app.example.com")
	if ok.Code >= 300 || ok.Header().Get("Access-Control-Allow-Origin") != "https://app.example.com" ||
		ok.Header().Get("Access-Control-Allow-Credentials") != "true" || !strings.Contains(ok.Header().Get("Access-Control-Allow-Methods"), "POST") {
		t.Fatalf("preflight from a listed origin: %d %v", ok.Code, ok.Header())
	}
	if bad := preflight("https://evil.example"); bad.Header().Get("Access-Control-Allow-Origin") != "" || bad.Header().Get("Access-Control-Allow-Credentials") != "" {
		t.Fatalf("preflight from an unlisted origin was allowed: %v", bad.Header())
	}
	req := httptest.NewRequest("GET", "/api/v1/health", nil)
	req.Header.Set("Origin", "https://app.example.com")
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	exposed := rec.Header().Get("Access-Control-Expose-Headers")
	for _, h := range []string{"Retry-After", "Ratelimit", "Ratelimit-Policy", "X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset", "X-Request-Id"} {
		if !strings.Contains(strings.ToLower(exposed), strings.ToLower(h)) {
			t.Errorf("Access-Control-Expose-Headers %q lacks %s", exposed, h)
		}
	}
	// Without configured origins nothing is allowed cross-origin.
	s2, _ := mustRawServer(t, api.Config{})
	req = httptest.NewRequest("GET", "/api/v1/health", nil)
	req.Header.Set("Origin", "https://app.example.com")
	rec = httptest.NewRecorder()
	s2.ServeHTTP(rec, req)
	if rec.Header().Get("Access-Control-Allow-Origin") != "" {
		t.Fatal("CORS allowed an origin nobody configured")
	}
}

func TestSpecSecurity(t *testing.T) {
	s, _ := mustRawServer(t, api.Config{})
	spec, _ := s.Spec()
	var doc struct {
		Components struct {
			SecuritySchemes map[string]map[string]string `json:"securitySchemes"`
		}
		Paths map[string]map[string]struct {
			Security []map[string][]string `json:"security"`
		}
	}
	if err := json.Unmarshal(spec, &doc); err != nil {
		t.Fatal(err)
	}
	ss := doc.Components.SecuritySchemes
	if ss["session"]["in"] != "cookie" || ss["session"]["name"] != "brain_session" || ss["bearer"]["scheme"] != "bearer" || ss["apiKey"]["name"] != "X-API-Key" {
		t.Fatalf("security schemes = %v", ss)
	}
	sec := func(path, method string) []map[string][]string {
		op, ok := doc.Paths[path][method]
		if !ok {
			t.Fatalf("no %s %s", method, path)
		}
		if op.Security == nil {
			t.Fatalf("%s %s declares no security at all", method, path)
		}
		return op.Security
	}
	if len(sec("/api/v1/auth/login", "post")) != 0 || len(sec("/api/v1/health", "get")) != 0 {
		t.Error("public operations must declare security: []")
	}
	if got := sec("/api/v1/apikeys", "post"); len(got) != 1 || got[0]["session"] == nil {
		t.Errorf("key management must accept only the session: %v", got)
	}
	if got := sec("/api/v1/auth/me", "get"); len(got) != 3 {
		t.Errorf("me must accept session, bearer and apiKey: %v", got)
	}
}

// Every operation of the server declares who may call it, where it is
// registered (api.WithAccess); none relies on the fail-closed default.
func TestEveryOperationDeclaresAccess(t *testing.T) {
	s := api.New(api.Config{Logger: slog.New(slog.DiscardHandler), Features: documented()})
	n := 0
	for path, item := range s.API.OpenAPI().Paths {
		for _, op := range []*huma.Operation{item.Get, item.Post, item.Put, item.Patch, item.Delete} {
			if op == nil {
				continue
			}
			n++
			if api.DeclarationOf(op).Access == "" {
				t.Errorf("%s %s (%s) declares no access: register it on api.WithAccess(api, ...)", op.Method, path, op.OperationID)
			}
		}
	}
	if n < 9 {
		t.Fatalf("walked %d operations", n)
	}
}
